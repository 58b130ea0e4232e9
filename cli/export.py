"""`gradviz export`: placeholder until its issue lands."""

from __future__ import annotations

import click


@click.command()
def export() -> None:
    """Not implemented yet."""
    raise click.ClickException("'gradviz export' is not implemented yet")
