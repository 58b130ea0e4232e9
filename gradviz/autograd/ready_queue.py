"""ReadyQueue and NodeTask (torch's ReadyQueue, NodeTask and CompareNodeTaskTime in engine.h).

Every node the engine runs travels through a ReadyQueue: pushed once its InputBuffer is ready,
popped by the one thread that serves the queue. The probe hears each push and pop inside the
queue's lock, with the size the queue has then, so a recording of the queue is the queue.
"""

from __future__ import annotations

import itertools
import sys
import threading
from typing import TYPE_CHECKING, Any

from gradviz.autograd import graph

if TYPE_CHECKING:
    from gradviz.autograd.graph import Node
    from gradviz.autograd.graph_task import GraphTask

_queue_ids = itertools.count(1)


class NodeTask:
    """One node to run for one graph task, with its gathered gradients (``inputs``: the
    InputBuffer's list, one slot per node input). ``fn`` None: a wake-up (or, with
    ``is_shutdown``, a device worker's shutdown).

    The task is held weakly, as torch's ``NodeTask::base_``: a NodeTask left in a queue after its
    caller gave up (an interrupt, a failed task) must not keep the GraphTask, its buffers and
    captured gradients alive. ``graph_task`` is None once the GraphTask is gone; ``task_id``
    still names it, so a recording of its pop names the task its push named.
    """

    __slots__ = ("_base", "fn", "inputs", "is_shutdown", "reentrant_depth", "task_id")

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


# Heap keys: one int per entry, so the sift loops compare ints. A node task is
# (reentrant_depth << 64) | sequence_nr; every wake-up gets _WAKE_KEY whatever its depth and every
# shutdown _SHUTDOWN_KEY, as CompareNodeTaskTime ranks them (it never looks at a wake-up's depth).
_WAKE_KEY = 1 << 192
_SHUTDOWN_KEY = 2 << 192


def _push_heap(keys: list[int], items: list, key: int, item: Any) -> None:
    """push_back then std::push_heap (libstdc++'s __push_heap): the new entry climbs while its
    parent ranks strictly lower, so among equal keys the earlier one stays above."""
    hole = len(keys)
    keys.append(key)
    items.append(item)
    while hole:
        parent = (hole - 1) >> 1
        pkey = keys[parent]
        if not pkey < key:
            break
        keys[hole] = pkey
        items[hole] = items[parent]
        hole = parent
    keys[hole] = key
    items[hole] = item


def _pop_heap(keys: list[int], items: list) -> Any:
    """std::pop_heap then pop_back, step for step as libstdc++'s __pop_heap and __adjust_heap do:
    the hole left at the top sinks to a leaf along the higher child (the right one unless the left
    ranks strictly higher), the last entry is put in it and climbs back. With no tie-breaker the
    order among equal keys is the heap's own: five equal keys pushed 1..5 pop as 1, 3, 5, 2, 4."""
    top = items[0]
    length = len(keys) - 1
    if length:
        vkey = keys[length]
        vitem = items[length]
        hole = child = 0
        while child < (length - 1) >> 1:
            child = 2 * (child + 1)
            if keys[child] < keys[child - 1]:
                child -= 1
            keys[hole] = keys[child]
            items[hole] = items[child]
            hole = child
        if not length & 1 and child == (length - 2) >> 1:
            child = 2 * (child + 1) - 1
            keys[hole] = keys[child]
            items[hole] = items[child]
            hole = child
        while hole:
            parent = (hole - 1) >> 1
            pkey = keys[parent]
            if not pkey < vkey:
                break
            keys[hole] = pkey
            items[hole] = items[parent]
            hole = parent
        keys[hole] = vkey
        items[hole] = vitem
    keys.pop()
    items.pop()
    return top


class ReadyQueue:
    """A priority queue of NodeTasks: shutdown first, then wake-ups, then deeper reentrant
    tasks, then higher sequence_nr (torch's CompareNodeTaskTime). As torch's std::priority_queue
    it is a binary heap with no tie-breaker: equal keys pop in the order libstdc++'s heap gives
    them (_push_heap, _pop_heap), which is what torch runs."""

    def __init__(self, device: str, name: str, owner: int | None = None, announce: bool = True):
        self.id = next(_queue_ids)
        self.device = device
        self.name = name
        # Ident of the thread that pops from it (pool threads standing in for a blocked owner
        # pop too). Set once, before the queue is announced to the probe or used.
        self.owner = owner
        # _lock (through _not_empty) protects: _keys, _items (the heap, as two parallel lists),
        # _waiting.
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._keys: list[int] = []
        self._items: list[NodeTask] = []
        # Threads asleep in pop(): push notifies only when there is one (Condition.notify costs
        # half a microsecond even with no waiter).
        self._waiting = 0
        if announce:
            self.announce()

    def announce(self) -> None:
        probe = graph._ENGINE.probe
        if probe is not None:
            probe.queue_created(self)

    def push(self, item: NodeTask, increment_outstanding: bool = True) -> None:
        """Queue ``item``. ``increment_outstanding=False``: the caller has already counted it
        in its task's outstanding_tasks (torch's push(item, incrementOutstandingTasks))."""
        fn = item.fn
        if item.is_shutdown:
            key = _SHUTDOWN_KEY
        elif fn is None:
            key = _WAKE_KEY
        else:
            key = item.reentrant_depth << 64 | fn.sequence_nr
        if increment_outstanding:
            gt = item.graph_task
            if gt is not None:
                # Counted before the task is visible to pop(); never nest task.mutex in _lock.
                with gt.mutex:
                    gt.outstanding_tasks += 1
        with self._lock:
            _push_heap(self._keys, self._items, key, item)
            probe = graph._ENGINE.probe
            if probe is not None:
                probe.queue_push(self, item, len(self._keys))
            if self._waiting:
                self._not_empty.notify()

    def push_ready(self, item: NodeTask, told: tuple | None) -> None:
        """Queue a node's NodeTask that its caller made ready and counted in outstanding_tasks.
        ``told``: (task, by, slot, gradient, mode, not_ready) of the gradient that made it ready;
        the probe hears it with the push, as one step (Probe.gradient_in), with the queue's size
        after the push. None: nothing was recording when that gradient arrived."""
        key = item.reentrant_depth << 64 | item.fn.sequence_nr  # type: ignore[union-attr]
        with self._lock:
            keys = self._keys
            if keys:
                _push_heap(keys, self._items, key, item)
            else:
                # Onto an empty queue (a chain of nodes, each making the next ready): the heap's
                # push is then an append, without the call.
                keys.append(key)
                self._items.append(item)
            probe = graph._ENGINE.probe
            if probe is not None:
                if told is None:
                    probe.queue_push(self, item, len(self._keys))
                else:
                    task, by, slot, grad, mode, took = told
                    probe.gradient_in(task, item.fn, by, slot, grad, mode, 0, took, self, len(self._keys))
            if self._waiting:
                self._not_empty.notify()

    def push_shutdown(self) -> None:
        self.push(NodeTask(None, None, [], is_shutdown=True), increment_outstanding=False)

    def pop(self) -> NodeTask:
        with self._lock:
            keys = self._keys
            if not keys:
                self._wait()
            if len(keys) == 1:
                # The queue's only entry (a chain of nodes): the heap's pop is a pop_back.
                keys.pop()
                item = self._items.pop()
            else:
                item = _pop_heap(keys, self._items)
            probe = graph._ENGINE.probe
            if probe is not None:
                try:
                    probe.queue_pop(self, item, len(self._keys))
                except Exception:  # noqa: BLE001
                    # The item is already off the heap: raising here would lose it, and its task
                    # would wait forever. A failing probe is reported, never fatal to backward.
                    sys.excepthook(*sys.exc_info())
            return item

    def _wait(self) -> None:
        """Sleep until the heap has an entry (called, and returning, with _lock held). Its own
        frame: a signal here may interrupt the wait, while one anywhere else in push or pop is
        held back until the step and its event are both done (trace.recorder.in_recorder)."""
        while not self._keys:
            self._waiting += 1
            try:
                self._not_empty.wait()
            finally:
                self._waiting -= 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def __repr__(self) -> str:
        return f"<ReadyQueue {self.name} ({len(self)} tasks)>"
