"""A distributed job's rank traces in the terminal: who is who, the collectives lined up, one
group of lanes per rank (its timeline), or every rank's state at one step of the merged order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from gradviz.replay import views
from gradviz.replay.ranks import RankTrace, collectives, merged_order, mismatches
from gradviz.replay.state import fold
from gradviz.replay.timeline import timeline_view
from gradviz.trace import events as ev
from gradviz.trace.ddp import of_kind


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:+,.3f} ms" if ns else "0"


def _status(trace: Any) -> str:
    end = of_kind(trace, ev.TraceEnd)
    return end[-1].status if end else "unfinished"


def rank_rows(rs: Sequence[RankTrace]) -> list[dict[str, Any]]:
    """One dict per rank trace: what ``info`` lists (and prints as JSON)."""
    out = []
    for r in rs:
        t = r.trace
        out.append({
            "rank": r.rank, "local_rank": r.info.local_rank, "world_size": r.info.world_size,
            "backend": r.info.backend, "trace": r.path, "status": _status(t), "events": len(t),
            "buckets_ready": len(of_kind(t, ev.BucketReady)), "collectives": len(of_kind(t, ev.CollectiveBegin)),
            "iterations": len(of_kind(t, ev.DdpForward)), "clock_shift_ns": r.shift,
        })
    return out


def ranks_table(rs: Sequence[RankTrace]) -> RenderableType:
    t = Table(title=f"{len(rs)} rank traces", title_justify="left", box=box.SIMPLE, pad_edge=False)
    for c in ("rank", "local", "world", "backend", "status", "events", "iterations", "buckets", "collectives",
              "clock shift", "trace"):
        t.add_column(c, justify="right" if c not in ("backend", "status", "trace") else "left")
    for row in rank_rows(rs):
        t.add_row(*(str(row[k]) if row[k] is not None else "-" for k in ("rank", "local_rank", "world_size",
                    "backend", "status", "events", "iterations", "buckets_ready", "collectives")),
                  _ms(row["clock_shift_ns"]), row["trace"] or "")
    return t


def lineup(rs: Sequence[RankTrace]) -> RenderableType:
    """The collectives' agreement across ranks: a line when they agree, the mismatches else."""
    found = mismatches(rs)
    n = len(collectives(rs))
    if not found:
        return Text(f"collectives: {n} lined up on every rank (by process group and number)")
    return Group(Text(f"collectives: {n}; where the ranks disagree:", style="bold red"),
                 *(Text("  " + m) for m in found))


def collectives_table(rs: Sequence[RankTrace], limit: int = 40) -> RenderableType:
    """Each collective with every rank's begin on the common clock and how long the slowest waited."""
    cs = collectives(rs)
    t = Table(title="Collectives (times on rank 0's clock from its start barrier)", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("group/#")
    t.add_column("op")
    t.add_column("bucket", justify="right")
    for r in rs:
        t.add_column(r.label + " begin", justify="right")
    t.add_column("spread", justify="right")
    ref = next((r.info.clock + r.shift for r in rs if r.info.clock is not None), 0)
    shown = cs if len(cs) <= limit else cs[: limit // 2] + cs[-limit // 2 :]
    for k, c in enumerate(shown):
        if len(cs) > limit and k == limit // 2:
            t.add_row("…", f"{len(cs) - limit} more", "", *[""] * len(rs), "")
        ops = "/".join(sorted(set(c.ops.values())))
        bucket = next((b for b in c.bucket.values() if b is not None), None)
        begins = [c.begin.get(i) for i in range(len(rs))]
        known = [b for b in begins if b is not None]
        spread = max(known) - min(known) if len(known) > 1 else None
        cells = ["never" if b is None else _ms(b - ref) for b in begins]
        t.add_row(f"{c.group}/{c.number}", ops, "-" if bucket is None else str(bucket), *cells,
                  f"{spread / 1e6:,.3f} ms" if spread else "-")
    return t


def timeline_ranks(rs: Sequence[RankTrace], width: int = 100) -> RenderableType:
    """One group of lanes per rank (its timeline), then the collectives lined up."""
    parts: list[RenderableType] = [ranks_table(rs), lineup(rs)]
    for r in rs:
        parts.append(Rule(f"{r.label}: {r.path or ''}", align="left"))
        parts.append(timeline_view(r.trace, width=width))
    if any(of_kind(r.trace, ev.CollectiveBegin) for r in rs):
        parts.append(collectives_table(rs))
    return Group(*parts)


def steps_per_rank(rs: Sequence[RankTrace], step: int) -> list[int]:
    """How many of each rank's events the first ``step`` events of the merged order hold."""
    counts = [0] * len(rs)
    for i, _ in merged_order(rs)[:step]:
        counts[i] += 1
    return counts


def state_ranks(rs: Sequence[RankTrace], step: int) -> RenderableType:
    """Every rank's state after the first ``step`` events of the merged order."""
    counts = steps_per_rank(rs, step)
    total = sum(len(r.trace) for r in rs)
    parts: list[RenderableType] = [Text(f"step {step} of {total} in the ranks' merged order "
                                        "(common clock; a collective ends after every rank began it)")]
    for r, n in zip(rs, counts):
        parts.append(Rule(f"{r.label}: its step {n} of {len(r.trace)} ({r.path or ''})", align="left"))
        parts.append(Text(distributed_state(r.trace.head(n))))
        parts.append(views.state_view(r.trace, fold(r.trace.fold_events(n))))
    return Group(*parts)


def distributed_state(events: Sequence[Any]) -> str:
    """One line: the DDP iteration, the buckets ready in it, the collectives begun and not ended."""
    iteration: int | None = None
    ready: list[int] = []
    open_: dict[tuple[str, int], str] = {}
    for e in events:
        t = type(e)
        if t is ev.DdpForward:
            iteration, ready = e.iteration, []
        elif t is ev.BucketReady:
            ready.append(e.bucket)
        elif t is ev.CollectiveBegin:
            open_[(e.group, e.number)] = e.op
        elif t is ev.CollectiveEnd:
            open_.pop((e.group, e.number), None)
    if iteration is None and not open_:
        return "distributed: no DDP iteration or collective yet"
    it = f"DDP iteration {iteration}, buckets ready: {', '.join(map(str, ready)) or 'none'}" if iteration else "no DDP"
    pending = ", ".join(f"{op} #{n} (group {g})" for (g, n), op in open_.items()) or "none"
    return f"distributed: {it}; collectives in flight: {pending}"
