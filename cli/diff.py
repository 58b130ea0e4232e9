"""`gradviz diff`: the first divergence of each kind between two traces (gradviz.diff)."""

from __future__ import annotations

import click

from gradviz.cli._common import load_trace


@click.command()
@click.argument("trace_a", metavar="A")
@click.argument("trace_b", metavar="B")
@click.option("--rtol", type=float, default=1e-4, show_default=True, help="Relative tolerance on gradient statistics.")
@click.option("--atol", type=float, default=1e-6, show_default=True, help="Absolute tolerance on gradient statistics.")
@click.pass_context
def diff(ctx: click.Context, trace_a: str, trace_b: str, rtol: float, atol: float) -> None:
    """Compare two traces node by node; exit 1 where they diverge.

    First how each run ended (status, the program's error); then, task by task and node by node,
    the first divergence in errors, leaf inputs (values as each leaf joined the graph: an
    unseeded script is named as such, not as a wrong gradient), structure (nodes, edges), hooks
    called, saved tensors' shapes, execution order and gradient statistics (beyond
    --rtol/--atol). Once a task's structure differs, later tasks are not compared. The last
    lines say what was compared and what was not.

    \b
      gradviz run --engine torch -o torch.json train.py
      gradviz run --engine gradviz -o gradviz.json train.py
      gradviz diff torch.json gradviz.json
    """
    from gradviz._gc import paused
    from gradviz.diff import SKIP, Lines, Runs, compare
    from gradviz.replay.ranks import compare_ranks, ranks  # ddp
    from gradviz.trace.provenance import label

    # One trace at a time, lazily (the events diff reads are made as it reads them, and not
    # kept), and let go once read: at most one trace is in memory beside the other's summary.
    # The collector off throughout: what diff builds (a tuple or two an event, none in a cycle) set
    # off collection after collection, each walking all of it again (a fifth of its time).
    sides = []
    n_ranks = 0  # ddp
    with paused():
        for path in (trace_a, trace_b):
            # diff's one pass reads each chunk's lines as the check decodes them: decoded once, not kept.
            lines = Lines()
            trace = load_trace(path, lazy=True, then=lines, skip=SKIP)
            sides.append((label(trace), Runs(trace, lines)))
            n_ranks += ranks([trace])[0].rank is not None  # ddp
            del trace, lines
        (label_a, a), (label_b, b) = sides
        result = compare(a, b, rtol=rtol, atol=atol)
    click.echo(f"A: {trace_a} ({label_a})\nB: {trace_b} ({label_b})")
    # ddp: two ranks of a job: what DDP needs them to share (their rare kinds, read again)
    ddp = compare_ranks(load_trace(trace_a, lazy=True), load_trace(trace_b, lazy=True)) if n_ranks == 2 else None
    for line in ddp or ():
        click.echo(f"ranks: {line}")
    if ddp == []:
        click.echo("ranks: DDP's gradients per iteration, buckets and collectives agree")
    if ddp:
        ctx.exit(1)
    for d in result.divergences:
        where = f" (events {d.seq_a} / {d.seq_b})" if d.seq_a is not None or d.seq_b is not None else ""
        click.echo(f"{d}{where}")
    if not result.divergences:
        click.echo("no divergence")
    for line in result.summary():
        click.echo(line)
    ctx.exit(1 if result.divergences else 0)
