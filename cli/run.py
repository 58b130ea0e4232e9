"""`gradviz run`: placeholder until its issue lands."""

from __future__ import annotations

import click


@click.command()
def run() -> None:
    """Not implemented yet."""
    raise click.ClickException("'gradviz run' is not implemented yet")
