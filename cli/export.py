"""`gradviz export`: a trace as a Chrome trace event file for Perfetto or chrome://tracing."""

from __future__ import annotations

import os

import click

from gradviz.cli import ranks  # ddp
from gradviz.cli._common import load_trace


def _default_output(trace_path: str) -> str:
    base = os.path.basename(trace_path)
    for suffix in (".trace.json", ".json"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return base + ".perfetto.json"


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False))
@click.argument("more", nargs=-1, metavar="[TRACE]...", type=click.Path(dir_okay=False))  # ddp: rank traces
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="FILE",
              help="Where to write, missing folders created (default: TRACE's name with .perfetto.json, "
              "in the current folder).")
@click.option("--format", "fmt", type=click.Choice(["chrome"]), default="chrome", show_default=True,
              help="Output format: the Chrome trace event JSON that Perfetto and chrome://tracing open.")
def export(trace_path: str, more: tuple[str, ...], output: str | None, fmt: str) -> None:
    """Export TRACE for Perfetto (ui.perfetto.dev) or chrome://tracing: one track per thread with
    node spans, ready-queue depth and outstanding-task counters, and gradient flow arrows.

    \b
      gradviz export run.trace.json -o run.perfetto.json
    """
    paths = ranks.paths_of(trace_path, more)  # ddp: a job's ranks: one process each
    if len(paths) > 1:
        return ranks.export(paths, output)
    trace_path = paths[0]
    from gradviz.replay.export import write_chrome_trace

    trace = load_trace(trace_path)
    target = output or _default_output(trace_path)
    try:
        n = write_chrome_trace(trace, target)
    except OSError as e:
        raise click.ClickException(f"{target}: {e.strerror or e}") from None
    click.echo(f"wrote {target} ({n} trace events, {fmt} format): open it at https://ui.perfetto.dev")
