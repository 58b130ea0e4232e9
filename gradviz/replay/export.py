"""Export a trace to the Chrome trace event format, which Perfetto and chrome://tracing open.

What goes in (all timestamps in microseconds, as the format wants; the trace has nanoseconds):

- one track per engine thread (``thread_name`` metadata), with a complete event (``ph: X``)
  per node execution, nested when a node runs a reentrant backward;
- a counter (``ph: C``) per ready queue (its depth) and per graph task (outstanding tasks);
- a flow arrow (``ph: s`` / ``ph: f``, same id) from the node that produced a gradient to the
  node whose InputBuffer received it, drawn when the receiver runs;
- graph tasks as async spans (``ph: b`` / ``ph: e``) and errors and anomalies as instant events.

The output is always one well-formed JSON document: strings are made valid UTF-8, non-finite
floats become strings, and the file is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from gradviz.trace import events as ev

PID = 1


def _us(ns: int) -> float:
    return ns / 1000.0


def _clean(v: Any) -> Any:
    """JSON-safe: valid UTF-8 strings, no NaN/inf, tuples as lists."""
    if isinstance(v, str):
        return v.encode("utf-8", "replace").decode("utf-8")
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, dict):
        return {_clean(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, ev.Stats):
        return {k: _clean(getattr(v, k)) for k in ("norm", "min", "max", "nan", "inf")}
    return v


class _Span:
    __slots__ = ("tid", "task", "node", "begin", "end", "depth", "status")

    def __init__(self, tid: int, task: int, node: int, begin: int, depth: int) -> None:
        self.tid, self.task, self.node, self.begin, self.depth = tid, task, node, begin, depth
        self.end: int | None = None
        self.status = "unfinished"

    def mid(self) -> float:
        """A point strictly inside the span, where a flow end binds to it."""
        end = self.end if self.end is not None else self.begin
        return _us(self.begin + (end - self.begin) / 2)


def node_spans(events: list[ev.Event]) -> list[_Span]:
    """Every node execution: begin/end pairs, matched per thread innermost-first."""
    spans: list[_Span] = []
    open_: dict[int, list[_Span]] = {}
    last_ts = events[-1].ts if events else 0
    for e in events:
        if type(e) is ev.NodeBegin:
            sp = _Span(e.tid, e.task, e.node, e.ts, e.depth)
            spans.append(sp)
            open_.setdefault(e.tid, []).append(sp)
        elif type(e) is ev.NodeEnd:
            stack = open_.get(e.tid, [])
            for i in range(len(stack) - 1, -1, -1):
                if stack[i].node == e.node and stack[i].task == e.task:
                    sp = stack.pop(i)
                    sp.end, sp.status = e.ts, e.status
                    break
    for stack in open_.values():
        for sp in stack:
            sp.end = last_ts  # cut short (crash, kill): the span runs to the end of the trace
    return spans


def _s(v: str) -> str:
    """``_clean`` of one string, without a copy when (as nearly always) it is valid UTF-8."""
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return v.encode("utf-8", "replace").decode("utf-8")
    return v


def _items(trace: Any, events: list[ev.Event], text: bool = False) -> Iterator[Any]:
    """The trace events of the export, in order, each already JSON-safe (``_clean``'s output).

    A generator, so the writer streams them: a 1M-event trace makes about a million of these
    dicts, which held together (and copied once more by a whole-document ``_clean``) cost 1.5 GB.
    Strings that come from the trace go through ``_s``; numbers are ints or finite floats.

    ``text``: the many (node spans, counters, flows) come as their JSON text instead, the
    bytes the encoder would write for their dict (``_dump``): a dict and an encoder pass each
    were two thirds of a 1M-event export."""
    names: dict[int, str] = {}
    # names only: a loaded Trace has them without building a NodeInfo a node
    nodes = trace.node_names if hasattr(trace, "node_names") else {n: i.name for n, i in trace.nodes.items()}
    header = trace.header
    title = "gradviz " + " ".join(header.argv) if header is not None else "gradviz trace"
    from gradviz.trace.provenance import DERIVED, OBSERVED, derived_seqs, engine  # real torch's traces say so

    if engine(trace)[0] == "torch":
        title += f" (recorded from torch {engine(trace)[1]})"
    yield _clean({"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": title}})
    for i, th in enumerate(trace.threads.values()):
        label = th.name + (f" ({th.device})" if th.device else "")
        yield _clean({"ph": "M", "name": "thread_name", "pid": PID, "tid": th.tid, "args": {"name": label}})
        yield {"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": th.tid, "args": {"sort_index": i}}

    spans = node_spans(events)
    for sp in spans:
        end = sp.end if sp.end is not None else sp.begin
        name = names.get(sp.node)
        if name is None:
            info = nodes.get(sp.node)
            name = names[sp.node] = _s(info) if info is not None else f"node {sp.node}"
        if text:
            yield (f'{{"ph":"X","name":{_str(name)},"cat":"node","pid":{PID},"tid":{sp.tid},'
                   f'"ts":{_num(_us(sp.begin))},"dur":{_num(_us(end - sp.begin))},"args":{{"node":{sp.node},'
                   f'"task":{sp.task},"depth":{sp.depth},"status":{_str(_s(sp.status))}}}}}')
            continue
        yield {
            "ph": "X", "name": name, "cat": "node", "pid": PID,
            "tid": sp.tid, "ts": _us(sp.begin), "dur": _us(end - sp.begin),
            "args": {"node": sp.node, "task": sp.task, "depth": sp.depth, "status": _s(sp.status)},
        }

    # Flows: the producer's latest finished span before the gradient arrived -> the receiver's
    # next span in the same task after it.
    by_begin: dict[tuple[int, int], list[_Span]] = {}
    for sp in spans:
        by_begin.setdefault((sp.task, sp.node), []).append(sp)
    last_done: dict[tuple[int, int], _Span] = {}
    pending: list[tuple[int, ev.BufferAdd, _Span]] = []  # (event index, add, producer span)
    for i, e in enumerate(events):
        if type(e) is ev.NodeEnd:
            for sp in by_begin.get((e.task, e.node), ()):
                if sp.end == e.ts and sp.tid == e.tid:
                    last_done[(e.task, e.node)] = sp
        elif type(e) is ev.BufferAdd and e.producer is not None:
            src = last_done.get((e.task, e.producer))
            if src is not None:
                pending.append((i, e, src))
    del last_done
    flow_id = 0
    derived = derived_seqs(trace)  # provenance.origin, without a call a flow
    for i, add, src in pending:
        dst = next((sp for sp in by_begin.get((add.task, add.node), ())
                    if sp.begin >= events[i].ts and sp is not src), None)
        if dst is None:
            continue  # the receiver never ran (error, pruned, cut short): no arrow
        flow_id += 1
        name = f"grad -> slot {add.slot}"
        args = {"slot": add.slot, "mode": _s(add.mode), "stats": _stats(add.stats),
                "origin": DERIVED if add.seq in derived else OBSERVED}
        if text:
            a = _ENCODE(args)
            yield (f'{{"ph":"s","id":{flow_id},"name":"{name}","cat":"grad","pid":{PID},"tid":{src.tid},'
                   f'"ts":{_num(src.mid())},"args":{a}}}')
            yield (f'{{"ph":"f","bp":"e","id":{flow_id},"name":"{name}","cat":"grad","pid":{PID},'
                   f'"tid":{dst.tid},"ts":{_num(dst.mid())},"args":{a}}}')
            continue
        yield {"ph": "s", "id": flow_id, "name": name, "cat": "grad", "pid": PID, "tid": src.tid,
               "ts": src.mid(), "args": args}
        yield {"ph": "f", "bp": "e", "id": flow_id, "name": name, "cat": "grad", "pid": PID,
               "tid": dst.tid, "ts": dst.mid(), "args": args}
    del pending, by_begin, spans

    # Counters, graph tasks, errors.
    queue_names = {q: qc.name for q, qc in trace.queues.items()}
    depth_names: dict[tuple[int, str], str] = {}
    outstanding: dict[int, int] = {}
    needed: dict[int, frozenset[int]] = {}
    task_names: dict[int, str] = {}
    for e in events:
        t = type(e)
        if t is ev.QueueCreated:
            yield _counter(_s(f"queue {e.name} depth"), e.ts, {"depth": 0}, e.queue)
        elif t is ev.QueuePush or t is ev.QueuePop:
            qname = depth_names.get((e.queue, e.device))
            if qname is None:
                qname = queue_names.get(e.queue, f"{e.device} #{e.queue}")
                qname = depth_names[(e.queue, e.device)] = _s(f"queue {qname} depth")
            ts = e.ts / 1000.0  # _counter's, inlined: half of the export's events are these
            if text:
                yield (f'{{"ph":"C","name":{_str(qname)},"pid":{PID},"tid":0,"ts":{_num(ts)},'
                       f'"args":{{"depth":{e.size}}}}}')
            else:
                yield {"ph": "C", "name": qname, "pid": PID, "tid": 0, "ts": ts, "args": {"depth": e.size}}
            task = e.task
            if e.what == "node" and task is not None:
                if t is ev.QueuePush:
                    n = outstanding[task] = outstanding.get(task, 0) + 1
                elif task in needed and e.node not in needed[task]:
                    n = outstanding[task] = outstanding.get(task, 0) - 1  # captured, never runs
                else:
                    continue
                tname = task_names.get(task) or task_names.setdefault(task, f"task {task} outstanding")
                if text:
                    yield (f'{{"ph":"C","name":"{tname}","pid":{PID},"tid":0,"ts":{_num(ts)},'
                           f'"args":{{"outstanding":{n}}}}}')
                else:
                    yield {"ph": "C", "name": tname, "pid": PID, "tid": 0, "ts": ts, "args": {"outstanding": n}}
        elif t is ev.NodeEnd:
            task = e.task
            n = outstanding[task] = outstanding.get(task, 0) - 1
            tname = task_names.get(task) or task_names.setdefault(task, f"task {task} outstanding")
            if text:
                yield (f'{{"ph":"C","name":"{tname}","pid":{PID},"tid":0,"ts":{_num(e.ts / 1000.0)},'
                       f'"args":{{"outstanding":{n}}}}}')
            else:
                yield {"ph": "C", "name": tname, "pid": PID, "tid": 0, "ts": e.ts / 1000.0, "args": {"outstanding": n}}
        elif t is ev.ExecInfo:
            needed[e.task] = frozenset(e.needed)
        elif t is ev.TaskBegin:
            call = "backward" if e.accumulate_grad else "grad"
            yield _clean({"ph": "b", "cat": "task", "id": e.task, "name": f"task {e.task} ({call})",
                          "pid": PID, "tid": e.tid, "ts": _us(e.ts),
                          "args": {"reentrant_depth": e.reentrant_depth, "owner": e.owner}})
            outstanding[e.task] = 0
            yield _counter(f"task {e.task} outstanding", e.ts, {"outstanding": 0}, e.task)
        elif t is ev.TaskEnd:
            yield _clean({"ph": "e", "cat": "task", "id": e.task, "name": f"task {e.task}", "pid": PID,
                          "tid": e.tid, "ts": _us(e.ts), "args": {"status": e.status, "error": e.error}})
        elif t is ev.Error or t is ev.Anomaly:
            label = e.type if t is ev.Error else "Anomaly"
            yield _clean({"ph": "i", "s": "t", "name": label, "cat": e.kind, "pid": PID, "tid": e.tid,
                          "ts": _us(e.ts), "args": {"node": e.node, "task": e.task, "message": e.message}})


def _stats(st: Any) -> Any:
    """``_clean`` of a gradient's stats, without its recursion for the usual all-finite case."""
    if type(st) is ev.Stats:
        norm, lo, hi, nan, inf = st.norm, st.min, st.max, st.nan, st.inf
        if (type(norm) is float and type(lo) is float and type(hi) is float and type(nan) is int and type(inf) is int
                and norm - norm == 0.0 and lo - lo == 0.0 and hi - hi == 0.0):
            return {"norm": norm, "min": lo, "max": hi, "nan": nan, "inf": inf}
    return _clean(st)


def _events(trace: Any) -> list[ev.Event]:
    """The trace's events as a list: the trace's own when it is one (a copy is 8 MB a million)."""
    events = trace.events
    return events if type(events) is list else list(events)


def _other(trace: Any, events: list[ev.Event]) -> dict[str, Any]:
    return _clean({"source": "gradviz", "trace": trace.path or "", "events": len(events),
                   "truncated": bool(trace.truncated)})


def chrome_trace(trace: Any) -> dict[str, Any]:
    """The Chrome trace event document (a dict ready for json.dump) of a Trace."""
    events: list[ev.Event] = _events(trace)
    return {"traceEvents": list(_items(trace, events)), "displayTimeUnit": "ns", "otherData": _other(trace, events)}


def _counter(name: str, ts_ns: int, args: dict[str, int], key: int) -> dict[str, Any]:
    # No "id": viewers would append it to the counter's name, which already says which one.
    del key
    return {"ph": "C", "name": name, "pid": PID, "tid": 0, "ts": _us(ts_ns), "args": args}


_BATCH = 4096  # trace events written per write call
_ENCODE = json.JSONEncoder(allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode
# What that encoder writes for a string and for a float (ints are their str()): _items' text.
_str = json.encoder.encode_basestring  # type: ignore[attr-defined]
_num = float.__repr__


def _dump(trace: Any, f: Any) -> int:
    """Write the document as ``json.dump(chrome_trace(trace), f, ...)`` would, byte for byte, as a
    stream: batches of trace events through the C encoder (json.dump to a file takes the pure
    Python one). Returns the number of trace events."""
    events: list[ev.Event] = _events(trace)
    f.write('{"traceEvents":[')
    n = 0
    batch: list[str] = []
    append = batch.append
    for item in _items(trace, events, text=True):
        append(item if type(item) is str else _ENCODE(item))
        if len(batch) == _BATCH:
            f.write(("," if n else "") + ",".join(batch))
            n += len(batch)
            batch.clear()
    if batch:
        f.write(("," if n else "") + ",".join(batch))
        n += len(batch)
    f.write('],"displayTimeUnit":"ns","otherData":' + _ENCODE(_other(trace, events)) + "}\n")
    return n


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def write_chrome_trace(trace: Any, path: str | os.PathLike[str]) -> int:
    """Write the export to ``path`` atomically; returns the number of trace events written."""
    target = os.fspath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        # /dev/null, /dev/stdout, a FIFO: renaming a temporary file over it would replace the
        # device itself (as root, /dev/null became a plain file), so these are written in place.
        with open(target, "w", encoding="utf-8") as f:
            return _dump(trace, f)
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)  # every command's rule: -o creates missing folders
    fd, tmp = tempfile.mkstemp(prefix=".gradviz-export-", suffix=".json", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs follow the umask as open() does
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            n = _dump(trace, f)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return n
