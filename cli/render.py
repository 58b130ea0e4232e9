"""`gradviz render`: draw a trace's backward graph to svg/png/pdf/dot (thin adapter over
``gradviz.render``)."""

from __future__ import annotations

import click

from gradviz.cli._common import load_trace
from gradviz.render import DEFAULT_MAX_NODES, FORMATS, RenderError, describe_ids
from gradviz.render import render as render_trace
from gradviz.render.styles import help_text


@click.command(
    epilog=help_text(),
    context_settings={"max_content_width": 110},
)
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file, written as named; its extension picks the format. Default: in the current "
    "folder, named after TRACE (x.trace.json -> x.svg, with --step 40 x.step40.svg).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS, case_sensitive=False),
    default=None,
    help="svg, png, pdf, or dot (DOT source; needs no Graphviz). Default: from -o, else svg.",
)
@click.option(
    "--task",
    type=int,
    default=None,
    metavar="ID",
    help="Draw this graph task (ids as in 'gradviz info'). Default: with --step, the task running at "
    "that step; else the first task that failed, else the first.",
)
@click.option(
    "--all",
    "all_tasks",
    is_flag=True,
    help="One picture per graph task instead (x.task1.svg, x.task2.svg, ...).",
)
@click.option(
    "--step",
    type=int,
    default=None,
    metavar="N",
    help="Colour each node by its state after the first N events (as 'gradviz replay --step N'), "
    "drawing the graph task running then (the last begun); --task draws another.",
)
@click.option(
    "--grads",
    is_flag=True,
    help="Label edges with the shape and norm of the gradient that flowed along them.",
)
@click.option(
    "--max-nodes",
    type=int,
    default=DEFAULT_MAX_NODES,
    show_default=True,
    metavar="N",
    help="Draw at most N boxes: past it, linear chains, runs of identical blocks, then "
    "segments are collapsed into one box each (the picture says what).",
)
@click.option("--expand", is_flag=True, help="Draw every node, however many (slower past a few thousand).")
@click.option(
    "--group-by",
    type=click.Choice(["none", "line", "function"]),
    default="none",
    show_default=True,
    help="One box per source line, or per Python function, that created nodes.",
)
@click.option(
    "--layout",
    type=click.Choice(["auto", "dot", "dot-fast", "sfdp", "fixed"]),
    default="auto",
    show_default=True,
    help="Graphviz layout: dot (layered), dot-fast (fewer iterations), sfdp (force-directed, "
    "for very large pictures), fixed (gradviz's own layered layout, fastest; Graphviz's neato "
    "still draws it); auto picks by the number of boxes. Only --format dot needs no Graphviz.",
)
@click.option("--why", "why", is_flag=True,
              help="Mark gradviz why's answer: the culprit node in red with the reason and your line.")
def render(
    trace_path: str, output: str | None, fmt: str | None, task: int | None, all_tasks: bool,
    step: int | None, grads: bool, max_nodes: int, expand: bool, group_by: str | None, layout: str,
    why: bool = False,
) -> None:
    """Draw the backward graph the engine ran, from a trace file.

    Each node shows its torch name, sequence_nr, when and on which thread it ran, its
    dependency count, saved tensors' shapes, and (tooltip) the source line that created it.
    AccumulateGrad nodes show their leaf and its grad norm; edges show input_nr.
    """
    # Lazily (the graph's and the task's events, not all at once), the lines before --step kept
    # decoded from the check for the fold.
    trace = load_trace(trace_path, lazy=True, fold_to=step or 0)
    if step is not None and not 0 <= step <= len(trace):
        n = len(trace)
        raise click.BadParameter(f"{step} is out of range: the trace has {n} events (0..{n})", param_hint="--step")
    if task is not None and task not in trace.tasks:
        raise click.BadParameter(f"no graph task {task} in the trace ({describe_ids(list(trace.tasks))})",
                                 param_hint="--task")
    from gradviz.trace.provenance import engine, summary_line  # torchrec: say which engine recorded it

    if engine(trace)[0] == "torch":
        click.echo(summary_line(trace))
    try:
        pictures = render_trace(
            trace, output, fmt, task=task, step=step, grads=grads, max_nodes=max_nodes, expand=expand,
            group_by=None if group_by == "none" else group_by, layout=None if layout == "auto" else layout,
            all_tasks=all_tasks, why=why,
        )
    except RenderError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:  # an unwritable output: one line, as every command says it
        raise click.ClickException(f"{e.filename or output}: {e.strerror or e}") from None
    for p in pictures:
        what = f"task {p.task}" if p.task is not None else "forward graph"
        boxes = f"{p.nodes} nodes" if p.boxes == p.nodes else f"{p.nodes} nodes in {p.boxes} boxes"
        click.echo(f"wrote {p.path} ({what}, {boxes}, {p.layout})")
    n = len(trace.tasks)
    if task is None and not all_tasks and step is not None and pictures and pictures[0].task is not None:
        k = pictures[0].task
        when = "the one running at step" if trace.tasks[k].begin.seq < step else "none had begun by step"
        click.echo(f"drew task {k} of {n:,} ({when} {step:,}): --task N draws another")
    elif task is None and not all_tasks and n > 1 and pictures:
        failed = trace.tasks[pictures[0].task].status not in ("ok", "running")
        which = "the first that failed" if failed else "the first"
        click.echo(f"drew task {pictures[0].task} of {n:,} ({which}): --task N draws another, --all draws all {n:,}")
