"""Several traces given to a command (the ranks of one distributed job): info, replay and export
over all of them. The commands hand over here when given more than one trace or a glob."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import click

from gradviz.cli._common import load_trace, step_out_of_range


def paths_of(first: str, more: Sequence[str]) -> list[str]:
    """TRACE and any further traces, a quoted glob (``'run.rank*.trace.json'``) expanded."""
    from gradviz.replay.ranks import RankError, expand

    try:
        return expand([first, *more])
    except RankError as e:
        raise click.ClickException(str(e)) from None


def load_ranks(paths: Sequence[str]) -> list[Any]:
    from gradviz.replay.ranks import RankError, ranks

    traces = [load_trace(p) for p in paths]
    try:
        return ranks(traces)
    except RankError as e:
        raise click.ClickException(str(e)) from None


def _console(width: int | None = None) -> Any:
    from gradviz.cli.replay import make_console

    return make_console(width)


def info(paths: Sequence[str], as_json: bool) -> None:
    from gradviz.replay.ranks import mismatches
    from gradviz.replay.ranks_view import lineup, rank_rows, ranks_table

    rs = load_ranks(paths)
    if as_json:
        click.echo(json.dumps({"ranks": rank_rows(rs), "mismatches": mismatches(rs)}, indent=2))
        return
    con = _console(120)
    con.print(ranks_table(rs))
    con.print(lineup(rs))
    con.print("each rank: gradviz info RANK_TRACE; all ranks' timelines: gradviz replay " + " ".join(paths),
              markup=False, highlight=False)


def replay(paths: Sequence[str], step: int | None, width: int | None, stepper: int) -> None:
    from gradviz.replay.ranks_view import state_ranks, timeline_ranks

    rs = load_ranks(paths)
    con = _console(width)
    total = sum(len(r.trace) for r in rs)
    if step is None:
        con.print(timeline_ranks(rs, width=con.width))
        return
    if step == stepper:  # the interactive stepper shows one trace: the merged end state instead
        step = total
    if not 0 <= step <= total:
        raise step_out_of_range(step, total)
    con.print(state_ranks(rs, step))


def _default_output(paths: Sequence[str]) -> str:
    import re

    base = os.path.basename(paths[0])
    base = re.sub(r"\.rank\d+(?=\.)", "", base)
    for suffix in (".trace.json", ".json"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return base + ".perfetto.json"


def export(paths: Sequence[str], output: str | None) -> None:
    from gradviz.replay.export_ranks import write_chrome_trace_ranks

    rs = load_ranks(paths)
    target = output or _default_output(paths)
    try:
        n = write_chrome_trace_ranks(rs, target)
    except OSError as e:
        raise click.ClickException(f"{target}: {e.strerror or e}") from None
    click.echo(f"wrote {target} ({n} trace events, {len(rs)} ranks as processes): open it at https://ui.perfetto.dev")
