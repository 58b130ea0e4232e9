"""`gradviz info`: placeholder until its issue lands."""

from __future__ import annotations

import click


@click.command()
def info() -> None:
    """Not implemented yet."""
    raise click.ClickException("'gradviz info' is not implemented yet")
