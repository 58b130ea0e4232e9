"""Export the ranks of a distributed job as one Perfetto (Chrome trace event) file.

One process per rank (pid = rank + 1, named "rank R"), each holding that rank's export
(``gradviz.replay.export``) on the common clock (``gradviz.replay.ranks``), plus, per rank:

- a track per DDP bucket with a slice from the bucket's ``bucket_ready`` to its ``bucket_done``;
- a track per bucket with the collective that reduced it, and one track for the other
  collectives, each a slice from ``collective_begin`` to ``collective_end`` (its args say the
  group and number, the same on every rank);
- flow arrows from each AccumulateGrad that filled a bucket to the bucket, and from the bucket to
  its collective.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from typing import Any

from gradviz.replay.export import _clean, _umask, chrome_trace, node_spans
from gradviz.replay.ranks import RankTrace
from gradviz.trace import events as ev
from gradviz.trace.ddp import of_kind

BUCKET_TID = 1_000_000  # + bucket index: the bucket's track
REDUCE_TID = 2_000_000  # + bucket index: the track of the collectives that reduce it
COLLECTIVE_TID = 3_000_000  # the program's own collectives
_ID_STRIDE = 10**9  # flow and async ids of rank position i are offset by (i + 1) * this


def _us(ns: float) -> float:
    return ns / 1000.0


def pid_of(r: RankTrace, i: int) -> int:
    return r.rank + 1 if r.rank is not None else 100_000 + i


def _rank_items(r: RankTrace, i: int) -> list[dict[str, Any]]:
    pid = pid_of(r, i)
    shift = _us(r.shift)
    base = (i + 1) * _ID_STRIDE
    items: list[dict[str, Any]] = []
    for e in chrome_trace(r.trace)["traceEvents"]:
        e = dict(e)
        e["pid"] = pid
        if "ts" in e:
            e["ts"] = e["ts"] + shift
        if "id" in e and isinstance(e["id"], int):
            e["id"] = e["id"] + base
        if e.get("ph") == "M" and e.get("name") == "process_name":
            e["args"] = {"name": f"{r.label}: {e['args'].get('name', '')}"}
        items.append(e)
    items.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": i}})
    items += _ddp_items(r, pid, shift, base + _ID_STRIDE // 2)
    return items


def _ddp_items(r: RankTrace, pid: int, shift: float, flow_base: int) -> list[dict[str, Any]]:
    t = r.trace
    inits = {e.ddp: e for e in of_kind(t, ev.DdpInit)}
    done = {(e.ddp, e.iteration, e.bucket): e.ts for e in of_kind(t, ev.BucketDone)}
    ends = {(e.group, e.number): e for e in of_kind(t, ev.CollectiveEnd)}
    out: list[dict[str, Any]] = []
    named: set[int] = set()

    def track(tid: int, name: str) -> None:
        if tid not in named:
            named.add(tid)
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})

    # AccumulateGrad runs by leaf: the last run of a parameter's node before its bucket was ready fed it
    tensors = t.node_tensors
    runs: dict[int, list[Any]] = {}
    for sp in node_spans(t.events):
        tensor = tensors.get(sp.node)
        if tensor is not None:
            runs.setdefault(tensor, []).append(sp)
    flow = flow_base
    bucket_at: dict[tuple[int, int, int], float] = {}  # (ddp, iteration, bucket) -> slice start (µs)
    for e in of_kind(t, ev.BucketReady):
        tid = BUCKET_TID + e.bucket
        track(tid, f"DDP bucket {e.bucket}" + (f" (ddp {e.ddp})" if len(inits) > 1 else ""))
        begin = e.ts
        end = done.get((e.ddp, e.iteration, e.bucket), begin)
        init = inits.get(e.ddp)
        params = [init.params[p] for p in e.params if init and 0 <= p < len(init.params)]
        ts = _us(begin) + shift
        bucket_at[(e.ddp, e.iteration, e.bucket)] = ts
        out.append(_clean({"ph": "X", "name": f"bucket {e.bucket} (iteration {e.iteration})", "cat": "ddp",
                           "pid": pid, "tid": tid, "ts": ts, "dur": max(_us(end - begin), 1.0),
                           "args": {"params": params, "bytes": e.bytes, "dtype": e.dtype, "hook": e.hook,
                                    "last": e.last}}))
        for p in e.params:
            if init is None or not 0 <= p < len(init.tensors):
                continue
            fed = [sp for sp in runs.get(init.tensors[p], ()) if sp.begin <= e.ts]
            if not fed:
                continue
            sp = fed[-1]
            flow += 1
            out.append({"ph": "s", "id": flow, "name": "grad to bucket", "cat": "ddp", "pid": pid, "tid": sp.tid,
                        "ts": sp.mid() + shift})
            out.append({"ph": "f", "bp": "e", "id": flow, "name": "grad to bucket", "cat": "ddp", "pid": pid,
                        "tid": tid, "ts": ts})
    iteration: dict[int, int] = {}
    for e in t.events:  # collectives in order, with the iteration their DDP module was in
        if type(e) is ev.DdpForward:
            iteration[e.ddp] = e.iteration
        if type(e) is not ev.CollectiveBegin:
            continue
        end_e = ends.get((e.group, e.number))
        tid = COLLECTIVE_TID if e.bucket is None else REDUCE_TID + e.bucket
        track(tid, "collectives" if e.bucket is None else f"reduce bucket {e.bucket}")
        ts = _us(e.ts) + shift
        dur = max(_us(end_e.ts - e.ts), 1.0) if end_e is not None else 1.0
        out.append(_clean({"ph": "X", "name": f"{e.op} #{e.number}", "cat": "collective", "pid": pid, "tid": tid,
                           "ts": ts, "dur": dur,
                           "args": {"group": e.group, "number": e.number, "bytes": e.bytes, "shape": e.shape,
                                    "bucket": e.bucket, "async_op": e.async_op,
                                    "status": end_e.status if end_e is not None else "unfinished"}}))
        if e.bucket is not None and e.ddp is not None:
            src = bucket_at.get((e.ddp, iteration.get(e.ddp, 0), e.bucket))
            if src is not None:
                flow += 1
                out.append({"ph": "s", "id": flow, "name": "bucket to collective", "cat": "ddp", "pid": pid,
                            "tid": BUCKET_TID + e.bucket, "ts": src})
                out.append({"ph": "f", "bp": "e", "id": flow, "name": "bucket to collective", "cat": "ddp",
                            "pid": pid, "tid": tid, "ts": ts})
    return out


def chrome_trace_ranks(rs: Sequence[RankTrace]) -> dict[str, Any]:
    """The Chrome trace event document of a job's rank traces (``gradviz.replay.ranks.ranks``)."""
    items: list[dict[str, Any]] = []
    for i, r in enumerate(rs):
        items += _rank_items(r, i)
    other = {"source": "gradviz", "ranks": [{"rank": r.rank, "trace": r.path or "", "pid": pid_of(r, i),
                                             "clock_shift_ns": r.shift} for i, r in enumerate(rs)]}
    return {"traceEvents": items, "displayTimeUnit": "ns", "otherData": _clean(other)}


def write_chrome_trace_ranks(rs: Sequence[RankTrace], path: str | os.PathLike[str]) -> int:
    """Write the export atomically (a temporary file renamed into place); the trace events written."""
    doc = chrome_trace_ranks(rs)
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    if os.path.exists(target) and not os.path.isfile(target):  # /dev/null, a FIFO: in place
        with open(target, "w", encoding="utf-8") as f:
            json.dump(doc, f, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        return len(doc["traceEvents"])
    fd, tmp = tempfile.mkstemp(prefix=".gradviz-export-", suffix=".json", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would make it
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return len(doc["traceEvents"])
