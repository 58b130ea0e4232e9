"""Everything the page needs to show any step, from one pass of replay's fold.

The page is a function of the replay state at step N. Rather than the state at every step, it
carries what changes: for each node, the steps at which its state (or where it waits or runs)
changed, taken from the fold's own writes as ``gradviz.replay.state.apply`` makes them; the
tasks' begin and end steps; each event in words, as the stepper says it; which steps are
node runs and which are errors or NaN. The page rebuilds the threads, ready queues and
not_ready buffers of any step from the node states (running on a thread, queued in a queue,
parked with k of n slots).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gradviz.replay import views
from gradviz.replay.state import NODE_STATES, EngineState, apply
from gradviz.replay.state_types import FlatMap
from gradviz.trace import events as ev
from gradviz.trace.model import Trace

STATE_CODE = {s: i for i, s in enumerate(NODE_STATES)}
TIMELINE_COLUMNS = 800  # columns of the timeline's thread rows (busy or idle, per column)


def is_problem(e: ev.Event) -> bool:
    """An error, an anomaly, or a gradient or .grad with NaN/Inf in it (the stepper's e/E stops)."""
    if type(e) is ev.Error or type(e) is ev.Anomaly:
        return True
    if type(e) is ev.BufferAdd or type(e) is ev.CapturedGrad:
        return e.stats is not None and (e.stats.nan > 0 or e.stats.inf > 0)
    if type(e) is ev.AccumulateGradUpdate:
        return e.after.nan > 0 or e.after.inf > 0
    return False


def _extra(ns: Any) -> int:
    """Where a node waits or runs, in one number: its queue (queued), its thread (running), or
    its filled InputBuffer slots (arriving, parked, ready); -1 otherwise."""
    state = ns[4]
    if state == "queued":
        return -1 if ns[6] is None else ns[6]
    if state == "running":
        return -1 if ns[7] is None else ns[7]
    if state in ("arriving", "parked", "ready"):
        return ns[9]
    return -1


class _Recording(FlatMap):
    """The fold's node map, noting each write that changes what the page shows of a node."""

    __slots__ = ("state", "log", "last")

    def __setitem__(self, key: int, value: Any) -> None:
        dict.__setitem__(self, key, value)
        code = (STATE_CODE.get(value[4], 0), _extra(value))
        if self.last.get(key) != code:
            self.last[key] = code
            self.log.append((key, self.state.step, code[0], code[1]))


@dataclass
class Steps:
    """What changes from step to step, for the page (see module doc)."""

    total: int
    transitions: list[tuple[int, int, int, int]]  # (node, step, state code, extra), in step order
    texts: list[str]  # texts[i]: event #i in words (the step i + 1 applies it)
    runs: list[int] = field(default_factory=list)  # steps that apply a node_begin
    problems: list[int] = field(default_factory=list)  # steps that apply an error, anomaly or NaN
    task_spans: dict[int, tuple[int, int | None]] = field(default_factory=dict)  # task -> (begin, end step)
    busy: dict[int, list[int]] = field(default_factory=dict)  # tid -> busy columns of the timeline


def collect(trace: Any, *, texts: bool = True) -> Steps:
    """One pass of the fold over ``trace`` (a Trace or a list of events)."""
    if not isinstance(trace, Trace):
        trace = Trace(list(trace))
    events = trace.events
    views.use_trace(trace)  # AccumulateGrad nodes named after their leaf, as the stepper names them
    s = EngineState(flat=True)
    rec = _Recording()
    rec.state, rec.log, rec.last = s, [], {}
    s.nodes = rec
    total = len(events)
    out = Steps(total, rec.log, [])
    cols = TIMELINE_COLUMNS
    begun: dict[tuple[int, int], int] = {}  # (tid, node) -> step its run began
    for i, e in enumerate(events):
        apply(s, e)
        step = i + 1
        if texts:
            out.texts.append(views.describe(e, s))
        t = type(e)
        if t is ev.NodeBegin:
            out.runs.append(step)
            begun[(e.tid, e.node)] = step
        elif t is ev.NodeEnd:
            start = begun.pop((e.tid, e.node), step)
            row = out.busy.setdefault(e.tid, [0] * cols)
            for c in range(start * cols // max(total, 1), min(cols - 1, step * cols // max(total, 1)) + 1):
                row[c] = 1
        elif t is ev.TaskBegin:
            out.task_spans[e.task] = (step, None)
        elif t is ev.TaskEnd and e.task in out.task_spans:
            out.task_spans[e.task] = (out.task_spans[e.task][0], step)
        if is_problem(e):
            out.problems.append(step)
    return out

