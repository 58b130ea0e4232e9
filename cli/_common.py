"""What every command shares: one-line errors and did-you-mean suggestions."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from gradviz.trace.model import Trace


class SuggestingGroup(click.Group):
    """A group that answers an unknown command with the closest known ones."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        name = args[0] if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


def load_trace(path: str) -> Trace:
    """Load a trace for a command: a bad or missing file becomes a one-line click error (exit 1),
    a file cut short loads with a one-line warning on stderr."""
    import warnings

    from gradviz.trace import TraceError, TraceWarning, load

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TraceWarning)
        try:
            trace = load(path)
        except TraceError as e:
            raise click.ClickException(str(e)) from None
        except OSError as e:
            raise click.ClickException(f"{path}: {e.strerror or e}") from None
    for w in caught:
        if issubclass(w.category, TraceWarning):
            click.echo(f"warning: {w.message}", err=True)
        else:  # not ours: let it take its usual way out
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return trace
