"""`gradviz replay`: placeholder until its issue lands."""

from __future__ import annotations

import click


@click.command()
def replay() -> None:
    """Not implemented yet."""
    raise click.ClickException("'gradviz replay' is not implemented yet")
