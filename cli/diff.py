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

    Traces are aligned task by task and node by node. Reports the first divergence in structure
    (nodes, edges), execution order, gradient statistics (beyond --rtol/--atol) and errors.

    \b
      gradviz run --engine torch -o torch.json train.py
      gradviz run --engine gradviz -o gradviz.json train.py
      gradviz diff torch.json gradviz.json
    """
    from gradviz.diff import diff as run_diff
    from gradviz.torchrec.provenance import label

    a, b = load_trace(trace_a), load_trace(trace_b)
    found = run_diff(a, b, rtol=rtol, atol=atol)
    click.echo(f"A: {trace_a} ({label(a)})\nB: {trace_b} ({label(b)})")
    from gradviz.replay.ranks import compare_ranks  # ddp: two ranks of a job: what DDP needs them to share

    ddp = compare_ranks(a, b)
    for line in ddp or ():
        click.echo(f"ranks: {line}")
    if ddp == []:
        click.echo("ranks: DDP's gradients per iteration, buckets and collectives agree")
    if ddp:
        ctx.exit(1)
    if not found:
        click.echo("no divergence")
        ctx.exit(0)
    for d in found:
        where = f" (events {d.seq_a} / {d.seq_b})" if d.seq_a is not None or d.seq_b is not None else ""
        click.echo(f"{d}{where}")
    ctx.exit(1)
