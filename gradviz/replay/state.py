"""The engine's state after N events, as a pure fold over a trace.

Step numbering: **step N is the state after the first N events of the trace have been applied**
(``trace.events[:N]``). Step 0 is before anything happened; step ``len(trace)`` is the end.
The event "just applied" at step N is ``trace.events[N - 1]``. ``gradviz replay --step N``
and ``gradviz render --step N`` use the same numbering.

``apply(state, event)`` is the fold step. It mutates ``state`` in place and returns it, but every
piece of state that a snapshot (``state.copy()``) may share is copied before it is written, so a
snapshot never changes afterwards. That is what makes checkpoints safe and cheap: ``copy()`` costs
O(threads + queue entries + node-map chunks), not O(nodes), and only what changes after a
checkpoint is ever duplicated. ``Replayer`` keeps a snapshot every K events, so the state at any
step costs one copy plus at most K applications.

Node states (the same vocabulary as ``render --step``):

- ``unreached``: created, or part of a task whose gradient has not arrived yet.
- ``pruned``: reachable from the task's roots but exec_info says it will not run (grad()/inputs=).
- ``parked``: its InputBuffer waits in the task's not_ready map (some gradients, not all).
- ``queued``: in a ready queue (``queue`` set), or just taken from not_ready (``queue`` None).
- ``running``: popped by thread ``tid``, running at reentrant depth ``depth``.
- ``done``: finished (or, for a captured-only node of grad(), popped and captured).
- ``released``: done, and its saved tensors were freed (retain_graph=False).
- ``error``: it raised.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from typing import Any

from gradviz._gc import paused
from gradviz.replay.state_types import (  # noqa: F401  (re-exported: they lived here)
    _WAITING,
    MISSING,
    NODE_STATES,
    SLOT_STATES,
    BufferState,
    CapturedInfo,
    CowMap,
    EngineState,
    ErrorInfo,
    Frame,
    NodeState,
    QueueEntry,
    QueueState,
    SlotState,
    TaskState,
    ThreadState,
)
from gradviz.trace import events as ev

# --- the fold ----------------------------------------------------------------------------------


_new_node = tuple.__new__  # a state tuple from all its fields: _replace(**kw) cost half of a fold
_FRESH = NodeState(0, "", 0, 0)[4:]  # a created node's state fields, as NodeState's defaults


def _set_node(s: EngineState, node: int, **changes: Any) -> None:
    ns = s.nodes.get(node)
    if ns is None:  # a node the trace never declared (cut trace, foreign engine): invent it
        ns = NodeState(node, f"node {node}", 1, -1)
    s.nodes[node] = ns._replace(**changes)


def _node_state(s: EngineState, node: int, state: str, task: int | None, queue: int | None = None,
                tid: int | None = None, depth: int | None = None, filled: int = 0, runs: int | None = None) -> None:
    """Node ``node`` is now ``state`` in ``task``; queue, tid, depth and filled as given (else
    cleared), its name, inputs and run count kept (``runs`` if given)."""
    nodes = s.nodes
    ns = nodes.get(node)
    if ns is None:  # a node the trace never declared (cut trace, foreign engine): invent it
        ns = NodeState(node, f"node {node}", 1, -1)
    nodes[node] = _new_node(NodeState, (ns[0], ns[1], ns[2], ns[3], state, task, queue, tid, depth, filled,
                                        ns[10] if runs is None else runs))


def _on_thread_start(s: EngineState, e: ev.ThreadStart) -> None:
    s.threads[e.tid] = ThreadState(e.tid, e.name, e.role, e.device)


def _on_thread_end(s: EngineState, e: ev.ThreadEnd) -> None:
    th = s.threads.get(e.tid)
    if th is not None:
        s.threads[e.tid] = th._replace(alive=False, frames=(), tasks=())


def _queue(s: EngineState, qid: int, device: str) -> QueueState:
    q = s.queues.get(qid)
    if q is None:  # used before declared: tolerate, name it by device
        q = s.queues[qid] = QueueState(qid, device, None, device)
    return q


def _on_queue_created(s: EngineState, e: ev.QueueCreated) -> None:
    s.queues[e.queue] = QueueState(e.queue, e.device, e.owner, e.name)


def _on_node_created(s: EngineState, e: ev.NodeCreated) -> None:
    _created(s, e.node, e.name, e.num_inputs, e.sequence_nr)


def _created(s: EngineState, node: int, name: str, num_inputs: int, sequence_nr: int) -> None:
    s.nodes[node] = _new_node(NodeState, (node, name, num_inputs, sequence_nr, *_FRESH))


def _on_task_begin(s: EngineState, e: ev.TaskBegin) -> None:
    s.tasks[e.task] = TaskState(s._gen, e, s.step)
    _thread_add_task(s, e.tid, e.task)


def _thread_add_task(s: EngineState, tid: int, task: int) -> None:
    th = s.threads.get(tid)
    if th is None:
        th = ThreadState(tid, f"thread {tid}", "caller", None)
    s.threads[tid] = th._replace(tasks=th.tasks + (task,))


def _thread_drop_task(s: EngineState, tid: int, task: int) -> None:
    th = s.threads.get(tid)
    if th is not None and task in th.tasks:
        tasks = list(th.tasks)
        tasks.reverse()
        tasks.remove(task)  # innermost occurrence
        tasks.reverse()
        s.threads[tid] = th._replace(tasks=tuple(tasks))


def _on_task_end(s: EngineState, e: ev.TaskEnd) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    t.status, t.error, t.end_step = e.status, e.error, s.step
    _thread_drop_task(s, t.runner, e.task)
    if t.runner != e.tid:
        _thread_drop_task(s, e.tid, e.task)


def _on_dependencies(s: EngineState, e: ev.Dependencies) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    t.deps = dict(e.counts)
    # A new task makes its graph fresh: states from an earlier backward over the same
    # (retained) graph no longer describe this one. (_node_state inlined: a call a node of a
    # 200k-node task.)
    nodes, task = s.nodes, e.task
    for node, _ in e.counts:
        ns = nodes.get(node)
        if ns is not None and (ns[5] != task or ns[4] != "unreached"):  # task, state
            nodes[node] = _new_node(NodeState, (ns[0], ns[1], ns[2], ns[3], "unreached", task, None, None, None, 0,
                                                ns[10]))


def _on_exec_info(s: EngineState, e: ev.ExecInfo) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    t.needed = frozenset(e.needed)
    t.captures = e.captured
    captured_nodes = {c[0] for c in e.captured}
    for node in t.deps:
        if node not in t.needed and node not in captured_nodes:
            _node_state(s, node, "pruned", e.task)


# Each handler of the kinds a backward is made of reads its event's fields and hands them to a
# function of the fields alone, which a lazy trace's line records also fold through
# (gradviz.replay.lines): the same state change either way.


def _on_dependency_decrement(s: EngineState, e: ev.DependencyDecrement) -> None:
    _decrement(s, e.task, e.node, e.remaining)


def _decrement(s: EngineState, task: int, node: int, remaining: int) -> None:
    t = s._wtask(task)
    if t is None:
        return
    t.deps[node] = remaining
    b = t.buffers.get(node)
    filled = 0
    if b is not None:
        t.buffers[node] = b = _new_node(BufferState, (b[0], b[1], b[2], remaining))  # _replace(remaining=)
        filled = b.filled
    _arriving(s, node, task, filled)


def _arriving(s: EngineState, node: int, task: int, filled: int) -> None:
    """A gradient reaches ``node`` in ``task``: unless already waiting there, it is now arriving.
    (NodeState read by index, and made whole: a call or two for each gradient of a fold.)"""
    nodes = s.nodes
    ns = nodes.get(node)
    if ns is None:
        return
    state = ns[4]
    if ns[5] == task:  # its task
        if state == "pruned":  # torch decrements, then skips it (exec_info)
            return
        if state in _WAITING:
            nodes[node] = _new_node(NodeState, (*ns[:9], filled, ns[10]))  # _replace(filled=)
            return
    nodes[node] = _new_node(NodeState, (ns[0], ns[1], ns[2], ns[3], "arriving", task, None, None, None, filled,
                                        ns[10]))


def _on_buffer_add(s: EngineState, e: ev.BufferAdd) -> None:
    _buffer_add(s, e.task, e.node, e.slot, e.mode, e.producer)


def _buffer_add(s: EngineState, task: int, node: int, slot: int, mode: str, producer: int | None) -> None:
    # Records made whole (_new_node) and read by index: their keyword-taking constructors cost
    # as much as the rest of this handler, run for each gradient of a fold.
    t = s._wtask(task)
    if t is None:
        return
    b = t.buffers.get(node)
    if b is None:
        ns = s.nodes.get(node)
        n_in = max(ns[2] if ns is not None else 1, slot + 1)  # num_inputs
        b = _new_node(BufferState, (node, (MISSING,) * n_in, False, t.deps.get(node)))
    slots = list(b[1])
    while len(slots) <= slot:
        slots.append(MISSING)
    old_state, contributions, producers = slots[slot]
    producers += (producer,)
    if mode == "undefined":
        new = (old_state if old_state != "missing" else "undefined", contributions, producers)
    elif old_state in ("missing", "undefined"):
        new = ("set", 1, producers)
    else:  # a second gradient into the same slot is summed (InputBuffer::add)
        new = ("accumulated", contributions + 1, producers)
    slots[slot] = _new_node(SlotState, new)
    b = _new_node(BufferState, (b[0], tuple(slots), b[2], b[3]))  # _replace(slots=)
    t.buffers[node] = b
    _arriving(s, node, task, b.filled)


def _on_not_ready_park(s: EngineState, e: ev.NotReadyPark) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    b = t.buffers.get(e.node)
    if b is None:
        ns = s.nodes.get(e.node)
        b = BufferState(e.node, (MISSING,) * (ns.num_inputs if ns is not None else 1))
    b = b._replace(parked=True, remaining=e.remaining)
    t.buffers[e.node] = b
    _node_state(s, e.node, "parked", e.task, filled=b.filled)


def _on_not_ready_take(s: EngineState, e: ev.NotReadyTake) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    b = t.buffers.get(e.node)
    filled = 0
    if b is not None:
        b = b._replace(parked=False, remaining=0)
        t.buffers[e.node] = b
        filled = b.filled
    _node_state(s, e.node, "ready", e.task, filled=filled)


def _on_queue_push(s: EngineState, e: ev.QueuePush) -> None:
    _push(s, e.queue, e.device, e.task, e.node, e.what, e.priority, e.seq)


def _push(s: EngineState, queue: int, device: str, task: int | None, node: int | None, what: str,
          priority: Any, seq: int) -> None:
    q = _queue(s, queue, device)
    q.push(_new_node(QueueEntry, (task, node, what, tuple(priority), seq)))
    q.pushes += 1
    q.max_size = max(q.max_size, len(q.heap))
    if what == "node" and node is not None and task is not None:
        t = s._wtask(task)
        filled = 0
        if t is not None:
            t.outstanding += 1
            b = t.buffers.get(node)
            filled = b.filled if b is not None else 0
        _node_state(s, node, "queued", task, queue, None, None, filled)  # (queue, tid, depth, filled)


def _on_queue_pop(s: EngineState, e: ev.QueuePop) -> None:
    _pop(s, e.queue, e.device, e.task, e.node, e.what, e.tid)


def _pop(s: EngineState, queue: int, device: str, task: int | None, node: int | None, what: str, tid: int) -> None:
    q = _queue(s, queue, device)
    q.remove(task, node, what)
    q.pops += 1
    if what != "node" or node is None or task is None:
        return
    t = s._wtask(task)
    if t is None:
        return
    t.buffers.pop(node, None)  # the buffer now belongs to the running node
    if t.needed is not None and node not in t.needed:
        # grad(): a captured-only node is evaluated (captured) without running.
        t.outstanding -= 1
        _node_state(s, node, "done", task)
    else:
        _node_state(s, node, "running", task, None, tid, t.reentrant_depth)  # (queue, tid, depth)


def _on_node_begin(s: EngineState, e: ev.NodeBegin) -> None:
    _begin(s, e.node, e.task, e.tid, e.depth)


def _begin(s: EngineState, node: int, task: int, tid: int, depth: int) -> None:
    ns = s.nodes.get(node)
    runs = ns[10] + 1 if ns is not None else 1  # runs
    _node_state(s, node, "running", task, None, tid, depth, 0, runs)  # (queue, tid, depth, filled, runs)
    th = s.threads.get(tid)
    if th is None:
        th = ThreadState(tid, f"thread {tid}", "caller", None)
    s.threads[tid] = _new_node(ThreadState, (*th[:4], th[4] + (_new_node(Frame, (task, node, depth)),), th[5], th[6]))


def _on_node_end(s: EngineState, e: ev.NodeEnd) -> None:
    _end(s, e.node, e.task, e.tid, e.status)


def _end(s: EngineState, node: int, task: int, tid: int, status: str) -> None:
    ns = s.nodes.get(node)
    state = "error" if status == "error" or (ns is not None and ns[4] == "error") else "done"
    _node_state(s, node, state, task)
    th = s.threads.get(tid)
    if th is not None and th[4]:  # frames
        frames = th[4]
        top = frames[-1]
        if top[1] == node and top[0] == task:  # (task, node, depth): the innermost, as a rule
            frames = frames[:-1]
        else:
            rest = list(frames)
            for i in range(len(rest) - 2, -1, -1):
                f = rest[i]
                if f[1] == node and f[0] == task:
                    del rest[i]
                    break
            frames = tuple(rest)
        s.threads[tid] = _new_node(ThreadState, (*th[:4], frames, th[5], th[6]))  # _replace(frames=)
    t = s._wtask(task)
    if t is not None:
        t.outstanding -= 1
        t.executed += 1


def _on_saved_release(s: EngineState, e: ev.SavedRelease) -> None:
    ns = s.nodes.get(e.node)
    if ns is not None and ns.state == "done":
        s.nodes[e.node] = ns._replace(state="released")


def _on_captured_grad(s: EngineState, e: ev.CapturedGrad) -> None:
    t = s._wtask(e.task)
    if t is not None:
        t.captured[e.index] = CapturedInfo(e.node, e.input_nr, e.stats)


def _on_pool_push(s: EngineState, e: ev.PoolPush) -> None:
    t = s._wtask(e.task)
    if t is not None:
        t.pooled = True
        _thread_drop_task(s, t.runner, e.task)


def _on_pool_take(s: EngineState, e: ev.PoolTake) -> None:
    t = s._wtask(e.task)
    if t is not None:
        t.runner = e.tid
        _thread_add_task(s, e.tid, e.task)


def _on_error(s: EngineState, e: ev.Error) -> None:
    info = ErrorInfo(e.seq, s.step, e.task, e.node, e.type, e.message)
    s.errors = s.errors + (info,)
    if e.task is not None:
        t = s._wtask(e.task)
        if t is not None:
            t.errors = t.errors + (info,)
    if e.node is not None:
        _set_node(s, e.node, state="error")


def _on_anomaly(s: EngineState, e: ev.Anomaly) -> None:
    info = ErrorInfo(e.seq, s.step, e.task, e.node, "Anomaly", e.message, kind="anomaly")
    s.errors = s.errors + (info,)
    t = s._wtask(e.task)
    if t is not None:
        t.errors = t.errors + (info,)


def _on_trace_begin(s: EngineState, e: ev.TraceBegin) -> None:
    s.status = "recording"


def _on_trace_end(s: EngineState, e: ev.TraceEnd) -> None:
    s.status = e.status


_HANDLERS: dict[type, Any] = {
    ev.TraceBegin: _on_trace_begin,
    ev.TraceEnd: _on_trace_end,
    ev.ThreadStart: _on_thread_start,
    ev.ThreadEnd: _on_thread_end,
    ev.QueueCreated: _on_queue_created,
    ev.NodeCreated: _on_node_created,
    ev.TaskBegin: _on_task_begin,
    ev.TaskEnd: _on_task_end,
    ev.Dependencies: _on_dependencies,
    ev.ExecInfo: _on_exec_info,
    ev.DependencyDecrement: _on_dependency_decrement,
    ev.QueuePush: _on_queue_push,
    ev.QueuePop: _on_queue_pop,
    ev.BufferAdd: _on_buffer_add,
    ev.NotReadyPark: _on_not_ready_park,
    ev.NotReadyTake: _on_not_ready_take,
    ev.NodeBegin: _on_node_begin,
    ev.NodeEnd: _on_node_end,
    ev.SavedRelease: _on_saved_release,
    ev.CapturedGrad: _on_captured_grad,
    ev.PoolPush: _on_pool_push,
    ev.PoolTake: _on_pool_take,
    ev.Error: _on_error,
    ev.Anomaly: _on_anomaly,
}


def apply(state: EngineState, event: ev.Event) -> EngineState:
    """Apply one event: ``state`` becomes the state one step later (and is returned).

    Events that change nothing the state tracks (edges, hooks, callbacks, ...) only advance
    ``step``. Unknown event types are ignored so newer traces still replay.
    """
    # Step first: handlers stamp what they record (errors, task ends) with the step being reached.
    state.step += 1
    state.last = event
    handler = _HANDLERS.get(type(event))
    if handler is not None:
        handler(state, event)
    return state


def fold(events: Iterable[Any], state: EngineState | None = None) -> EngineState:
    """Apply every event in order, starting from ``state`` (copied) or the empty state (whose
    maps are plain dicts: a fold from the start is one pass, with no checkpoints to share).

    A line record of a lazily loaded trace (``Trace.fold_events``) among the events stands for
    its events, applied from its fields (``gradviz.replay.lines``); the last item is an event,
    the state's ``last``."""
    from gradviz.replay.lines import by_type

    s = EngineState(flat=True) if state is None else state.copy()
    handlers = _HANDLERS
    lines = by_type()
    step = s.step
    e = s.last
    # The cyclic GC paused: a fold makes an object or more an event (a 1M-event trace's half: a
    # third of its time went to collections walking the trace's objects again and again), and
    # a state holds no cycles.
    with paused():
        for e in events:  # apply(), inlined: a call an event is a third of a plain event's cost
            line = lines.get(type(e))
            if line is not None:  # (its handlers read no step)
                step = line(s, e, step)
                continue
            step += 1
            handler = handlers.get(type(e))
            if handler is not None:
                s.step, s.last = step, e  # handlers read the step being reached
                handler(s, e)
    s.step, s.last = step, e
    return s


# --- random access -------------------------------------------------------------------------


class Replayer:
    """State at any step of one trace, from checkpoints taken every ``every`` events.

    Building it folds the whole trace once. ``state_at(n)`` then copies the nearest checkpoint
    at or before n and applies at most ``every - 1`` events, forward or backward alike.
    """

    def __init__(self, trace: Any, every: int | None = None) -> None:
        self.events: list[ev.Event] = list(trace.events) if hasattr(trace, "events") else list(trace)
        n = len(self.events)
        self.every = every if every is not None else max(512, min(4096, n // 256 or 1))
        self._checkpoints: list[EngineState] = []
        s = EngineState()
        self._checkpoints.append(s.copy())
        for i, e in enumerate(self.events, 1):
            apply(s, e)
            if i % self.every == 0:
                self._checkpoints.append(s.copy())
        self.final = s
        self._last: EngineState | None = None

    def __len__(self) -> int:
        return len(self.events)

    def state_at(self, step: int) -> EngineState:
        """The state after the first ``step`` events (clamped to [0, len]). A fresh object."""
        step = max(0, min(step, len(self.events)))
        last = self._last
        if last is not None and 0 <= step - last.step < 8:
            s = last.copy()  # stepping forward one at a time: no need to go back to a checkpoint
        else:
            s = self._checkpoints[step // self.every].copy()
        for e in self.events[s.step:step]:
            apply(s, e)
        self._last = s.copy()
        return s


_replayers: weakref.WeakKeyDictionary[Any, Replayer] = weakref.WeakKeyDictionary()


def replayer(trace: Any) -> Replayer:
    """The Replayer of a Trace, built once and kept as long as the trace lives."""
    r = _replayers.get(trace)
    if r is None or len(r) != len(trace.events):
        r = _replayers[trace] = Replayer(trace)
    return r


def state_at(trace: Any, step: int) -> EngineState:
    """The engine's state after the first ``step`` events of ``trace`` (see module doc).

    ``trace`` is a ``gradviz.trace.model.Trace`` (or anything with ``.events``). Repeated calls
    on one trace share checkpoints, so any step comes back fast after the first call.
    """
    return replayer(trace).state_at(step)


_folded: weakref.WeakKeyDictionary[Any, EngineState] = weakref.WeakKeyDictionary()


def state_once(trace: Any, step: int) -> EngineState:
    """The state after the first ``step`` events, for a reader that wants one step (render
    --step): a plain fold, kept for the next call with the same step (each task of a multi-task
    render). Building ``state_at``'s checkpoints for the whole trace copied every task's maps
    hundreds of times (4 GB for a 200k-node task); a Replayer already built is used as is.
    Treat the result as read-only."""
    lazy = hasattr(trace, "iter_events")  # a Trace: events made as the fold reads them, if lazily loaded
    n = len(trace) if lazy else len(trace.events)
    r = _replayers.get(trace)
    if r is not None and len(r) == n:
        return r.state_at(step)
    step = max(0, min(step, n))
    s = _folded.get(trace)
    if s is None or s.step != step:
        s = fold(trace.fold_events(step) if lazy else itertools.islice(trace.events, step))
        try:
            _folded[trace] = s
        except TypeError:  # not weakly referenceable: no cache
            pass
    return s
