"""`gradviz why`: why a gradient is None, where a NaN came from, what caused an error (gradviz.replay.why)."""

from __future__ import annotations

import json

import click

from gradviz.cli._common import load_trace


@click.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--grad", "grad", metavar="NAME", default=None,
              help="Why NAME's .grad is None: a variable (w) or module path (fc1.weight, model.0.weight).")
@click.option("--nan", is_flag=True, help="Where the first NaN/Inf came from (forward or backward).")
@click.option("--error", is_flag=True, help="What caused the recorded error.")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object: {"question", "reason", "where", "node", "tensor", "text"}.')
def why(trace_path: str, grad: str | None, nan: bool, error: bool, as_json: bool) -> None:
    """Answer a question about a recorded run, with the line of your code that causes it.

    With no question: the first problem found (an error, then a NaN/Inf, then a leaf whose
    .grad is None).

    \b
      gradviz run -o run.json train.py
      gradviz why run.json --grad fc1.weight
      gradviz why run.json --nan --json
    """
    from gradviz.replay.why import WhyError
    from gradviz.replay.why import why as answer_why

    if sum((grad is not None, nan, error)) > 1:
        raise click.UsageError("ask one question at a time: --grad NAME, --nan or --error")
    trace = load_trace(trace_path)
    try:
        a = answer_why(trace, grad=grad, nan=nan, error=error)
    except WhyError as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        click.echo(json.dumps(a.to_json()))
        return
    click.echo(f"{a.reason}" + (f" at {a.where}" if a.where else ""))
    details = [f"node: {a.node}" if a.node else "", f"tensor: {a.tensor}" if a.tensor else ""]
    if any(details):
        click.echo("  " + "   ".join(d for d in details if d))
    click.echo(a.text)
