"""What every command shares: one-line errors and did-you-mean suggestions."""

from __future__ import annotations

import difflib

import click


class SuggestingGroup(click.Group):
    """A group that answers an unknown command with the closest known ones."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        name = args[0] if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)
