"""The traces of a distributed job's ranks, as one: ordered by rank, times on one clock, events
in one merged order, collectives lined up by (process group, number).

Each rank wrote its own trace (``gradviz.trace.ranks``). Their clocks start when each process
began recording; the ``dist_init`` event of each holds its reading as the start barrier returned,
the same instant on every rank, so ``shift`` puts every rank on the lowest rank's clock.
A merged order must also respect what a collective means: no rank leaves collective N of a group
before every rank has entered it, whatever the clocks say.
"""

from __future__ import annotations

import glob
import heapq
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradviz.trace import events as ev
from gradviz.trace.ddp import of_kind
from gradviz.trace.ranks import RankInfo, rank_info


class RankError(ValueError):
    """Rank traces that cannot be one job's (two files claim one rank)."""


def expand(paths: Sequence[str]) -> list[str]:
    """Trace paths, a glob pattern (``'run.rank*.trace.json'``, quoted past the shell) expanded in
    name order; a path that exists is taken as it is."""
    out: list[str] = []
    for p in paths:
        if not os.path.exists(p) and glob.has_magic(p):
            found = sorted(glob.glob(p))
            if not found:
                raise RankError(f"{p}: no file matches")
            out += found
        else:
            out.append(p)
    return out


@dataclass
class RankTrace:
    trace: Any  # gradviz.trace.model.Trace
    path: str | None
    info: RankInfo
    shift: int = 0  # ns added to this trace's ts to put it on the common clock

    @property
    def rank(self) -> int | None:
        return self.info.rank

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else os.path.basename(self.path or "trace")


def ranks(traces: Sequence[Any]) -> list[RankTrace]:
    """The traces ordered by rank (traces of no rank last, by path), each with its clock shift."""
    out = []
    for t in traces:
        head = [t.header] if t.header is not None else []
        out.append(RankTrace(t, t.path, rank_info([*head, *of_kind(t, ev.DistInit)], t.path)))
    seen: dict[int, str | None] = {}
    for r in out:
        if r.rank is not None:
            if r.rank in seen:
                raise RankError(f"two traces are rank {r.rank}: {seen[r.rank]} and {r.path}")
            seen[r.rank] = r.path
    out.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.path or ""))
    ref = next((r.info.clock for r in out if r.info.clock is not None), None)
    for r in out:
        r.shift = 0 if ref is None or r.info.clock is None else ref - r.info.clock
    return out


def merged_order(rs: Sequence[RankTrace]) -> list[tuple[int, int]]:
    """Every event of every rank once, as (rank position in ``rs``, event index), ordered by the
    common clock, except that a rank's ``collective_end`` waits until every rank taking part has
    given its ``collective_begin`` of the same (group, number)."""
    events = [r.trace.events for r in rs]
    begins: dict[tuple[str, int], int] = {}  # (group, number) -> ranks that will begin it
    for r in rs:
        for e in of_kind(r.trace, ev.CollectiveBegin):
            k = (e.group, e.number)
            begins[k] = begins.get(k, 0) + 1
    begun: dict[tuple[str, int], int] = {}
    pos = [0] * len(rs)
    heap = [(evs[0].ts + r.shift, i) for i, (r, evs) in enumerate(zip(rs, events)) if evs]
    heapq.heapify(heap)
    blocked: list[tuple[int, int]] = []
    out: list[tuple[int, int]] = []
    while heap or blocked:
        if not heap:  # every rank waits on a collective some rank never began: take them as they are
            heap, blocked = blocked, []
            heapq.heapify(heap)
            force = True
        else:
            force = False
        t, i = heapq.heappop(heap)
        e = events[i][pos[i]]
        if type(e) is ev.CollectiveEnd and not force:
            k = (e.group, e.number)
            if begun.get(k, 0) < begins.get(k, 0):
                blocked.append((t, i))
                continue
        if type(e) is ev.CollectiveBegin:
            k = (e.group, e.number)
            begun[k] = begun.get(k, 0) + 1
            if begun[k] == begins[k]:  # the waiting ends may go now
                for b in blocked:
                    heapq.heappush(heap, b)
                blocked.clear()
        out.append((i, pos[i]))
        pos[i] += 1
        if pos[i] < len(events[i]):
            heapq.heappush(heap, (events[i][pos[i]].ts + rs[i].shift, i))
    return out


@dataclass
class Collective:
    group: str
    number: int
    ops: dict[int, str]  # rank position -> the op that rank called as this number
    begin: dict[int, int]  # rank position -> begin ts on the common clock
    end: dict[int, int]  # rank position -> end ts on the common clock (absent: never ended)
    bucket: dict[int, int | None]  # rank position -> the DDP bucket it reduced


def collectives(rs: Sequence[RankTrace]) -> list[Collective]:
    """Each (group, number) with what every rank did as that collective, by group then number."""
    table: dict[tuple[str, int], Collective] = {}
    for i, r in enumerate(rs):
        for e in of_kind(r.trace, ev.CollectiveBegin):
            c = table.setdefault((e.group, e.number), Collective(e.group, e.number, {}, {}, {}, {}))
            c.ops[i], c.begin[i], c.bucket[i] = e.op, e.ts + r.shift, e.bucket
        for e in of_kind(r.trace, ev.CollectiveEnd):
            c = table.setdefault((e.group, e.number), Collective(e.group, e.number, {}, {}, {}, {}))
            c.end[i] = e.ts + r.shift
    return [table[k] for k in sorted(table, key=lambda k: (k[0], k[1]))]


def mismatches(rs: Sequence[RankTrace]) -> list[str]:
    """Where the ranks' collectives do not line up: a number some rank never called (it hangs or
    stopped there), or called as another op; one line each, the first few per group."""
    out: list[str] = []
    per_group: dict[str, int] = {}
    for c in collectives(rs):
        missing = [rs[i].label for i in range(len(rs)) if i not in c.ops]
        ops = set(c.ops.values())
        if not missing and len(ops) <= 1:
            continue
        if per_group.get(c.group, 0) >= 3:
            continue
        per_group[c.group] = per_group.get(c.group, 0) + 1
        what = " / ".join(f"{rs[i].label}: {op}" for i, op in sorted(c.ops.items()))
        if missing:
            out.append(f"group {c.group} collective #{c.number} ({what}) never called by {', '.join(missing)}")
        else:
            out.append(f"group {c.group} collective #{c.number}: the ranks called different collectives ({what})")
    return out


def compare_ranks(a: Any, b: Any) -> list[str] | None:
    """What two ranks of one DDP job must agree on, and where they do not: the parameters each
    iteration gave a gradient (a rank whose graph left one out is the classic DDP bug), each
    bucket's parameters, and the collectives by number. Empty when they agree; None when the
    traces are not two ranks of a job."""
    try:
        rs = ranks([a, b])
    except RankError:  # one rank twice (two runs of it): not two ranks
        return None
    if any(r.rank is None for r in rs):
        return None
    out: list[str] = []
    la, lb = rs[0].label, rs[1].label
    ta, tb = rs[0].trace, rs[1].trace
    ga = {(e.ddp, e.iteration): set(e.ready) for e in of_kind(ta, ev.DdpGrads)}
    gb = {(e.ddp, e.iteration): set(e.ready) for e in of_kind(tb, ev.DdpGrads)}
    names = {e.ddp: e.params for e in of_kind(ta, ev.DdpInit)}
    for k in sorted(set(ga) & set(gb)):
        if ga[k] != gb[k]:
            p = names.get(k[0], ())

            def nm(s: set[int], p: tuple[str, ...] = p) -> str:
                return ", ".join(p[i] if i < len(p) else f"#{i}" for i in sorted(s)) or "none"

            out.append(f"ddp {k[0]} iteration {k[1]}: gradients only on {la}: {nm(ga[k] - gb[k])}; "
                       f"only on {lb}: {nm(gb[k] - ga[k])}")
            break
    ba = {(e.ddp, e.iteration, e.bucket): e.params for e in of_kind(ta, ev.BucketReady)}
    bb = {(e.ddp, e.iteration, e.bucket): e.params for e in of_kind(tb, ev.BucketReady)}
    for k in sorted(set(ba) | set(bb)):
        if ba.get(k) != bb.get(k):
            out.append(f"ddp {k[0]} iteration {k[1]} bucket {k[2]}: parameters {ba.get(k, 'never ready')} on {la}, "
                       f"{bb.get(k, 'never ready')} on {lb}")
            break
    out += mismatches(rs)
    return out
