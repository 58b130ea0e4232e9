"""`gradviz view`: the trace as one self-contained HTML page (thin adapter over ``gradviz.view``)."""

from __future__ import annotations

import json
import webbrowser
from pathlib import Path

import click

from gradviz.cli._common import load_trace
from gradviz.render import DEFAULT_MAX_NODES, RenderError, describe_ids
from gradviz.view.page import DEFAULT_MAX_TASKS, default_output, write_page


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="The page to write. Default: in the current folder, named after TRACE (x.trace.json -> x.html).")
@click.option("--open", "open_", is_flag=True, help="Open the page in the default browser.")
@click.option("--task", type=int, default=None, metavar="ID", help="Draw only this graph task.")
@click.option("--max-tasks", type=int, default=DEFAULT_MAX_TASKS, show_default=True, metavar="N",
              help="Draw at most N task graphs (the first ones, and failed ones); the rest are named.")
@click.option("--max-nodes", type=int, default=DEFAULT_MAX_NODES, show_default=True, metavar="N",
              help="Boxes per graph before collapsing, as 'gradviz render'.")
@click.option("--expand", is_flag=True, help="Draw every node, however many.")
@click.option("--why", "why_path", type=click.Path(dir_okay=False, exists=True), default=None, metavar="FILE",
              help="Answers for the why panel: JSON {\"nodes\": {\"ID\": answer}, \"default\": answer}.")
def view(trace_path: str, output: str | None, open_: bool, task: int | None, max_tasks: int, max_nodes: int,
         expand: bool, why_path: str | None) -> None:
    """Write one HTML page that shows the trace at any step.

    The page needs no network and works from file://: the graph of the task running at the
    step (nodes coloured by state), a step slider and keys, the event in words, threads, ready
    queues and not_ready buffers, and a clickable timeline. Open it at a step with
    page.html#step=N (and #task=K).
    """
    trace = load_trace(trace_path)
    if task is not None and task not in trace.tasks:
        raise click.BadParameter(f"no graph task {task} in the trace ({describe_ids(list(trace.tasks))})",
                                 param_hint="--task")
    if max_tasks < 1:
        raise click.BadParameter("must be at least 1", param_hint="--max-tasks")
    why = None
    if why_path is not None:
        try:
            why = json.loads(Path(why_path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise click.ClickException(f"{why_path}: not a JSON file of answers ({e})") from None
        if not isinstance(why, dict):
            raise click.ClickException(f"{why_path}: expected a JSON object of answers")
    out = Path(output) if output is not None else default_output(trace)
    try:
        write_page(trace, out, task=task, max_tasks=max_tasks, max_nodes=max_nodes, expand=expand, why=why)
    except RenderError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"{e.filename or out}: {e.strerror or e}") from None
    click.echo(f"wrote {out} ({len(trace):,} events, {len(trace.tasks):,} tasks): open it in a browser; "
               f"{out.name}#step=N opens at step N")
    if open_:
        webbrowser.open(out.resolve().as_uri())
