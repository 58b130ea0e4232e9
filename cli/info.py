"""`gradviz info`: a summary of a trace (the data comes from gradviz.trace.summary)."""

from __future__ import annotations

import json
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gradviz.cli import ranks  # ddp
from gradviz.cli._common import load_trace
from gradviz.replay.phrases import Phrases


def _ms(ns: int | None) -> str:
    if ns is None:
        return "-"
    if ns < 1_000_000:
        return f"{ns / 1000:.1f} µs"
    return f"{ns / 1e6:,.2f} ms"


HEAD_TASKS = TAIL_TASKS = 5  # tasks listed at each end of a long run (every failing task is listed too)


def _tasks_to_show(tasks: list[Any]) -> list[Any]:
    """The first and last few tasks and every one that did not end ok, in order, with the number
    of tasks left out (an int) in each gap."""
    if len(tasks) <= HEAD_TASKS + TAIL_TASKS + 2:
        return list(tasks)
    shown: list[Any] = []
    for i, t in enumerate(tasks):
        if i < HEAD_TASKS or i >= len(tasks) - TAIL_TASKS or t.status != "ok":
            shown.append(t)
        elif shown and isinstance(shown[-1], int):
            shown[-1] += 1
        else:
            shown.append(1)
    return shown


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False))
@click.argument("more", nargs=-1, metavar="[TRACE]...", type=click.Path(dir_okay=False))  # ddp: rank traces
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON instead of tables.")
def info(trace_path: str, more: tuple[str, ...], as_json: bool) -> None:
    """Summarise a trace: tasks, graph, threads, events by kind, errors.

    \b
      gradviz info run.trace.json
      gradviz info run.trace.json --json | jq .tasks
    """
    paths = ranks.paths_of(trace_path, more)  # ddp: several traces (a job's ranks, or a glob)
    if len(paths) > 1:
        return ranks.info(paths, as_json)
    trace_path = paths[0]
    from gradviz.trace import provenance  # torchrec: which engine, which events were derived
    from gradviz.trace.summary import summarize

    trace = load_trace(trace_path, lazy=True)  # counts and the rare kinds: no object an event
    s = summarize(trace)
    if as_json:
        extra = {"provenance": provenance.counts(trace)} if provenance.engine(trace)[0] == "torch" else {}
        click.echo(json.dumps({**s.to_dict(), **extra}, indent=2))
        return
    import sys

    # Recorded text is never markup: an error message "cannot read [/data/x.csv]" prints as it
    # reads (markup=False; the styles below are Text spans). Piped output keeps whole rows
    # rather than the 80-column default.
    con = Console(highlight=False, markup=False, emoji=False, **({} if sys.stdout.isatty() else {"width": 120}))
    con.print(Text.assemble((trace_path, "bold"), f"  gradviz trace format {s.format_version}, "
                            f"written by gradviz {s.gradviz_version}"))
    status_style = {"ok": "green", "error": "red", "interrupted": "yellow"}.get(s.status, "yellow")
    con.print(f"program: {' '.join(s.argv) or '-'}")
    con.print(Text.assemble(
        "status: ", (s.status, status_style), f" ({s.error})" if s.error else "",
        f"   duration: {_ms(s.duration_ns)}   events: {s.events:,}",
    ))
    con.print(provenance.summary_line(trace))
    if s.truncated:
        con.print("warning: the trace is incomplete (the recording was cut short)", style="yellow")

    tasks = Table(title="Graph tasks", box=box.SIMPLE, title_justify="left")
    numeric = ("task", "depth", "nodes run", "duration")
    for col in ("task", "status", "thread", "depth", "roots", "nodes run", "duration", "error"):
        tasks.add_column(col, justify="right" if col in numeric else "left")
    for t in _tasks_to_show(s.tasks):
        if isinstance(t, int):
            tasks.add_row("…", f"{t:,} more (--json for all)", *[""] * 6)
            continue
        st = {"ok": "green", "error": "red"}.get(t.status, "yellow")
        tasks.add_row(
            str(t.id), Text(t.status, style=st), t.thread, str(t.reentrant_depth), ", ".join(t.roots),
            str(t.nodes_run), _ms(t.duration_ns), t.error or "",
        )
    if s.tasks:
        con.print(tasks)
    else:
        con.print("no graph tasks (no backward ran while recording)")

    # wrapped between phrases: "MmBackward0 x40" stays whole on a line
    names = [f"{name} x{n}" for name, n in list(s.nodes_by_name.items())[:6]]
    if len(s.nodes_by_name) > 6:
        names.append("...")
    names = [f"({names[0]}", *names[1:]] if names else []
    con.print(Phrases([
        f"graph: {s.nodes:,} nodes", *(n + "," for n in names[:-1]), *(n + ")," for n in names[-1:]),
        f"{s.edges:,} edges,", f"{s.tensors:,} leaf tensors,", f"{s.queues} ready queues",
    ], indent="  "))

    threads = Table(title="Threads", box=box.SIMPLE, title_justify="left")
    for col in ("tid", "name", "role", "device", "events"):
        threads.add_column(col, justify="right" if col in ("tid", "events") else "left")
    for th in s.threads:
        threads.add_row(str(th.tid), th.name, th.role, th.device or "", f"{th.events:,}")
    con.print(threads)

    kinds = Table(title="Events by kind", box=box.SIMPLE, title_justify="left")
    kinds.add_column("kind")
    kinds.add_column("count", justify="right")
    for kind, n in s.events_by_kind.items():
        kinds.add_row(kind, f"{n:,}")
    con.print(kinds)

    for title, items in (("Errors", s.errors), ("Anomalies", s.anomalies)):
        if items:
            con.print(title, style="bold red")
            for e in items:
                where = f"task {e.task}" if e.task is not None else "program"
                node = f", {e.node}" if e.node else ""
                # whole lines, wrapped by the terminal if at all: rich would cut them mid-phrase
                con.print(f"  event #{e.seq} ({where}{node}; replay --step {e.seq + 1}): {e.type}: {e.message}",
                          soft_wrap=True)
                context = e.context()
                if context:  # the forward line that made the node, and what reached it
                    con.print(f"    {context}", style="dim", soft_wrap=True)
