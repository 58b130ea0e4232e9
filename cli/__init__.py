"""The gradviz command line: a thin click adapter over the library.

One module per command; each parses arguments, calls the library and turns library errors into
one-line messages (``cli._common``). Nothing here that a library user would also want.
"""

from __future__ import annotations

import click

from gradviz import __version__
from gradviz.cli._common import SuggestingGroup
from gradviz.cli.diff import diff  # noqa: I001 - torchrec's command, kept apart for easy merging
from gradviz.cli.export import export
from gradviz.cli.info import info
from gradviz.cli.render import render
from gradviz.cli.replay import replay
from gradviz.cli.run import run
from gradviz.cli.why import why


@click.group(cls=SuggestingGroup, context_settings={"help_option_names": ["-h", "--help"]})
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


# One line each in `gradviz --help`, short enough for 80 columns (click cuts longer ones with "...").
SHORT_HELP = {
    "run": "Run a Python script and record what the engine does.",
    "info": "Summarise a trace: tasks, threads, events, errors.",
    "render": "Draw a backward pass's graph (svg, png, pdf, dot).",
    "replay": "Timeline, state at a step, or the interactive stepper.",
    "export": "Export a trace for Perfetto or chrome://tracing.",
    "why": "Why a .grad is None, a NaN, or an error.",
}

for _command in (run, info, render, replay, export, why):
    _command.short_help = SHORT_HELP[_command.name]
    main.add_command(_command)
main.add_command(diff)
