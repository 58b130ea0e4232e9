"""The gradviz command line: a thin click adapter over the library.

One module per command; each parses arguments, calls the library and turns library errors into
one-line messages (``cli._common``). Nothing here that a library user would also want.

A command's module is imported when the command runs (or ``--help`` lists it): ``gradviz --version``
imports none, and ``gradviz info`` only info's, not render's graph layer or run's recorder.
"""

from __future__ import annotations

import importlib

import click

from gradviz import __version__
from gradviz.cli._common import SuggestingGroup

# Each command: its module under gradviz.cli (the click command in it has the same name), and its line
# in `gradviz --help`, short enough for 80 columns (click cuts longer ones with "...").
COMMANDS = {
    "run": "Run a Python script and record what the engine does.",
    "info": "Summarise a trace: tasks, threads, events, errors.",
    "render": "Draw a backward pass's graph (svg, png, pdf, dot).",
    "replay": "Timeline, state at a step, or the interactive stepper.",
    "export": "Export a trace for Perfetto or chrome://tracing.",
    "view": "Write one HTML page to step through a trace in a browser.",
    "why": "Why a .grad is None, a NaN, or an error.",
    "diff": None,  # its own docstring's first line
}


class _Commands(SuggestingGroup):
    """The group, with each command imported from its module at first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        command = getattr(importlib.import_module(f"{__name__}.{name}"), name)
        if COMMANDS[name]:
            command.short_help = COMMANDS[name]
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gradviz")
def main() -> None:
    """gradviz: watch reverse-mode autodiff run, and debug it.

    \b
    Record a script, then look at what the engine did:
      gradviz run -o diamond.trace.json samples/diamond.py
      gradviz info diamond.trace.json
      gradviz render diamond.trace.json
      gradviz replay diamond.trace.json --step

    Step N means the state after the first N events; events are numbered from #0.
    """
