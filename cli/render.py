"""`gradviz render`: placeholder until its issue lands."""

from __future__ import annotations

import click


@click.command()
def render() -> None:
    """Not implemented yet."""
    raise click.ClickException("'gradviz render' is not implemented yet")
