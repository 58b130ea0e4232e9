"""What every command shares: one-line errors and did-you-mean suggestions."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from gradviz.trace.model import Trace


class InputError(click.ClickException):
    """A missing or unreadable input file named on the command line: a usage mistake (exit 2),
    said in one line without the usage hint."""

    exit_code = 2


def step_out_of_range(step: int, total: int) -> click.BadParameter:
    """The one message for a --step outside the trace, with its real bounds."""
    return click.BadParameter(f"{step} is out of range: the trace has {total:,} events (0..{total})",
                              param_hint="--step")


class SuggestingGroup(click.Group):
    """A group that answers an unknown command with the closest known ones, and every mistake
    in one line: "Error: ..." on stderr, exit 2 for usage, 1 for everything else."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        import sys

        _safe_streams()
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except (click.exceptions.Abort, KeyboardInterrupt) as e:
            # Ctrl-C (click turns it into Abort): the shell's convention, 128 + SIGINT
            interrupted = isinstance(e, KeyboardInterrupt) or isinstance(e.__cause__, KeyboardInterrupt)
            click.echo("Aborted!", err=True)
            sys.exit(130 if interrupted else 1)
        except click.exceptions.NoArgsIsHelpError as e:  # `gradviz` alone: its help, no "Error:"
            click.echo(e.format_message())
            sys.exit(0)
        except click.ClickException as e:
            hint = ""
            if isinstance(e, click.UsageError) and e.ctx is not None:
                hint = f" (see '{e.ctx.command_path} --help')"
            click.echo(f"Error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except OSError as e:  # stdout on a full device, a closed pipe: one line, not a traceback
            _quiet_stdout()
            if getattr(e, "errno", None) != 32:  # EPIPE: the reader left; nothing to tell it
                where = e.filename or "standard output"
                click.echo(f"Error: cannot write to {where}: {e.strerror or e}", err=True)
            sys.exit(1)
        code = rv if isinstance(rv, int) else 0
        try:
            sys.exit(code)
        except KeyboardInterrupt:  # Ctrl-C in the last instant: the command's code was decided
            sys.exit(code)

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        name = args[0] if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


def _safe_streams() -> None:
    """Text no encoder can write (a lone surrogate from a file name that was not UTF-8, in an
    argument or a trace) goes out as its escape (``\\udcff``) instead of ending the command with
    UnicodeEncodeError; so does text the terminal's encoding lacks (``∂`` under LANG=C)."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a TextIOWrapper (a test's capture)
            pass


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail a second time."""
    import os
    import sys

    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def _cut_header(path: str) -> str | None:
    """The message for a trace cut inside its first (header) line, which the loader can only call
    invalid JSON: the file starts as a gradviz trace does and its first line never ends."""
    import re

    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
    except OSError:
        return None
    if re.match(rb'\s*\{\s*"format"\s*:\s*"gradviz-trace"', data) and b"\n" not in data.lstrip():
        return f"{path}: a gradviz trace cut inside its header: nothing to recover"
    return None


def load_trace(path: str, *, lazy: bool = False, fold_to: int = 0, prefix: bool = False, then: Any = None,
               skip: frozenset[Any] = frozenset()) -> Trace:
    """Load a trace for a command: a bad or missing file becomes a one-line click error (exit 1),
    a file cut short loads with a one-line warning on stderr. ``lazy``: events made when read
    (``gradviz.load``'s), for commands that need counts or the events up to a step; ``fold_to``:
    the step the command folds to next, and ``prefix``: it needs nothing after that step
    (``gradviz.load``'s); ``then``: a reader of every line as it is checked, ``skip``: rare kinds it
    needs none of (``gradviz.load``'s)."""
    import warnings

    from gradviz.trace import TraceError, TraceWarning, load

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TraceWarning)
        try:
            trace = load(path, lazy=lazy, fold_to=fold_to, prefix=prefix, then=then, skip=skip)
        except TraceError as e:
            raise click.ClickException(_cut_header(path) or str(e)) from None
        except OSError as e:  # no such file, a folder, no permission
            raise InputError(f"{path}: {e.strerror or e}") from None
    for w in caught:
        if issubclass(w.category, TraceWarning):
            click.echo(f"warning: {w.message}", err=True)
        else:  # not ours: let it take its usual way out
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    # A command runs once over a trace whose million events hold no cycles: moved out of the
    # collector's sight, they are not walked again by every collection that render's graph
    # model or replay's fold sets off (a third of render --step's time on a 200k-node task).
    import gc

    gc.freeze()
    # And what the command builds from it (render's 200k-node model, replay's fold: objects by
    # the hundred thousand, few of them garbage, none in cycles worth chasing) set off a young
    # collection every 700 allocations, each also walking everything built so far that had
    # survived one: three quarters of render --step's model building. Collections run a hundred
    # times less often until the command ends (the thresholds are put back then).
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        before = gc.get_threshold()
        gc.set_threshold(GC_THRESHOLD, *before[1:])
        ctx.call_on_close(lambda: gc.set_threshold(*before))
    return trace


GC_THRESHOLD = 100_000  # allocations between young collections while a command reads a trace
