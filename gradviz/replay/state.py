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
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from gradviz.trace import events as ev

# "arriving" and "ready" are the moments inside one engine action (torch's evaluate_function): a
# gradient is on its way into the node's InputBuffer (dependency count dropped, buffer being filled)
# but the node is not parked or queued yet; then it has all its gradients and is about to be pushed.
NODE_STATES = (
    "unreached", "pruned", "arriving", "parked", "ready", "queued", "running", "done", "released", "error",
)  # fmt: skip
_WAITING = ("arriving", "parked", "ready", "queued")
SLOT_STATES = ("missing", "set", "accumulated", "undefined")


class NodeState(NamedTuple):
    id: int
    name: str
    num_inputs: int
    sequence_nr: int
    state: str = "unreached"
    task: int | None = None  # the task the state refers to
    queue: int | None = None  # queued: the ready queue it sits in
    tid: int | None = None  # running: the thread running it
    depth: int | None = None  # running: reentrant depth of that thread
    filled: int = 0  # parked/queued: InputBuffer slots holding a gradient (set/accumulated/undefined)
    runs: int = 0  # how many times it started running, over the whole trace


class SlotState(NamedTuple):
    """One InputBuffer slot. ``accumulated`` means ``contributions`` (>= 2) gradients were summed."""

    state: str  # one of SLOT_STATES
    contributions: int = 0
    producers: tuple[int | None, ...] = ()  # node that sent each contribution; None = a root


MISSING = SlotState("missing")


class BufferState(NamedTuple):
    node: int
    slots: tuple[SlotState, ...]
    parked: bool = False  # in the task's not_ready map
    remaining: int | None = None  # dependencies still missing, as of the last park/decrement

    @property
    def filled(self) -> int:
        return sum(1 for s in self.slots if s.state != "missing")


class QueueEntry(NamedTuple):
    task: int | None
    node: int | None
    what: str  # "node", "wakeup" or "shutdown"
    priority: tuple[int, int, int]  # (cls, reentrant_depth, sequence_nr)
    pushed: int  # seq of the push event; breaks ties, earliest first

    def sort_key(self) -> tuple[int, int, int, int]:
        # torch's CompareNodeTaskTime: shutdown < wakeup < node, deeper first, newer seq first.
        cls, depth, seqnr = self.priority
        return (cls, -depth, -seqnr, self.pushed)


class QueueState:
    """A ready queue. ``entries`` is in pop order: ``entries[0]`` pops next."""

    __slots__ = ("id", "device", "owner", "name", "entries", "pushes", "pops", "max_size")

    def __init__(self, id: int, device: str, owner: int | None, name: str) -> None:
        self.id = id
        self.device = device
        self.owner = owner
        self.name = name
        self.entries: list[QueueEntry] = []
        self.pushes = 0
        self.pops = 0
        self.max_size = 0

    def copy(self) -> QueueState:
        q = QueueState(self.id, self.device, self.owner, self.name)
        q.entries = list(self.entries)
        q.pushes, q.pops, q.max_size = self.pushes, self.pops, self.max_size
        return q

    def __repr__(self) -> str:
        return f"<QueueState {self.id} {self.name} {len(self.entries)} entries>"


class Frame(NamedTuple):
    task: int
    node: int
    depth: int


class ThreadState(NamedTuple):
    tid: int
    name: str
    role: str  # "caller", "device_worker" or "reentrant_pool"
    device: str | None
    frames: tuple[Frame, ...] = ()  # nodes running on this thread, outermost first (reentrancy nests)
    tasks: tuple[int, ...] = ()  # graph tasks this thread drives, outermost first
    alive: bool = True

    @property
    def running(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    @property
    def depth(self) -> int:
        """Reentrant depth of what the thread runs now (0 when idle or at top level)."""
        return self.frames[-1].depth if self.frames else 0


class ErrorInfo(NamedTuple):
    seq: int
    step: int  # the step at which the error event has been applied
    task: int | None
    node: int | None
    type: str
    message: str
    kind: str = "error"  # "error" or "anomaly"


class CapturedInfo(NamedTuple):
    node: int
    input_nr: int
    stats: ev.Stats | None


class TaskState:
    """A GraphTask. Mutable, but copied before the first write after a snapshot (see module doc)."""

    __slots__ = (
        "_gen", "id", "owner", "cpu_queue", "reentrant_depth", "roots", "graph_root", "keep_graph",
        "create_graph", "accumulate_grad", "outputs", "status", "error", "outstanding", "deps",
        "needed", "captures", "buffers", "captured", "errors", "begin_step", "end_step", "pooled",
        "runner", "executed",
    )  # fmt: skip

    def __init__(self, gen: object, e: ev.TaskBegin, step: int) -> None:
        self._gen = gen
        self.id = e.task
        self.owner = e.owner
        self.cpu_queue = e.cpu_queue
        self.reentrant_depth = e.reentrant_depth
        self.roots = e.roots
        self.graph_root = e.graph_root
        self.keep_graph = e.keep_graph
        self.create_graph = e.create_graph
        self.accumulate_grad = e.accumulate_grad
        self.outputs = e.outputs
        self.status = "running"  # "running", "ok" or "error"
        self.error: str | None = None
        self.outstanding = 0  # node tasks pushed and not yet evaluated
        self.deps: dict[int, int] = {}  # node -> dependencies still to arrive
        self.needed: frozenset[int] | None = None  # exec_info; None = everything reachable runs
        self.captures: tuple[tuple[int, int, int], ...] = ()
        self.buffers: dict[int, BufferState] = {}  # InputBuffers filled and not yet popped
        self.captured: dict[int, CapturedInfo] = {}  # grad() output index -> what was captured
        self.errors: tuple[ErrorInfo, ...] = ()
        self.begin_step = step
        self.end_step: int | None = None
        self.pooled = False  # handed to the reentrant pool
        self.runner = e.owner  # thread driving it (the owner, or a pool thread)
        self.executed = 0  # nodes that finished running

    def _clone(self, gen: object) -> TaskState:
        t = object.__new__(TaskState)
        for name in TaskState.__slots__:
            setattr(t, name, getattr(self, name))
        t._gen = gen
        t.deps = dict(self.deps)
        t.buffers = dict(self.buffers)
        t.captured = dict(self.captured)
        return t

    @property
    def not_ready(self) -> dict[int, BufferState]:
        """Parked InputBuffers, in the order they were parked."""
        return {n: b for n, b in self.buffers.items() if b.parked}

    @property
    def waiting(self) -> dict[int, int]:
        """Nodes with dependencies still to arrive (count > 0)."""
        return {n: c for n, c in self.deps.items() if c > 0}

    def __repr__(self) -> str:
        return f"<TaskState {self.id} {self.status} outstanding={self.outstanding}>"


class CowMap(Mapping[int, Any]):
    """An int-keyed map whose copies share storage in chunks, copied on first write.

    Node and task ids are small and dense, so chunking by ``id >> SHIFT`` means a checkpoint
    duplicates only the chunks that changed since the previous one.
    """

    __slots__ = ("_chunks", "_owned", "_len")
    SHIFT = 8

    def __init__(self) -> None:
        self._chunks: dict[int, dict[int, Any]] = {}
        self._owned: set[int] = set()
        self._len = 0

    def copy(self) -> CowMap:
        m = CowMap()
        m._chunks = dict(self._chunks)
        m._len = self._len
        self._owned = set()  # both now share every chunk: neither may write in place
        return m

    def __getitem__(self, key: int) -> Any:
        chunk = self._chunks.get(key >> self.SHIFT)
        if chunk is None:
            raise KeyError(key)
        return chunk[key]

    def get(self, key: int, default: Any = None) -> Any:
        chunk = self._chunks.get(key >> self.SHIFT)
        return default if chunk is None else chunk.get(key, default)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, int):
            return False
        chunk = self._chunks.get(key >> self.SHIFT)
        return chunk is not None and key in chunk

    def __setitem__(self, key: int, value: Any) -> None:
        i = key >> self.SHIFT
        if i in self._owned:
            chunk = self._chunks[i]
        else:
            old = self._chunks.get(i)
            chunk = dict(old) if old else {}
            self._chunks[i] = chunk
            self._owned.add(i)
        if key not in chunk:
            self._len += 1
        chunk[key] = value

    def __iter__(self) -> Iterator[int]:
        for i in sorted(self._chunks):
            yield from sorted(self._chunks[i])

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"<CowMap {self._len} items>"


class EngineState:
    """Everything the engine holds after ``step`` events. Treat it as read-only outside this module.

    - ``nodes``: node id -> NodeState, every node created so far (a Mapping).
    - ``threads``: tid -> ThreadState.
    - ``queues``: queue id -> QueueState (``entries`` in pop order).
    - ``tasks``: task id -> TaskState (a Mapping; finished tasks stay, with their outcome).
    - ``errors``: every error and anomaly so far, in order.
    - ``last``: the event applied last (None at step 0).
    """

    __slots__ = ("_gen", "step", "last", "nodes", "threads", "queues", "tasks", "errors", "status")

    def __init__(self) -> None:
        self._gen = object()
        self.step = 0
        self.last: ev.Event | None = None
        self.nodes = CowMap()
        self.threads: dict[int, ThreadState] = {}
        self.queues: dict[int, QueueState] = {}
        self.tasks = CowMap()
        self.errors: tuple[ErrorInfo, ...] = ()
        self.status = "empty"  # "empty", "recording", or TraceEnd's status

    def copy(self) -> EngineState:
        s = object.__new__(EngineState)
        s._gen = object()
        self._gen = object()  # tasks shared with the copy must be cloned before self writes them
        s.step, s.last, s.errors, s.status = self.step, self.last, self.errors, self.status
        s.nodes = self.nodes.copy()
        s.tasks = self.tasks.copy()
        s.threads = dict(self.threads)
        s.queues = {q: qs.copy() for q, qs in self.queues.items()}
        return s

    def task(self, task_id: int) -> TaskState | None:
        return self.tasks.get(task_id)

    def running(self) -> dict[int, Frame]:
        """tid -> the frame each busy thread is running."""
        return {t: th.frames[-1] for t, th in self.threads.items() if th.frames}

    def node_name(self, node: int | None) -> str:
        if node is None:
            return "-"
        ns = self.nodes.get(node)
        return ns.name if ns is not None else f"node {node}"

    def _wtask(self, task_id: int) -> TaskState | None:
        """The task, writable: cloned first if a snapshot may share it."""
        t = self.tasks.get(task_id)
        if t is None:
            return None
        if t._gen is not self._gen:
            t = t._clone(self._gen)
            self.tasks[task_id] = t
        return t

    def __repr__(self) -> str:
        return f"<EngineState step {self.step}: {len(self.nodes)} nodes, {len(self.tasks)} tasks>"


# --- the fold ----------------------------------------------------------------------------------


_new_node = tuple.__new__  # NodeState from its 11 fields: _replace(**kw) cost half of a fold


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
                                        ns[10] if runs is None else runs))  # fmt: skip


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
    s.nodes[e.node] = NodeState(e.node, e.name, e.num_inputs, e.sequence_nr)


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
    # (retained) graph no longer describe this one.
    for node, _ in e.counts:
        ns = s.nodes.get(node)
        if ns is not None and (ns.task != e.task or ns.state != "unreached"):
            _node_state(s, node, "unreached", e.task)


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


def _on_dependency_decrement(s: EngineState, e: ev.DependencyDecrement) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    t.deps[e.node] = e.remaining
    b = t.buffers.get(e.node)
    if b is not None:
        t.buffers[e.node] = b._replace(remaining=e.remaining)
    _arriving(s, e.node, e.task, b.filled if b is not None else 0)


def _arriving(s: EngineState, node: int, task: int, filled: int) -> None:
    """A gradient reaches ``node`` in ``task``: unless already waiting there, it is now arriving."""
    ns = s.nodes.get(node)
    if ns is None:
        return
    if ns.state == "pruned" and ns.task == task:  # torch decrements, then skips it (exec_info)
        return
    if ns.state in _WAITING and ns.task == task:
        s.nodes[node] = ns._replace(filled=filled)
    else:
        _node_state(s, node, "arriving", task, filled=filled)


def _on_buffer_add(s: EngineState, e: ev.BufferAdd) -> None:
    t = s._wtask(e.task)
    if t is None:
        return
    b = t.buffers.get(e.node)
    if b is None:
        ns = s.nodes.get(e.node)
        n_in = max(ns.num_inputs if ns is not None else 1, e.slot + 1)
        b = BufferState(e.node, (MISSING,) * n_in, remaining=t.deps.get(e.node))
    slots = list(b.slots)
    while len(slots) <= e.slot:
        slots.append(MISSING)
    old = slots[e.slot]
    producers = old.producers + (e.producer,)
    if e.mode == "undefined":
        new = SlotState("undefined" if old.state in ("missing", "undefined") else old.state,
                        old.contributions, producers)
    elif old.state in ("missing", "undefined"):
        new = SlotState("set", 1, producers)
    else:  # a second gradient into the same slot is summed (InputBuffer::add)
        new = SlotState("accumulated", old.contributions + 1, producers)
    slots[e.slot] = new
    b = b._replace(slots=tuple(slots))
    t.buffers[e.node] = b
    _arriving(s, e.node, e.task, b.filled)


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
    q = _queue(s, e.queue, e.device)
    entry = QueueEntry(e.task, e.node, e.what, tuple(e.priority), e.seq)  # type: ignore[arg-type]
    key = entry.sort_key()
    entries = q.entries
    # Insert after every entry that pops before it: keeps pop order without a full sort.
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid].sort_key() <= key:
            lo = mid + 1
        else:
            hi = mid
    entries.insert(lo, entry)
    q.pushes += 1
    q.max_size = max(q.max_size, len(entries))
    if e.what == "node" and e.node is not None and e.task is not None:
        t = s._wtask(e.task)
        filled = 0
        if t is not None:
            t.outstanding += 1
            b = t.buffers.get(e.node)
            filled = b.filled if b is not None else 0
        _node_state(s, e.node, "queued", e.task, queue=e.queue, filled=filled)


def _on_queue_pop(s: EngineState, e: ev.QueuePop) -> None:
    q = _queue(s, e.queue, e.device)
    entries = q.entries
    for i, x in enumerate(entries):
        if x.what == e.what and x.node == e.node and x.task == e.task:
            del entries[i]
            break
    q.pops += 1
    if e.what != "node" or e.node is None or e.task is None:
        return
    t = s._wtask(e.task)
    if t is None:
        return
    t.buffers.pop(e.node, None)  # the buffer now belongs to the running node
    if t.needed is not None and e.node not in t.needed:
        # grad(): a captured-only node is evaluated (captured) without running.
        t.outstanding -= 1
        _node_state(s, e.node, "done", e.task)
    else:
        _node_state(s, e.node, "running", e.task, tid=e.tid, depth=t.reentrant_depth)


def _on_node_begin(s: EngineState, e: ev.NodeBegin) -> None:
    ns = s.nodes.get(e.node)
    runs = ns.runs + 1 if ns is not None else 1
    _node_state(s, e.node, "running", e.task, tid=e.tid, depth=e.depth, runs=runs)
    th = s.threads.get(e.tid)
    if th is None:
        th = ThreadState(e.tid, f"thread {e.tid}", "caller", None)
    s.threads[e.tid] = th._replace(frames=th.frames + (Frame(e.task, e.node, e.depth),))


def _on_node_end(s: EngineState, e: ev.NodeEnd) -> None:
    ns = s.nodes.get(e.node)
    state = "error" if e.status == "error" or (ns is not None and ns.state == "error") else "done"
    _node_state(s, e.node, state, e.task)
    th = s.threads.get(e.tid)
    if th is not None and th.frames:
        frames = list(th.frames)
        for i in range(len(frames) - 1, -1, -1):
            if frames[i].node == e.node and frames[i].task == e.task:
                del frames[i]
                break
        s.threads[e.tid] = th._replace(frames=tuple(frames))
    t = s._wtask(e.task)
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


def fold(events: Iterable[ev.Event], state: EngineState | None = None) -> EngineState:
    """Apply every event in order, starting from ``state`` (copied) or the empty state."""
    s = EngineState() if state is None else state.copy()
    handlers = _HANDLERS
    step = s.step
    e = s.last
    for e in events:  # apply(), inlined: a call an event is a third of a plain event's cost
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
    r = _replayers.get(trace)
    if r is not None and len(r) == len(trace.events):
        return r.state_at(step)
    step = max(0, min(step, len(trace.events)))
    s = _folded.get(trace)
    if s is None or s.step != step:
        s = fold(itertools.islice(trace.events, step))
        try:
            _folded[trace] = s
        except TypeError:  # not weakly referenceable: no cache
            pass
    return s
