"""`gradviz replay`: the run as a timeline, the state at one step, or the interactive stepper."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
from rich.console import Console

from gradviz.cli import ranks  # ddp
from gradviz.cli._common import load_trace, step_out_of_range
from gradviz.render import describe_ids

STEPPER = -1  # what a bare --step means: open the interactive stepper


def make_console(width: int | None, *, interactive: bool = False) -> Console:
    """A console for stdout: the terminal's when it is one; else fixed width and no colour.
    Recorded text is never markup (markup=False): a message "cannot read [/data/x.csv]" prints
    as it reads."""
    if sys.stdout.isatty() and not os.environ.get("GRADVIZ_PLAIN"):
        return Console(width=width, markup=False, emoji=False)
    return Console(
        file=sys.stdout, width=width or 100, color_system=None, force_terminal=False, no_color=True,
        highlight=False, emoji=False, soft_wrap=False, markup=False,
    )


def resolve_node(trace: Any, spec: str) -> int:
    """A node id, or a node name (``MulBackward0``, or ``MulBackward0#2`` for the second one)."""
    if spec.isdigit():
        node = int(spec)
        if node not in trace.nodes:
            raise click.BadParameter(f"no node with id {node} in the trace", param_hint="--at")
        return node
    name, _, nth = spec.partition("#")
    matches = [n for n, info in trace.nodes.items() if info.name == name]
    if not matches:
        close = sorted({i.name for i in trace.nodes.values() if name.lower() in i.name.lower()})[:5]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise click.BadParameter(f"no node named {name!r} in the trace{hint}", param_hint="--at")
    k = int(nth) if nth.isdigit() else 1
    if not 1 <= k <= len(matches):
        raise click.BadParameter(f"there are {len(matches)} node(s) named {name!r}", param_hint="--at")
    return matches[k - 1]


def step_of_node_start(trace: Any, node: int, task: int | None) -> int:
    """The step at which ``node`` has just started running (its first node_begin applied)."""
    from gradviz.trace import events as ev

    for i, e in enumerate(trace.events, 1):
        if type(e) is ev.NodeBegin and e.node == node and (task is None or e.task == task):
            return i
    raise click.ClickException(f"node {node} never starts running in this trace")


class _ReplayCommand(click.Command):
    """``--step -1`` is a wrong value, not an unknown option: click's optional-value options take
    no word that starts with '-' (not even ``--step=-1``), so a negative step is set aside here
    and answered with the trace's real bounds once it is loaded."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            value = None
            if a == "--step" and i + 1 < len(args) and _negative(args[i + 1]):
                value, i = args[i + 1], i + 2
            elif a.startswith("--step=") and _negative(a[7:]):
                value, i = a[7:], i + 1
            else:
                out.append(a)
                i += 1
                continue
            ctx.meta["gradviz.negative_step"] = int(value)
        return super().parse_args(ctx, out)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Built when help is shown: the keys come from the stepper, whose import (rich's layout
        # and pretty-printer) every other gradviz command would otherwise pay for at start-up.
        if self.epilog is None:
            self.epilog = _keys_epilog()
        super().format_epilog(ctx, formatter)


def _negative(word: str) -> bool:
    return word.startswith("-") and word[1:].isdigit()


def _keys_epilog() -> str:
    from gradviz.replay.stepper import HELP

    lines = ["\b", "The stepper's keys (--step alone, in a terminal):"]
    lines += [f"  {keys:<10} {what}" for keys, what in HELP]
    lines += ["", "\b", "Steps count events: step N is the state after the first N events, the last of them",
              "event #N-1 (events are numbered from #0, as 'gradviz info' shows them)."]
    return "\n".join(lines)


def first_backward(trace: Any, task: int | None) -> int:
    """Where the stepper opens: just after the first task_begin (of ``task`` if given), so the
    first key press already moves the backward pass; 0 when there is none."""
    from gradviz.trace import events as ev

    for i, e in enumerate(trace.events, 1):
        if type(e) is ev.TaskBegin and (task is None or e.task == task):
            return i
    return 0


@click.command(cls=_ReplayCommand)
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False))
@click.argument("more", nargs=-1, metavar="[TRACE]...", type=click.Path(dir_okay=False))  # ddp: rank traces
@click.option(
    "--step", "step", type=int, is_flag=False, flag_value=STEPPER, default=None, metavar="[N]",
    help="Print the engine state after the first N events and exit; --step alone (after TRACE) "
    "opens the interactive stepper (at the first backward pass).",
)
@click.option("--at", "at", metavar="NODE",
              help="Jump to where NODE (an id, a name, or name#k for the k-th) starts running.")
@click.option("--task", "task", type=int, metavar="ID", help="Show only graph task ID.")
@click.option("--width", type=click.IntRange(40, 1000), metavar="COLS",
              help="Output width in columns (default: the terminal's, or 100 when not a terminal).")
@click.option("--no-pager", "no_pager", is_flag=True,
              help="Print the timeline straight to the terminal. By default a timeline longer than the "
              "screen goes through $PAGER (less -R -F -X when unset: colours, no pager if it fits).")
def replay(trace_path: str, more: tuple[str, ...], step: int | None, at: str | None, task: int | None,
           width: int | None, no_pager: bool) -> None:
    """Replay a recorded TRACE: which thread ran which node, what sat in each ready queue,
    which InputBuffer slots were filled.

    \b
      gradviz replay trace.json               # the timeline of the whole run
      gradviz replay trace.json --step 40     # the state after 40 events
      gradviz replay trace.json --at MulBackward0
      gradviz replay trace.json --step        # step through it interactively
    """
    paths = ranks.paths_of(trace_path, more)  # ddp: a job's ranks: one lane group each, a merged order
    if len(paths) > 1:
        return ranks.replay(paths, step, width, STEPPER)
    trace_path = paths[0]
    from gradviz.replay import views
    from gradviz.replay.state import fold

    # --step N makes only the first N events, from the lines the load's check decoded; with no
    # --task or --at to look up, nothing after step N is read at all (the header's total is the
    # count the file declares).
    one_step = step is not None and step > 0 and task is None and at is None
    trace = load_trace(trace_path, lazy=True, fold_to=step if step is not None and step > 0 else 0, prefix=one_step)
    if task is not None and task not in trace.tasks:
        raise click.BadParameter(f"no graph task {task} in the trace ({describe_ids(list(trace.tasks))})",
                                 param_hint="--task")
    total = len(trace)
    negative = click.get_current_context().meta.get("gradviz.negative_step")
    if negative is not None:
        raise step_out_of_range(negative, total)
    start: int | None = None
    if at is not None and step is not None and step != STEPPER:
        raise click.UsageError("--at and --step N both pick a step: give one of them")
    if at is not None:
        start = step_of_node_start(trace, resolve_node(trace, at), task)
    if step is not None and step != STEPPER:
        if not 0 <= step <= total:
            raise step_out_of_range(step, total)
        start = step

    if step == STEPPER:
        if sys.stdout.isatty() and sys.stdin.isatty():
            from gradviz.replay.stepper import run_stepper

            run_stepper(trace, start=first_backward(trace, task) if start is None else start, task=task)
            return
        # not a terminal: print the state instead, and say so (a pipe's reader sees one state)
        which = "the last step" if start is None else f"step {start}"
        start = total if start is None else start
        click.echo(f"gradviz: the stepper needs a terminal (stdin and stdout): printing {which} ({start}) "
                   "instead", err=True)

    console = make_console(width)
    from gradviz.trace.provenance import engine, summary_line  # torchrec: say which engine recorded it

    if engine(trace)[0] == "torch":
        if trace.total_events != len(trace):  # its summary counts every event: all of them, then
            trace = load_trace(trace_path, lazy=True, fold_to=start or 0)
        console.print(summary_line(trace), markup=False, highlight=False)
    if start is None:
        from gradviz.replay.timeline import timeline_view

        view = timeline_view(trace, task=task, width=console.width)
        if console.is_terminal and not no_pager:
            # Plain less shows colour codes as ESC[1m...: ask for -R, and no pager when it fits.
            if not os.environ.get("LESS"):
                os.environ["LESS"] = "-R -F -X"
            with console.pager(styles=True):
                console.print(view)
        else:
            console.print(view)
        return
    # One state: a plain fold to it is cheaper than building checkpoints for the whole trace.
    state = fold(trace.fold_events(start))
    console.print(views.state_view(trace, state, task, width=console.width))
