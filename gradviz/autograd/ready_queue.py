"""ReadyQueue and NodeTask (torch's ReadyQueue, NodeTask and CompareNodeTaskTime in engine.h).

Every node the engine runs travels through a ReadyQueue: pushed once its InputBuffer is ready,
popped by the one thread that serves the queue. The probe hears each push and pop inside the
queue's lock, with the size the queue has then, so a recording of the queue is the queue.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradviz.autograd.graph import Node
    from gradviz.autograd.graph_task import GraphTask

_queue_ids = itertools.count(1)
# Module globals: a compiled module caches a global's lookup, not a module attribute's.
_heappush, _heappop = heapq.heappush, heapq.heappop
# The engine whose probe hears the queues' pushes and pops: gradviz.autograd.engine sets it when
# it makes the engine (as graph._ENGINE), before any queue exists.
_ENGINE: Any = None


class NodeTask:
    """One node to run for one graph task, with its gathered gradients (``inputs``: the
    InputBuffer's list, one slot per node input). ``fn`` None: a wake-up (or, with
    ``is_shutdown``, a device worker's shutdown).

    The task is held weakly, as torch's ``NodeTask::base_``: a NodeTask left in a queue after its
    caller gave up (an interrupt, a failed task) must not keep the GraphTask, its buffers and
    captured gradients alive. ``graph_task`` is None once the GraphTask is gone; ``task_id``
    still names it, so a recording of its pop names the task its push named.
    """

    __slots__ = ("_base", "_key", "fn", "inputs", "is_shutdown", "reentrant_depth", "task_id")

    def __init__(self, graph_task: GraphTask | None, fn: Node | None, inputs: Any, is_shutdown: bool = False):
        if graph_task is not None:
            self._base = graph_task.weak_self  # one weak reference per GraphTask, made with it
            self.task_id = graph_task.id
            self.reentrant_depth = graph_task.reentrant_depth
        else:
            self._base = None
            self.task_id = None
            self.reentrant_depth = 0
        self.fn = fn
        self.inputs = inputs if type(inputs) is list else inputs.buffer  # an InputBuffer's list
        self.is_shutdown = is_shutdown
        # The heap key, made here from fields that never change (CompareNodeTaskTime ranks by
        # them alone): push and push_ready, once a node, only place the task.
        if is_shutdown:
            self._key = _SHUTDOWN_KEY
        elif fn is None:
            self._key = _WAKE_KEY
        else:
            self._key = self.reentrant_depth << 64 | fn.sequence_nr

    def __lt__(self, other: NodeTask) -> bool:
        # The ready queue's heap (heapq, a min-heap) pops first what ranks highest: "less" is
        # "ranks higher" under CompareNodeTaskTime (_key). No tie-breaker, as torch.
        return self._key > other._key

    @property
    def graph_task(self) -> GraphTask | None:
        return self._base() if self._base is not None else None

    def key(self) -> tuple[int, int, int]:
        """Priority (cls, depth, sequence_nr): see gradviz.trace.events for the order."""
        if self.is_shutdown:
            return (0, 0, 0)
        if self.fn is None:
            return (1, self.reentrant_depth, 0)
        return (2, self.reentrant_depth, self.fn.sequence_nr)


# Heap keys (NodeTask._key): one int per entry. A node task is (reentrant_depth << 64) |
# sequence_nr; every wake-up gets _WAKE_KEY whatever its depth and every shutdown _SHUTDOWN_KEY, as
# CompareNodeTaskTime ranks them (it never looks at a wake-up's depth).
_WAKE_KEY = 1 << 192
_SHUTDOWN_KEY = 2 << 192


def _push_heap(heap: list[NodeTask], item: NodeTask) -> None:
    """push_back then std::push_heap: libstdc++'s __push_heap lets the new entry climb while its
    parent ranks strictly lower; heapq.heappush's sift does the same moves, NodeTask.__lt__
    standing for "ranks higher", so among equal keys the earlier one stays above."""
    heapq.heappush(heap, item)


def _pop_heap(heap: list[NodeTask]) -> NodeTask:
    """std::pop_heap then pop_back. libstdc++'s __pop_heap and __adjust_heap sink the hole left at
    the top to a leaf along the higher child (the right one unless the left ranks strictly
    higher), put the last entry in it and let it climb back; heapq.heappop's sift makes the same
    moves (its right child unless the left is strictly less). With no tie-breaker the order
    among equal keys is the heap's own: five equal keys pushed 1..5 pop as 1, 3, 5, 2, 4
    (tests/engine/test_engine_heap_order.py checks it against g++'s std::priority_queue)."""
    return heapq.heappop(heap)


class ReadyQueue:
    """A priority queue of NodeTasks: shutdown first, then wake-ups, then deeper reentrant
    tasks, then higher sequence_nr (torch's CompareNodeTaskTime). As torch's std::priority_queue
    it is a binary heap with no tie-breaker: equal keys pop in the order libstdc++'s heap gives
    them (_push_heap, _pop_heap: heapq on NodeTask.__lt__), which is what torch runs."""

    def __init__(self, device: str, name: str, owner: int | None = None, announce: bool = True):
        self.id = next(_queue_ids)
        self.device = device
        self.name = name
        # Ident of the thread that pops from it (pool threads standing in for a blocked owner
        # pop too). Set once, before the queue is announced to the probe or used.
        self.owner = owner
        # _lock (through _not_empty) protects: _heap, _waiting.
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._heap: list[NodeTask] = []
        # Threads asleep in pop(): push notifies only when there is one (Condition.notify costs
        # half a microsecond even with no waiter).
        self._waiting = 0
        if announce:
            self.announce()

    def announce(self) -> None:
        probe = _ENGINE.probe
        if probe is not None:
            probe.queue_created(self)

    def push(self, item: NodeTask, increment_outstanding: bool = True) -> None:
        """Queue ``item``. ``increment_outstanding=False``: the caller has already counted it
        in its task's outstanding_tasks (torch's push(item, incrementOutstandingTasks))."""
        if increment_outstanding:
            gt = item.graph_task
            if gt is not None:
                # Counted before the task is visible to pop(); never nest task.mutex in _lock.
                with gt.mutex:
                    gt.outstanding_tasks += 1
        with self._lock:
            heap = self._heap
            heapq.heappush(heap, item)  # _push_heap
            probe = _ENGINE.probe
            if probe is not None:
                probe.queue_push(self, item, len(heap))
            if self._waiting:
                self._not_empty.notify()

    def push_ready(self, item: NodeTask, told: tuple | None) -> None:
        """Queue a node's NodeTask that its caller made ready and counted in outstanding_tasks.
        ``told``: (task, by, slot, gradient, mode, not_ready) of the gradient that made it ready;
        the probe hears it with the push, as one step (Probe.gradient_in), with the queue's size
        after the push. None: nothing was recording when that gradient arrived."""
        # acquire() and release() in a finally rather than `with`: the same locking without the
        # lookups and calls of __enter__ and __exit__ (push_ready and pop run once a node).
        lock = self._lock
        lock.acquire()
        try:
            heap = self._heap
            _heappush(heap, item)  # _push_heap
            probe = _ENGINE.probe
            if probe is not None:
                if told is None:
                    probe.queue_push(self, item, len(heap))
                else:
                    task, by, slot, grad, mode, took = told
                    probe.gradient_in(task, item.fn, by, slot, grad, mode, 0, took, self, len(heap))
            if self._waiting:
                self._not_empty.notify()
        finally:
            lock.release()

    def push_shutdown(self) -> None:
        self.push(NodeTask(None, None, [], is_shutdown=True), increment_outstanding=False)

    def pop(self) -> NodeTask:
        lock = self._lock
        lock.acquire()  # as push_ready's
        try:
            heap = self._heap
            if not heap:
                self._wait()
            item = _heappop(heap)  # _pop_heap
            probe = _ENGINE.probe
            if probe is not None:
                try:
                    probe.queue_pop(self, item, len(heap))
                except Exception:  # noqa: BLE001
                    # The item is already off the heap: raising here would lose it, and its task
                    # would wait forever. A failing probe is reported, never fatal to backward.
                    sys.excepthook(*sys.exc_info())
            return item
        finally:
            lock.release()

    def _wait(self) -> None:
        """Sleep until the heap has an entry (called, and returning, with _lock held). Its own
        frame: a signal here may interrupt the wait, while one anywhere else in push or pop is
        held back until the step and its event are both done (trace.recorder.in_recorder)."""
        while not self._heap:
            self._waiting += 1
            try:
                self._not_empty.wait()
            finally:
                self._waiting -= 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._heap)

    def __repr__(self) -> str:
        return f"<ReadyQueue {self.name} ({len(self)} tasks)>"
