"""The records of the engine's state (``gradviz.replay.state``'s fold builds and updates them).

Split out of state.py; ``gradviz.replay.state`` re-exports every name.
"""

from __future__ import annotations

import heapq
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, NamedTuple

from gradviz.trace import events as ev

# "arriving" and "ready" are the moments inside one engine action (torch's evaluate_function): a
# gradient is on its way into the node's InputBuffer (dependency count dropped, buffer being filled)
# but the node is not parked or queued yet; then it has all its gradients and is about to be pushed.
NODE_STATES = (
    "unreached", "pruned", "arriving", "parked", "ready", "queued", "running", "done", "released", "error",
)
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
        slots = self.slots
        if len(slots) == 1:  # most nodes: a fold asks this twice a gradient
            return 0 if slots[0][0] == "missing" else 1
        return sum(1 for s in slots if s.state != "missing")


class QueueEntry(NamedTuple):
    task: int | None
    node: int | None
    what: str  # "node", "wakeup" or "shutdown"
    priority: tuple[int, int, int]  # (cls, reentrant_depth, sequence_nr)
    pushed: int  # seq of the push event

    def rank(self) -> tuple[int, int, int]:
        # torch's CompareNodeTaskTime: shutdown < wakeup < node, deeper first, newer seq first
        # (smaller ranks first). No tie-breaker: equal ranks pop in the heap's own order.
        cls, depth, seqnr = self.priority
        return (cls, -depth, -seqnr)


class HeapItem:
    """A queue entry in the heap, compared as torch's std::priority_queue compares NodeTasks:
    by rank alone, so heapq makes the moves libstdc++'s heap makes (as the engine's ReadyQueue,
    gradviz/autograd/ready_queue.py) and equal ranks pop in the order the engine popped them."""

    __slots__ = ("entry", "rank")

    def __init__(self, entry: QueueEntry) -> None:
        self.entry = entry
        self.rank = entry.rank()

    def __lt__(self, other: HeapItem) -> bool:
        return self.rank < other.rank


class QueueState:
    """A ready queue: a binary heap laid out as the engine's (``heap``); ``entries`` is its
    contents in pop order, ``entries[0]`` pops next."""

    __slots__ = ("id", "device", "owner", "name", "heap", "pushes", "pops", "max_size")

    def __init__(self, id: int, device: str, owner: int | None, name: str) -> None:
        self.id = id
        self.device = device
        self.owner = owner
        self.name = name
        self.heap: list[HeapItem] = []
        self.pushes = 0
        self.pops = 0
        self.max_size = 0

    def push(self, entry: QueueEntry) -> None:
        heapq.heappush(self.heap, HeapItem(entry))

    def remove(self, task: int | None, node: int | None, what: str) -> None:
        """Take out the entry a pop names: the heap's top, as the engine pops (another entry only
        where the recording says so: then the rest is heaped anew)."""
        heap = self.heap
        for i, item in enumerate(heap):
            x = item.entry
            if x.what == what and x.node == node and x.task == task:
                if i == 0:
                    heapq.heappop(heap)
                else:
                    del heap[i]
                    heapq.heapify(heap)
                return

    @property
    def entries(self) -> list[QueueEntry]:
        heap = list(self.heap)
        return [heapq.heappop(heap).entry for _ in range(len(heap))]

    def __len__(self) -> int:
        return len(self.heap)

    def copy(self) -> QueueState:
        q = QueueState(self.id, self.device, self.owner, self.name)
        q.heap = list(self.heap)
        q.pushes, q.pops, q.max_size = self.pushes, self.pops, self.max_size
        return q

    def __repr__(self) -> str:
        return f"<QueueState {self.id} {self.name} {len(self.heap)} entries>"


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
    )

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
    SHIFT = 8  # written as the literal in the methods: a class attribute read a call was a tenth of a fold

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
        chunk = self._chunks.get(key >> 8)
        if chunk is None:
            raise KeyError(key)
        return chunk[key]

    def get(self, key: int, default: Any = None) -> Any:
        chunk = self._chunks.get(key >> 8)
        return default if chunk is None else chunk.get(key, default)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, int):
            return False
        chunk = self._chunks.get(key >> 8)
        return chunk is not None and key in chunk

    def __setitem__(self, key: int, value: Any) -> None:
        i = key >> 8
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


class FlatMap(dict):  # type: ignore[type-arg]
    """CowMap's interface over a plain dict, for a state folded once and not checkpointed
    (``fold`` from the empty state: replay --step, render --step): reads and writes are the
    dict's own, in C, where CowMap's two lookups in Python were a third of such a fold. Iterates
    in key order, as CowMap does; ``copy`` copies it all (a fold's result is rarely copied)."""

    __slots__ = ()

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(dict.keys(self)))

    def keys(self) -> KeysView[int]:  # type: ignore[override]
        return KeysView(self)

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        return _FlatValues(self)

    def items(self) -> ItemsView[int, Any]:  # type: ignore[override]
        return _FlatItems(self)

    def copy(self) -> FlatMap:  # type: ignore[override]
        return FlatMap(self)

    def __repr__(self) -> str:
        return f"<FlatMap {len(self)} items>"


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

    def __init__(self, *, flat: bool = False) -> None:
        self._gen = object()
        self.step = 0
        self.last: ev.Event | None = None
        self.nodes: Any = FlatMap() if flat else CowMap()  # flat: for one fold, no checkpoints (FlatMap)
        self.threads: dict[int, ThreadState] = {}
        self.queues: dict[int, QueueState] = {}
        self.tasks: Any = FlatMap() if flat else CowMap()
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


class _FlatValues(ValuesView):  # type: ignore[type-arg]
    """A FlatMap's values in key order, looked up in C: the views' own iteration, a Python
    step a key, was half of state_view's time over a 200k-node state (read twice)."""

    def __iter__(self) -> Iterator[Any]:
        m = self._mapping
        return map(dict.__getitem__.__get__(m), sorted(dict.keys(m)))  # type: ignore[attr-defined]


class _FlatItems(ItemsView):  # type: ignore[type-arg]
    """A FlatMap's items in key order (as _FlatValues)."""

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        m = self._mapping
        keys = sorted(dict.keys(m))
        return zip(keys, map(dict.__getitem__.__get__(m), keys))  # type: ignore[attr-defined]
