"""The engine: runs a backward graph the way torch's C++ engine does.

- ``Engine.execute`` makes a GraphTask, counts each node's dependencies, optionally marks which
  nodes must run (exec_info, for ``grad()`` and ``inputs=``), and pushes the root.
- CPU work runs on the calling thread, popping from its own ready queue (``thread_main``).
  Each non-CPU device (``virtual:N``, ``cuda:N``) has one long-lived worker thread and one ready
  queue; ``InputBuffer.device()`` picks where a ready node goes.
- A node's gradients gather in an InputBuffer; until all dependencies have arrived the buffer
  waits in the task's ``not_ready`` map.
- Backward called from inside a backward (reentrant) runs nested on the same thread up to
  ``max_recursion_depth`` (60, as torch; ``set_max_recursion_depth``), then moves to a pool
  thread that serves the owner's ready queue while the owner waits.
- ``Engine.shutdown`` stops device workers and pool threads (also at interpreter exit).

docs/engine.md describes the threads, the locks and how errors travel.

The probe (``Engine.probe``) hears every step; ``None`` when nothing records.
"""

from __future__ import annotations

import atexit
import heapq
import itertools
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd import _state, graph
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import anomaly
from gradviz.autograd.graph import Edge, GraphRoot, Node
from gradviz.autograd.probe import Probe
from gradviz.device import CPU as _CPU
from gradviz.device import set_thread_device

CPU_DEVICE = "cpu"
# torch: max_recursion_depth_ = MAX_DEPTH (60) before a reentrant task moves to the pool.
MAX_DEPTH = 60

_task_ids = itertools.count(1)
_queue_ids = itertools.count(1)


# -- InputBuffer -----------------------------------------------------------------------------


class InputBuffer:
    """The gradients arriving for one node, one slot per node input, summed as they come."""

    __slots__ = ("buffer", "owned")

    def __init__(self, size: int):
        self.buffer: list[Any] = [None] * size
        # Bit i set: slot i holds a gradient this buffer made its own by adding into it in
        # place; it stays the only holder (nothing hands out a buffer's contents before the
        # node runs), so later adds skip the ownership checks.
        self.owned = 0

    def add(self, pos: int, var: Any) -> str:
        """Put ``var`` in slot ``pos``; returns "set", "accumulate" or "undefined"."""
        if var is None:
            return "undefined"
        buffer = self.buffer
        old = buffer[pos]
        if old is None:
            buffer[pos] = var
            return "set"
        if self.owned >> pos & 1 and not _grad_state.enabled:
            od, vd = old._data, var._data
            # Dtypes by identity first: numpy's dtype == is a rich comparison (two calls).
            odt, vdt = od.dtype, vd.dtype
            if (odt is vdt or odt == vdt) and od.shape == vd.shape:
                od += vd
                return "accumulate"
        # In place only when the buffer is the first gradient's sole holder and no graph is being
        # built (torch's rule): a tensor the user may also hold (from a hook, a capture, a root
        # gradient) is never changed. References: the list, ``old``, getrefcount's argument.
        if (
            not _grad_state.enabled
            and sys.getrefcount(old) <= 3
            and ((odt := old._data.dtype) is (vdt := var._data.dtype) or odt == vdt)
            and old._data.shape == var._data.shape
            and graph.stealable(old)
        ):
            old._data += var._data
            self.owned |= 1 << pos
            return "accumulate"
        buffer[pos] = old + var
        return "accumulate"

    def device(self) -> str:
        """The first non-CPU device among the gradients; cpu if there is none."""
        return _buffer_device(self.buffer)

    def __len__(self) -> int:
        return len(self.buffer)


_new_input_buffer = object.__new__


def _buffer_device(grads: list) -> str:
    """InputBuffer.device() of a buffer's list."""
    for var in grads:
        if var is not None:
            dev = var.device
            if dev is not _CPU and dev.type != "cpu":
                return dev._str
    return CPU_DEVICE


# -- tasks and queues ------------------------------------------------------------------------


class NodeTask:
    """One node to run for one graph task, with its gathered gradients (``inputs``: the
    InputBuffer's list, one slot per node input; an InputBuffer given to the constructor is
    taken apart).

    The task is held weakly, as torch's ``NodeTask::base_``: a NodeTask left in a queue after its
    caller gave up (an error elsewhere, a late wake-up) must not keep the GraphTask, its buffers
    and captured gradients alive. ``graph_task`` is None once the GraphTask is gone.
    """

    __slots__ = ("_base", "fn", "inputs", "is_shutdown", "reentrant_depth")

    def __init__(self, graph_task: GraphTask | None, fn: Node | None, inputs: InputBuffer | list,
                 is_shutdown: bool = False):  # fmt: skip
        # One weak reference per GraphTask, made with it, shared by all its NodeTasks.
        self._base = graph_task.weak_self if graph_task is not None else None
        self.fn = fn
        self.inputs = inputs.buffer if type(inputs) is InputBuffer else inputs
        self.is_shutdown = is_shutdown
        self.reentrant_depth = graph_task.reentrant_depth if graph_task is not None else 0

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


_new_node_task = object.__new__


class ReadyQueue:
    """A priority queue of NodeTasks: shutdown first, then wake-ups, then deeper reentrant
    tasks, then higher sequence_nr (torch's CompareNodeTaskTime); ties in push order."""

    def __init__(self, device: str, name: str, owner: int | None = None, announce: bool = True):
        self.id = next(_queue_ids)
        self.device = device
        self.name = name
        # Ident of the thread that pops from it (pool threads standing in for a blocked owner
        # pop too). Set once, before the queue is announced to the probe or used.
        self.owner = owner
        # _lock (through _not_empty) protects: _heap, _count, _waiting.
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._heap: list[tuple] = []
        self._count = itertools.count()
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
        in its task's outstanding_tasks (under the task's mutex, which it may still hold)."""
        fn = item.fn
        # (cls, -depth, -sequence_nr, push order, item): shutdown first, then wake-ups, ...
        if item.is_shutdown:
            entry: tuple = (0, 0, 0, next(self._count), item)
        elif fn is None:
            entry = (1, -item.reentrant_depth, 0, next(self._count), item)
        else:
            entry = (2, -item.reentrant_depth, -fn.sequence_nr, next(self._count), item)
        if increment_outstanding:
            gt = item.graph_task
            if gt is not None:
                # Counted before the task is visible to pop(); never nest task.mutex in _lock.
                with gt.mutex:
                    gt.outstanding_tasks += 1
        with self._lock:
            heapq.heappush(self._heap, entry)
            probe = _ENGINE.probe
            if probe is not None:
                probe.queue_push(self, item, len(self._heap))
            if self._waiting:
                self._not_empty.notify()

    def push_counted(self, task: GraphTask, items: list[tuple] | tuple, skip: tuple | None = None,
                     quiet: bool = False) -> None:  # fmt: skip
        """Queue a NodeTask of ``task`` for each (fn, gradient list) pair of ``items`` but
        ``skip``, in order, in one lock section. The caller has counted them in the task's
        outstanding_tasks (under the task's mutex, which it may still hold). ``quiet``: the probe
        was already told of these pushes (evaluate_function kept them aside first)."""
        weak = task.weak_self
        depth = task.reentrant_depth
        key_depth = -depth
        heap = self._heap
        count = self._count
        pushed = 0
        lock = self._lock
        lock.acquire()
        try:
            for item in items:
                if item is skip:
                    continue
                fn = item[0]
                # A NodeTask as its __init__ makes one, without the call.
                node_task = _new_node_task(NodeTask)
                node_task._base = weak
                node_task.fn = fn
                node_task.inputs = item[1]
                node_task.is_shutdown = False
                node_task.reentrant_depth = depth
                heapq.heappush(heap, (2, key_depth, -fn.sequence_nr, next(count), node_task))
                pushed += 1
                if not quiet:
                    probe = _ENGINE.probe
                    if probe is not None:
                        probe.queue_push(self, node_task, len(heap))
            if self._waiting and pushed:
                self._not_empty.notify(pushed)
        finally:
            lock.release()

    def push_pending(self, task: GraphTask, pending: list[tuple], quiet: bool = False) -> None:
        """Queue, and empty, ``pending``: entries (2, -depth, -sequence_nr, push order, fn,
        gradients) of ``task`` that evaluate_function kept aside, counted in its
        outstanding_tasks, their push order taken from this queue's count when they became
        ready (so they rank as if pushed then). ``quiet``: the probe was told of these pushes
        when they became ready."""
        weak = task.weak_self
        depth = task.reentrant_depth
        heap = self._heap
        lock = self._lock
        lock.acquire()
        try:
            for entry in pending:
                node_task = _new_node_task(NodeTask)
                node_task._base = weak
                node_task.fn = entry[4]
                node_task.inputs = entry[5]
                node_task.is_shutdown = False
                node_task.reentrant_depth = depth
                heapq.heappush(heap, (entry[0], entry[1], entry[2], entry[3], node_task))
                if not quiet:
                    probe = _ENGINE.probe
                    if probe is not None:
                        probe.queue_push(self, node_task, len(heap))
            if self._waiting:
                self._not_empty.notify(len(pending))
        finally:
            pending.clear()
            lock.release()

    def push_shutdown(self) -> None:
        self.push(NodeTask(None, None, InputBuffer(0), is_shutdown=True), increment_outstanding=False)

    def pop(self) -> NodeTask:
        with self._lock:
            while not self._heap:
                self._waiting += 1
                try:
                    self._not_empty.wait()
                finally:
                    self._waiting -= 1
            item = heapq.heappop(self._heap)[4]
            probe = _ENGINE.probe
            if probe is not None:
                try:
                    probe.queue_pop(self, item, len(self._heap))
                except Exception:  # noqa: BLE001
                    # The item is already off the heap: raising here would lose it, and its task
                    # would wait forever. A failing probe is reported, never fatal to backward.
                    sys.excepthook(*sys.exc_info())
            return item

    def __len__(self) -> int:
        with self._lock:
            return len(self._heap)

    def __repr__(self) -> str:
        return f"<ReadyQueue {self.name} ({len(self)} tasks)>"


class ExecInfo:
    """Whether a node must run in a task with outputs, and which of its inputs are captured."""

    __slots__ = ("needed", "captures")

    def __init__(self) -> None:
        self.needed = False
        self.captures: list[tuple[int, int]] | None = None  # (input_nr, output index)

    def should_execute(self) -> bool:
        return self.needed or self.captures is not None


# _future_cond protects: every _Future's value, error, done and _waiters. One condition for all
# futures: completing one is frequent (every backward), waiting on one that is not yet done is
# rare (a task finishing on another thread), and a per-future Event cost 3 us to make.
_future_lock = threading.Lock()
_future_cond = threading.Condition(_future_lock)


class _Future:
    """Completes once, with captured gradients or an exception."""

    __slots__ = ("value", "error", "done", "_waiters")

    def __init__(self) -> None:
        self.value: list[Any] | None = None
        self.error: BaseException | None = None
        # True once value or error is set (read without the lock by the engine loop's check).
        self.done = False
        self._waiters = 0

    def completed(self) -> bool:
        return self.done

    def _complete(self, value: list[Any] | None, error: BaseException | None) -> None:
        # The condition's lock itself: Condition.__enter__/__exit__ are Python calls (every backward).
        with _future_lock:
            if self.done:
                return
            self.value, self.error = value, error
            self.done = True
            if self._waiters:
                _future_cond.notify_all()

    def mark_completed(self, value: list[Any]) -> None:
        self._complete(value, None)

    def set_error(self, exc: BaseException) -> None:
        self._complete(None, exc)

    def wait_done(self) -> None:
        if self.done:
            return
        with _future_cond:
            self._waiters += 1
            try:
                while not self.done:
                    _future_cond.wait()
            finally:
                self._waiters -= 1

    def wait(self) -> list[Any]:
        self.wait_done()
        if self.error is not None:
            raise self.error
        return self.value or []


_get_ident = threading.get_ident
_RLock = threading.RLock
_weakref = weakref.ref


class GraphTask:
    """The state of one backward call (Engine.execute) while it runs."""

    # Fields that keep their first value in almost every task are class-level defaults, set on
    # the instance only when they change: one GraphTask is made per backward, and W3's step pays
    # each store after a large matrix product, on cold caches.
    exit_on_error = False
    # The device the task's owner thread works for ("cpu" or a device).
    owner_device: str | None = None
    future_completed = False
    # Thread that runs post-processing (set once, with future_completed, under mutex).
    _post_processing_thread: int | None = None
    # Set when the task is handed to the reentrant pool; the pool thread sets it once it has
    # stopped serving the owner's queue for this task (see Engine.execute).
    pool_done: threading.Event | None = None
    # Replaced (never changed in place) by init_to_execute when the task has outputs.
    captured_vars: list[Any] | tuple = ()

    def __init__(self, keep_graph: bool, create_graph: bool, accumulate_grad: bool,
                 reentrant_depth: int, cpu_ready_queue: ReadyQueue, exit_on_error: bool = False):  # fmt: skip
        self.id = next(_task_ids)
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.accumulate_grad = accumulate_grad
        self.reentrant_depth = reentrant_depth
        if exit_on_error:
            self.exit_on_error = True
        self.cpu_ready_queue = cpu_ready_queue
        # The thread that made the task (its owner).
        self.owner: int = _get_ident()
        self.outputs: list[Edge] = []
        # mutex protects: outstanding_tasks, not_ready, dependencies, captured_vars,
        # has_error, future_completed, final_callbacks (torch guards the atomics separately);
        # evaluate_function's untold path takes it only once the task is shared (see shared).
        self.mutex = _RLock()
        self.outstanding_tasks = 0
        # Read for every node: instance fields (Python 3.11 specializes those reads, not those
        # of a class default through the instance).
        self.has_error = False
        # True once a thread other than the one running the task may run its nodes: set (under
        # mutex) before a NodeTask of the task first goes to a queue another thread serves (a
        # device's, or the owner's CPU queue from a device worker), and before the task goes to
        # the reentrant pool. Never set back. Until then only that one thread touches the fields
        # mutex protects (a pool thread standing in for a blocked owner runs after it, never
        # beside it), and evaluate_function's untold path leaves the mutex alone.
        self.shared = False
        self.not_ready: dict[Node, InputBuffer] = {}
        self.dependencies: dict[Node, int] = {}
        self.final_callbacks: list[Callable[[], None]] = []
        # Filled before the task starts, read-only afterwards: no lock needed.
        self.exec_info: dict[Node, ExecInfo] = {}
        self.future = _Future()
        # What NodeTasks hold (torch's weak base_), made once.
        self.weak_self = _weakref(self)

    def completed(self) -> bool:
        return self.outstanding_tasks == 0 or (self.exit_on_error and self.has_error)

    def init_to_execute(self, graph_root: Node, outputs: list[Edge], accumulate_grad: bool,
                        min_topo_nr: int) -> None:  # fmt: skip
        """Mark the nodes on a path from graph_root to an output as needed (iterative DFS)."""
        exec_info = self.exec_info
        output_idx = 0
        for edge in outputs:
            info = exec_info.setdefault(edge[0], ExecInfo())
            if accumulate_grad:
                info.needed = True
            else:
                if info.captures is None:
                    info.captures = []
                info.captures.append((edge[1], output_idx))
                output_idx += 1
        self.captured_vars = [None] * output_idx

        def should_execute(fn: Node) -> bool:
            info = exec_info.get(fn)
            return info is not None and info.should_execute()

        # Frames of (node, index of its next child to visit).
        stack: list[list] = [[graph_root, 0]]
        exec_info.setdefault(graph_root, ExecInfo())
        seen: set[Node] = set()
        while stack:
            frame = stack[-1]
            fn = frame[0]
            child = None
            edges = fn.next_edges
            while frame[1] < len(edges):
                candidate = edges[frame[1]][0]
                frame[1] += 1
                if candidate is None:
                    continue
                if candidate in seen:
                    if should_execute(candidate):
                        exec_info.setdefault(fn, ExecInfo()).needed = True
                    continue
                seen.add(candidate)
                child = candidate
                break
            if child is not None:
                if child.topological_nr < min_topo_nr:
                    continue  # made before the first output: no path to any output
                stack.append([child, 0])
            else:
                stack.pop()
                if should_execute(fn) and stack:
                    exec_info.setdefault(stack[-1][0], ExecInfo()).needed = True

    def set_exception(self, exc: BaseException, fn: Node | None) -> None:
        """Record the first error and complete the future with it (torch's set_exception).

        The remaining NodeTasks of this task are skipped as they are popped (has_error), so no
        new work is made; whoever drops outstanding_tasks to zero sends the owner its wake-up.
        Final callbacks do not run: future_completed is taken here, as torch does.
        """
        with self.mutex:
            first = not self.has_error
            self.has_error = True
            signal = not self.future_completed
            self.future_completed = True
        if first and anomaly.enabled and fn is not None and fn._metadata and "traceback_" in fn._metadata:
            warnings.warn(
                f"Error detected in {fn.name()}. Traceback of forward call that caused the error:\n"
                f"{fn._metadata['traceback_']}",
                stacklevel=2,
            )
        if signal:
            self.future.set_error(exc)

    def mark_as_completed_and_run_post_processing(self) -> None:
        captured = None
        with self.mutex:
            if self.future_completed:
                later = True
            else:
                later = False
                self.future_completed = True
                self._post_processing_thread = _get_ident()
                if not self.final_callbacks:
                    # Nothing left to queue a callback now (every node has run): the gradients
                    # captured can be taken here, without post-processing's second lock round.
                    captured = list(self.captured_vars)
        if later:
            # Another thread is completing it (or did): as torch, return only once the future is
            # done, so a caller seeing this task completed never finds its future still pending.
            # A callback of this very thread that ends up here must not wait for itself.
            if self._post_processing_thread != threading.get_ident():
                self.future.wait_done()
            return
        if captured is not None:
            self.future.mark_completed(captured)
            return
        try:
            self.exec_post_processing()
            with self.mutex:
                captured = list(self.captured_vars)
            self.future.mark_completed(captured)
        except BaseException as exc:  # a final callback failed: the caller sees it
            self.future.set_error(exc)

    def exec_post_processing(self) -> None:
        # Callbacks run with this task as the current one, so they may queue more callbacks
        # (torch's GraphTaskGuard); take them one at a time, since the list may grow meanwhile.
        tls = _state.tls
        prev = tls.current_graph_task
        tls.current_graph_task = self
        try:
            i = 0
            while True:
                with self.mutex:
                    if i >= len(self.final_callbacks):
                        break
                    cb = self.final_callbacks[i]
                probe = _ENGINE.probe
                if probe is not None:
                    probe.callback(self, cb)
                cb()
                i += 1
        finally:
            tls.current_graph_task = prev


# -- the reentrant thread pool ---------------------------------------------------------------


class ThreadPoolShared:
    """Graph tasks handed over past max_recursion_depth, and the pool threads waiting for them.

    Pool threads are made on demand and then kept, as torch keeps them; ``Engine.shutdown``
    bumps ``generation``, and a pool thread of an older generation leaves once it finds no task
    to take (it serves what is queued first, so a task handed over during a shutdown still runs).
    """

    def __init__(self) -> None:
        # mutex (through work) protects: num_workers, graphtasks_queue, generation, threads.
        self.mutex = threading.Lock()
        self.work = threading.Condition(self.mutex)
        # Pool threads waiting for work right now (not those running a task).
        self.num_workers = 0
        # Weak, as torch: a task whose owner gave up (its caller raised) is skipped.
        self.graphtasks_queue: deque[weakref.ref[GraphTask]] = deque()
        self.generation = 0
        self.threads: list[threading.Thread] = []


_pool_thread_ids = itertools.count(1)

# Stack size of the threads the engine starts (device workers and pool threads). Each of them
# nests up to max_recursion_depth reentrant backward calls, a dozen or so Python frames each plus
# the C frames of the calls between them. Python's recursion limit is per thread, and the pool
# exists to bound the depth per thread, so a fixed stack suffices; 16 MiB covers the default
# recursion limit with room to spare where the platform default is small (512 KiB for secondary
# threads on macOS). threading.stack_size is process-wide: set and restored under a lock.
THREAD_STACK_SIZE = 16 * 1024 * 1024
# _stack_size_lock protects: the process-wide threading.stack_size while an engine thread starts.
_stack_size_lock = threading.Lock()


def _start_thread(t: threading.Thread, stack_size: int) -> None:
    with _stack_size_lock:
        prev = threading.stack_size()
        try:
            threading.stack_size(stack_size)
        except (ValueError, RuntimeError):  # platform without settable stacks: keep the default
            t.start()
            return
        try:
            t.start()
        finally:
            threading.stack_size(prev)


# -- the engine ------------------------------------------------------------------------------


class Engine:
    """Runs backward graphs. One default instance per process: ``get_default_engine()``."""

    def __init__(self, max_recursion_depth: int = MAX_DEPTH) -> None:
        self.probe: Probe | None = None
        # True: with a probe, every node goes through the ReadyQueue (the general path), as the
        # engine did before its fast path told probes what it does. The tests' reference for
        # the fast path's order and events; never set otherwise.
        self._queue_only = False
        self._max_recursion_depth = MAX_DEPTH
        self.max_recursion_depth = max_recursion_depth
        # _device_lock protects: device_ready_queues, device_threads.
        self._device_lock = threading.Lock()
        self.device_ready_queues: dict[str, ReadyQueue] = {}
        self.device_threads: dict[str, threading.Thread] = {}
        self.thread_pool_shared = ThreadPoolShared()

    @property
    def max_recursion_depth(self) -> int:
        """Reentrant backward calls nested on one thread before the next goes to a pool thread."""
        return self._max_recursion_depth

    @max_recursion_depth.setter
    def max_recursion_depth(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"max_recursion_depth must be a non-negative int, got {value!r}")
        self._max_recursion_depth = value

    @property
    def pool_threads(self) -> list[threading.Thread]:
        """The reentrant pool threads alive now (a snapshot)."""
        shared = self.thread_pool_shared
        with shared.mutex:
            return list(shared.threads)

    def threads(self) -> list[threading.Thread]:
        """Every thread the engine started and that has not stopped: device workers and pool."""
        with self._device_lock:
            workers = list(self.device_threads.values())
        return [t for t in workers + self.pool_threads if t.is_alive()]

    # -- queues and threads
    def ready_queue(self, cpu_ready_queue: ReadyQueue, device: str) -> ReadyQueue:
        """CPU work goes to the task's own CPU queue; other devices to their worker's queue."""
        if device == CPU_DEVICE:
            return cpu_ready_queue
        return self._device_queue(device)

    def _device_queue(self, device: str) -> ReadyQueue:
        # Lock-free fast path: a dict read is atomic, and entries change only under the lock.
        q = self.device_ready_queues.get(device)
        if q is not None:
            return q
        with self._device_lock:
            q = self.device_ready_queues.get(device)
            if q is None:
                # Announced once its worker exists, so the probe hears its owner.
                q = ReadyQueue(device, device, announce=False)
                t = threading.Thread(target=self._thread_init, args=(device, q), name=f"gradviz-{device}", daemon=True)
                t.gv_role = "device_worker"  # type: ignore[attr-defined]
                t.gv_device = device  # type: ignore[attr-defined]
                self.device_ready_queues[device] = q
                self.device_threads[device] = t
                _start_thread(t, THREAD_STACK_SIZE)
                q.owner = t.ident
                q.announce()
        return q

    def _thread_init(self, device: str, queue: ReadyQueue) -> None:
        tls = _state.tls
        tls.worker_device = device
        tls.local_ready_queue = queue
        set_thread_device(device)
        probe = self.probe
        if probe is not None:
            probe.thread_start("device_worker", device)
        try:
            while True:
                try:
                    self.thread_main(None)
                    return  # a shutdown task
                except BaseException:  # noqa: BLE001
                    # Node errors never get here (thread_main gives them to their task). This
                    # is a failure outside any node, a probe's say: the worker must live on, or
                    # every task with work on this device would wait forever.
                    sys.excepthook(*sys.exc_info())
        finally:
            probe = self.probe
            if probe is not None:
                probe.thread_end()

    def _init_local_ready_queue(self) -> ReadyQueue:
        tls = _state.tls
        if tls.local_ready_queue is None:
            name = threading.current_thread().name
            tls.local_ready_queue = ReadyQueue(CPU_DEVICE, f"cpu@{name}", threading.get_ident())
        return tls.local_ready_queue

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Stop the device workers and the reentrant pool threads, and wait for them to end.

        Waits ``timeout`` seconds in all; returns True if every thread ended. Threads start again
        lazily when a later backward needs them. Call it while no backward runs: as in torch
        (which stops its workers only at exit), a worker in the middle of a node finishes that
        node first, and tasks still queued on a stopped device are not run.
        """
        with self._device_lock:
            queues = list(self.device_ready_queues.values())
            workers = list(self.device_threads.values())
            self.device_ready_queues.clear()
            self.device_threads.clear()
        shared = self.thread_pool_shared
        with shared.mutex:
            shared.generation += 1
            pool = list(shared.threads)
            shared.work.notify_all()
        for q in queues:
            q.push_shutdown()
        deadline = time.monotonic() + timeout
        me = threading.current_thread()
        for t in workers + pool:
            if t is not me:
                t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in workers + pool if t is not me)

    # -- the main entry point
    def execute(self, roots: list[Edge], inputs: list[Any], keep_graph: bool, create_graph: bool,
                accumulate_grad: bool, outputs: list[Edge] | None = None) -> list[Any]:  # fmt: skip
        outputs = outputs or []
        if len(roots) == 1 and len(inputs) == 1:
            # One root (loss.backward()): validate_outputs only when its gradient does not
            # already fit (shape, dtype and device objects of the root's input).
            grad = inputs[0]
            fn, nr = roots[0]
            if grad is not None and fn is not None:
                meta = fn.input_metadata[nr]
                if grad._data.shape != meta[0] or grad.dtype is not meta[1] or grad.device is not meta[2]:
                    validate_outputs(roots, inputs, _message_as_is)
            del grad, fn
        else:
            validate_outputs(roots, inputs, _message_as_is)
        tls = _state.tls
        local_queue = tls.local_ready_queue
        if local_queue is None:
            local_queue = self._init_local_ready_queue()
        not_reentrant = tls.worker_device is _state.NO_DEVICE
        task = GraphTask(
            keep_graph, create_graph, accumulate_grad,
            0 if not_reentrant else tls.total_depth + 1, local_queue,
        )  # fmt: skip
        task.outputs = outputs
        skip_dummy = len(roots) == 1
        graph_root = roots[0][0] if skip_dummy else GraphRoot(roots, inputs)
        probe = self.probe
        if probe is not None:
            if graph_root is not None and not skip_dummy:
                probe.node_created(graph_root)
            probe.task_begin(task, roots, None if skip_dummy else graph_root, outputs)
        min_topo_nr = compute_min_topological_nr(outputs) if outputs else 0
        compute_dependencies(graph_root, task, min_topo_nr)
        if probe is not None:
            probe.dependencies(task)
        if outputs:
            task.init_to_execute(graph_root, outputs, accumulate_grad, min_topo_nr)
            if probe is not None:
                probe.exec_info(task)
        if skip_dummy:
            # InputBuffer(n).add(nr, grad) on a fresh buffer, without the calls: the slot is empty,
            # so the gradient is set (or the slot stays undefined).
            buf = _new_input_buffer(InputBuffer)
            buf.buffer = slots = [None] * len(graph_root.input_metadata)
            buf.owned = 0
            grad = inputs[0]
            if grad is None:
                mode = "undefined"
            else:
                slots[roots[0][1]] = grad
                mode = "set"
            if probe is not None:
                probe.buffer_add(task, graph_root, roots[0][1], inputs[0], mode, None)
        else:
            buf = InputBuffer(0)
        try:
            future = self.execute_with_graph_task(task, graph_root, buf)
            try:
                return future.wait()
            finally:
                if task.pool_done is not None:
                    self._wait_for_pool_thread(task)
        except BaseException as exc:
            if exc is not task.future.error:
                # Interrupted while waiting (a KeyboardInterrupt in pop or in the wait on a
                # pool thread's work): stop the task's remaining work wherever it is queued.
                task.set_exception(exc, None)
                if task.pool_done is not None:
                    self._wait_for_pool_thread(task)
            raise
        finally:
            probe = self.probe
            if probe is not None:
                probe.task_end(task, task.future.error)

    def execute_with_graph_task(self, task: GraphTask, graph_root: Node, buf: InputBuffer) -> _Future:
        tls = _state.tls
        # ready_queue(task.cpu_ready_queue, buf.device()) without the two calls
        device = _buffer_device(buf.buffer)
        queue = task.cpu_ready_queue if device == CPU_DEVICE else self._device_queue(device)
        if tls.worker_device is _state.NO_DEVICE:
            # A call from user code: this thread drives CPU work until the task completes.
            tls.worker_device = CPU_DEVICE
            task.owner_device = CPU_DEVICE
            try:
                if queue is task.cpu_ready_queue and not queue._heap and self.probe is None:
                    # The root is what this thread's first pop() would return: it runs without
                    # the NodeTask and the queue's two lock sections. Counted without the task's
                    # mutex: no other thread knows the task yet.
                    task.outstanding_tasks += 1
                    self.thread_main(task, (graph_root, buf.buffer))
                else:
                    if queue is not task.cpu_ready_queue:
                        task.shared = True  # the root runs on a device's worker
                    queue.push(NodeTask(task, graph_root, buf))
                    self.thread_main(task)
            finally:
                tls.worker_device = _state.NO_DEVICE
        else:
            # Reentrant: called from inside a node running on this thread (worker_device says
            # which queue this thread serves). As torch: nest while current_depth is below the
            # limit, else hand the task to a pool thread and block on its future in execute().
            task.owner_device = tls.worker_device
            if queue is not tls.local_ready_queue or tls.current_depth >= self.max_recursion_depth:
                task.shared = True  # on another device's worker, or on a pool thread
            queue.push(NodeTask(task, graph_root, buf))
            if tls.current_depth >= self.max_recursion_depth:
                self.add_thread_pool_task(task)
            else:
                tls.total_depth += 1
                tls.current_depth += 1
                try:
                    self.thread_main(task)
                finally:
                    tls.current_depth -= 1
                    tls.total_depth -= 1
        return task.future

    def _wait_for_pool_thread(self, task: GraphTask) -> None:
        """Return once the pool thread that ran ``task`` has left the owner's queue.

        The pool thread pops from the owner's queue until it sees the task's future completed.
        A task that completes normally ends on the pool thread, or on a thread serving another
        device, which sends the owner's queue a wake-up: either way the pool thread leaves at
        once. A task that fails completes its future on whichever thread raised, while the pool
        thread may sleep on in pop() until the task's last queued work drains; left there it
        would take the owner's later work, and finish tasks without the wake-up their owner
        needs (it serves the owner's queue, so it sends none). So on an error the owner sends
        the wake-up itself. It carries on once the pool thread has gone.
        """
        done = task.pool_done
        assert done is not None
        if task.has_error and not done.is_set():
            owner_queue = self.ready_queue(task.cpu_ready_queue, task.owner_device or CPU_DEVICE)
            owner_queue.push(NodeTask(task, None, InputBuffer(0)))
        done.wait()

    def add_thread_pool_task(self, task: GraphTask) -> None:
        shared = self.thread_pool_shared
        probe = self.probe
        if probe is not None:
            probe.pool_push(task, _state.tls.total_depth)
        t = None
        with shared.mutex:
            # Workers already waiting may be too few for the tasks queued before this one.
            if shared.num_workers <= len(shared.graphtasks_queue):
                t = threading.Thread(
                    target=self._reentrant_thread_init, args=(shared.generation,),
                    name=f"gradviz-reentrant-{next(_pool_thread_ids)}", daemon=True,
                )  # fmt: skip
                t.gv_role = "reentrant_pool"  # type: ignore[attr-defined]
                t.gv_device = None  # type: ignore[attr-defined]
                shared.threads.append(t)
            task.pool_done = threading.Event()
            shared.graphtasks_queue.append(weakref.ref(task))
        if t is not None:
            _start_thread(t, THREAD_STACK_SIZE)
        with shared.mutex:
            # A new thread tests the queue before it waits, so this is safe either way.
            shared.work.notify()

    def _reentrant_thread_init(self, generation: int) -> None:
        shared = self.thread_pool_shared
        tls = _state.tls
        me = threading.current_thread()
        probe = self.probe
        if probe is not None:
            probe.thread_start("reentrant_pool", None)
        try:
            while True:
                with shared.mutex:
                    shared.num_workers += 1
                    while not shared.graphtasks_queue and shared.generation == generation:
                        shared.work.wait()
                    shared.num_workers -= 1
                    if not shared.graphtasks_queue:
                        return  # the engine shut down and nothing is left to serve
                    ref = shared.graphtasks_queue.popleft()
                task = ref()
                if task is None:
                    continue  # the task's owner gave up on it
                probe = self.probe
                if probe is not None:
                    probe.pool_take(task)
                owner = task.owner_device or CPU_DEVICE
                # Serve the owner's queue (its CPU queue, or its device's queue) as the owner
                # would: the owner itself is blocked on the task's future.
                tls.worker_device = owner
                tls.local_ready_queue = self.ready_queue(task.cpu_ready_queue, owner)
                tls.total_depth = task.reentrant_depth
                set_thread_device(owner)
                try:
                    self.thread_main(task)
                except BaseException as exc:  # noqa: BLE001 - a failure outside any node
                    task.set_exception(exc, None)
                finally:
                    tls.worker_device = _state.NO_DEVICE
                    tls.local_ready_queue = None
                    if task.pool_done is not None:
                        task.pool_done.set()  # the owner may now use its queue alone
                    del task
        finally:
            with shared.mutex:
                shared.threads.remove(me)
            probe = self.probe
            if probe is not None:
                probe.thread_end()

    # -- the worker loop
    def thread_main(self, graph_task: GraphTask | None, first: tuple | None = None) -> None:
        """Pop and run tasks until graph_task completes (until a shutdown task, for device
        workers, which pass None). ``first``: a (fn, gradient list) of graph_task, counted in its
        outstanding_tasks, that runs before the first pop, as if popped."""
        tls = _state.tls
        queue = tls.local_ready_queue
        grad_state = _grad_state
        # The current graph task and grad mode (create_graph) are set when a popped task belongs
        # to another graph task than the last one, not per node; the caller's are restored on
        # the way out, and before a task's completion runs its callbacks.
        prev_task, prev_grad = tls.current_graph_task, grad_state.enabled
        current = None
        future = graph_task.future if graph_task is not None else None
        try:
            while True:
                if future is not None and future.done:
                    break
                if first is None:
                    task = queue.pop()
                    if task.is_shutdown:
                        break
                    ref = task._base
                    local_task = ref() if ref is not None else None
                    if local_task is None:
                        continue  # its GraphTask is gone (the caller returned on an error): skip, as torch
                    fn, inputs = task.fn, task.inputs
                    del task
                else:
                    local_task = graph_task
                    fn, inputs = first
                    first = None
                if fn is not None and not local_task.has_error:
                    if local_task is not current:
                        current = local_task
                        tls.current_graph_task = local_task
                    # Inside the engine, grad mode is what the task asked for (create_graph);
                    # set per node, since a node may leave it changed.
                    grad_state.enabled = local_task.create_graph
                    # Runs fn and the successors this thread would pop next, decrements
                    # outstanding_tasks for each, and gives a node's error to the task itself.
                    done = self.evaluate_function(local_task, fn, inputs, local_task.cpu_ready_queue, queue)
                else:
                    done = self._decrement_outstanding(local_task)
                del fn, inputs
                if done:
                    tls.current_graph_task, grad_state.enabled = prev_task, prev_grad
                    current = None
                    local_task.mark_as_completed_and_run_post_processing()
                    # The owner may be asleep in pop() on its own queue: wake it so it sees the
                    # task completed. Not needed when this thread serves the owner's queue itself.
                    if tls.worker_device != local_task.owner_device:
                        owner_queue = self.ready_queue(local_task.cpu_ready_queue, local_task.owner_device)
                        owner_queue.push(NodeTask(local_task, None, InputBuffer(0)))
                elif graph_task is None and current is not None:
                    # A device worker serves many tasks and waits between them: it must not
                    # keep the last one alive (NodeTasks hold tasks weakly for that reason).
                    tls.current_graph_task, grad_state.enabled = prev_task, prev_grad
                    current = None
                del local_task
        finally:
            if current is not None:  # set since the last restore (current and grad mode go together)
                tls.current_graph_task, grad_state.enabled = prev_task, prev_grad

    @staticmethod
    def _decrement_outstanding(task: GraphTask) -> bool:
        """One of task's NodeTasks is finished; returns whether that completed the task.
        Decremented only after the node's successors were pushed (and counted), so the count
        cannot touch zero while work remains."""
        with task.mutex:
            task.outstanding_tasks -= 1
            return task.outstanding_tasks == 0 or (task.exit_on_error and task.has_error)

    def thread_on_exception(self, task: GraphTask, fn: Node, exc: BaseException) -> None:
        probe = self.probe
        if probe is not None:
            forward = fn._metadata.get("traceback_") if fn._metadata else None
            probe.error(task, fn, exc, forward)
        task.set_exception(exc, fn)

    def evaluate_function(self, task: GraphTask, fn: Node, inputs: list, cpu_ready_queue: ReadyQueue,
                          local_queue: ReadyQueue | None = None) -> bool:  # fmt: skip
        """Run fn on ``inputs`` (its gathered gradients, an InputBuffer's list) and hand its
        outputs on; then, on this thread, each successor found ready that the thread's next pop()
        from ``local_queue`` (its queue) would return anyway (see _hold_next), until there is
        none. Each node's NodeTask is decremented in task.outstanding_tasks in the critical
        section that pushes (and counts) its successors. A node that raises gives its error to
        the task (thread_on_exception) and is decremented then. Returns whether the last
        decrement completed the task.

        Successors ready for ``local_queue`` but not run at once wait in ``pending``, a heap of
        entries (2, -depth, -sequence_nr, push order, fn, gradients) ordered as the queue's,
        with their place in its push order taken when they became ready: only this thread pops
        its own queue, so when the next node to run is one of them it runs without the round
        trip through the queue (NodeTask, two lock sections). They go to the queue, in that
        order, before the thread would pop, before a node that may run user code (a hook, a
        custom Function, a reentrant backward: anything that could look at the queue), and on
        an error.

        This is the path of a backward with nothing to tell and nothing to prune (no probe, no
        exec_info): ``_evaluate_told`` takes the others, and the rest of this call as soon as a
        probe appears. Here a node's outputs are checked against their inputs' metadata as they
        are handed on (validate_outputs' check, one loop instead of two; a gradient that does
        not fit goes through validate_outputs' own fix or error), and its saved variables are
        released after that loop. Neither shows: an error in that loop fails the task, whose
        successors then never run (those found ready are queued to be skipped), and a node
        whose outputs do not pass keeps its saved variables, as before. The task's mutex is
        taken only once another thread may run the task's nodes (``GraphTask.shared``)."""
        if self.probe is not None or task.exec_info or local_queue is None:
            return self._evaluate_told(task, fn, inputs, cpu_ready_queue, local_queue, [], False)
        grad_state = _grad_state
        dependencies = task.dependencies
        not_ready = task.not_ready
        mutex = task.mutex
        key_depth = -task.reentrant_depth
        keep_graph = task.keep_graph
        create_graph = task.create_graph
        pending: list[tuple] = []
        # ``pending``'s one entry while it has one and no other (W2's Add leaves its previous Add
        # there for two nodes): lone_fn on lone_in, its sequence_nr and push order, without the
        # heap's tuple, push and pop. pending itself is empty meanwhile; the entry goes into it
        # (spilled) before anything else reads or queues pending.
        lone_fn = lone_in = None
        lone_seq = lone_order = 0
        push_order = local_queue._count
        # The queue's heap (one list for the queue's life), read without its lock as the loops
        # below always have: a push from another thread racing with the read is one that arrived
        # just after this thread's pop.
        heap = local_queue._heap
        cpu_is_local = cpu_ready_queue is local_queue
        popped = False  # fn was taken from pending or held (for _evaluate_told's probe)
        # Node._plain: no hooks, a fresh output list, no user code. A node that may run user code
        # (unsafe) may leave grad mode changed: set back after it. Formulas and AccumulateGrad
        # restore whatever they change, so grad mode is create_graph while their outputs are
        # handed on.
        plain = fn._plain
        unsafe = not plain and (fn._hooked or not fn._defer_safe)
        while True:
            if self.probe is not None:
                # A recording began meanwhile: the rest of this call tells it what it does.
                if lone_fn is not None:
                    pending.append((2, key_depth, -lone_seq, lone_order, lone_fn, lone_in))
                    lone_fn = lone_in = None
                return self._evaluate_told(task, fn, inputs, cpu_ready_queue, local_queue, pending, popped)
            locked = False
            try:
                edges = fn.next_edges
                if plain:
                    outputs = fn._apply_all(inputs)
                    check = len(outputs) == len(edges)  # a list (_fresh_outputs)
                    if not check:
                        outputs = validate_outputs(edges, outputs, None, fn)
                elif fn._hooked:
                    # Validated there, a post hook's replacement outputs too (one a gradient per
                    # edge: torch's check of hook results).
                    outputs = self.call_function(task, fn, inputs, None)
                    check = False
                else:
                    outputs = fn._apply_all(inputs)
                    if type(outputs) is list and len(outputs) == len(edges):
                        check = True
                        if not fn._fresh_outputs:
                            outputs = list(outputs)  # the loop below clears what it hands on
                    else:
                        outputs = validate_outputs(edges, outputs, None, fn)
                        check = False
                del inputs
                release = not keep_graph
                if anomaly.enabled:
                    # The general path's order: every output checked, the saved variables
                    # released and the outputs checked for nan before any is handed on.
                    if check:
                        outputs = validate_outputs(edges, outputs, None, fn)
                        check = False
                    if release:
                        fn.release_variables()
                        release = False
                    if anomaly.check_nan:
                        _check_nan(task, fn, outputs, None)
                # Successors ready for local_queue, in the order they became ready: the first
                # two apart, as (fn, gradients) in locals (the chain and the fan-out of two make
                # neither tuple nor list), the rest in ``more`` with them.
                fn1 = fn2 = more = None
                ready = 0  # of them, not yet counted in outstanding_tasks
                if task.shared:
                    mutex.acquire()
                    locked = True
                try:
                    try:
                        # Edges and outputs pair up (checked above); counting i by hand costs
                        # less than a range object per node.
                        i = -1
                        for next_fn, input_nr in edges:
                            i += 1
                            if next_fn is None:
                                continue
                            output = outputs[i]
                            if output is not None:
                                if check:
                                    meta = next_fn.input_metadata[input_nr]
                                    if (output._data.shape != meta[0] or output.dtype is not meta[1]
                                            or output.device is not meta[2]):  # fmt: skip
                                        output = _fit_gradient(output, meta, i, None, fn)
                                outputs[i] = None  # the buffer holds it alone (see InputBuffer.add)
                            remaining = dependencies.get(next_fn)
                            if remaining is None:
                                raise RuntimeError(f"dependency not found for {next_fn.name()}")
                            if remaining != 1:
                                dependencies[next_fn] = remaining - 1
                                buf = not_ready.get(next_fn)
                                if buf is None:
                                    buf = _new_input_buffer(InputBuffer)
                                    n = len(next_fn.input_metadata)
                                    if n == 1:
                                        buf.buffer = [output]
                                    else:
                                        slots = buf.buffer = [None] * n
                                        if output is not None:
                                            slots[input_nr] = output
                                    buf.owned = 0
                                    not_ready[next_fn] = buf
                                elif output is not None:
                                    # InputBuffer.add's usual case inline: a slot the buffer owns,
                                    # the same dtype object and shape, grad mode off.
                                    old = buf.buffer[input_nr]
                                    if (old is not None and buf.owned >> input_nr & 1
                                            and not (grad_state.enabled if unsafe else create_graph)
                                            and old._data.dtype is output._data.dtype
                                            and old._data.shape == output._data.shape):  # fmt: skip
                                        old._data += output._data
                                    else:
                                        old = None  # add() steals a slot only its list holds
                                        buf.add(input_nr, output)
                                continue
                            del dependencies[next_fn]
                            buf = not_ready.pop(next_fn, None)
                            if buf is None:
                                # Ready at its first gradient: a plain list, no InputBuffer to
                                # fill (one is made only if the node goes through a queue).
                                n = len(next_fn.input_metadata)
                                if n == 1:
                                    slots = [output]
                                    # InputBuffer.device() of one slot
                                    if output is None or (dev := output.device) is _CPU or dev.type == "cpu":
                                        device = CPU_DEVICE
                                    else:
                                        device = dev._str
                                else:
                                    slots = [None] * n
                                    if output is not None:
                                        slots[input_nr] = output
                                    device = _buffer_device(slots)
                            else:
                                if output is not None:
                                    buf.add(input_nr, output)
                                slots = buf.buffer
                                device = _buffer_device(slots)
                            if cpu_is_local and device == CPU_DEVICE:
                                ready += 1
                                if fn1 is None:
                                    fn1 = next_fn
                                    in1 = slots
                                elif fn2 is None:
                                    fn2 = next_fn
                                    in2 = slots
                                elif more is None:
                                    more = [(fn1, in1), (fn2, in2), (next_fn, slots)]
                                else:
                                    more.append((next_fn, slots))
                                continue
                            # A queue another thread serves: from here on that thread may run
                            # this task's nodes too, so the task is shared (and locked) first.
                            if not locked:
                                mutex.acquire()
                                locked = True
                                task.shared = True
                            task.outstanding_tasks += 1  # before the task is visible to pop()
                            output = old = None  # the other thread may steal what it gets
                            queue = cpu_ready_queue if device == CPU_DEVICE else self._device_queue(device)
                            queue.push_counted(task, ((next_fn, slots),))
                        # A gradient held by a local is not stolen by the node that gets it
                        # (InputBuffer.add, AccumulateGrad): none is left past the loop.
                        output = old = None
                        if release:
                            fn.release_variables()
                    except BaseException:
                        # Successors found ready but not yet pushed must still reach the queue:
                        # they are popped and skipped there (the task has failed), which balances
                        # the count.
                        output = old = None
                        if fn1 is not None:
                            task.outstanding_tasks += ready
                            local_queue.push_counted(
                                task, more or ([(fn1, in1)] if fn2 is None else [(fn1, in1), (fn2, in2)])
                            )
                        raise
                    # The node to run next, if any: held_fn on held_in.
                    held_fn = None
                    if lone_fn is not None and (fn2 is not None or (fn1 is not None and not (
                        lone_seq < fn1.sequence_nr and (not heap or heap[0] > (2, key_depth, -fn1.sequence_nr, _LAST))
                    ))):  # fmt: skip
                        # Not the chain case whose node outranks it, nor nothing ready: the lone
                        # entry goes into pending, for the general code below.
                        pending.append((2, key_depth, -lone_seq, lone_order, lone_fn, lone_in))
                        lone_fn = lone_in = None
                    if fn1 is not None:
                        if fn2 is None:
                            # The chain case: run it next unless the queue's head or a pending
                            # entry outranks it (a tie goes to those, pushed first; _LAST makes
                            # them lose only then). Pending entries are all (2, key_depth, ...):
                            # their sequence_nr alone decides. (A lone entry here is outranked.)
                            if lone_fn is not None or (not heap and not pending):
                                held_fn = fn1
                                held_in = in1
                            else:
                                seq = fn1.sequence_nr
                                if (not pending or -pending[0][2] < seq) and (
                                    not heap or heap[0] > (2, key_depth, -seq, _LAST)
                                ):
                                    held_fn = fn1
                                    held_in = in1
                                elif pending:
                                    heapq.heappush(pending, (2, key_depth, -seq, next(push_order), fn1, in1))
                                else:
                                    local_queue.push_counted(task, ((fn1, in1),))
                        elif more is None:
                            # Two ready (a fan-out): the better, the first of equals (pushed
                            # first), runs next if it outranks what waits; the other waits in
                            # pending. Otherwise both wait there, in ready order.
                            s1 = fn1.sequence_nr
                            s2 = fn2.sequence_nr
                            seq = s2 if s2 > s1 else s1
                            if not pending and (not heap or heap[0] > (2, key_depth, -seq, _LAST)):
                                # Nothing else kept aside: the other is the lone entry.
                                if s2 > s1:
                                    held_fn = fn2
                                    held_in = in2
                                    lone_fn = fn1
                                    lone_in = in1
                                    lone_seq = s1
                                else:
                                    held_fn = fn1
                                    held_in = in1
                                    lone_fn = fn2
                                    lone_in = in2
                                    lone_seq = s2
                                lone_order = next(push_order)
                            elif (pending and -pending[0][2] >= seq) or (
                                heap and not heap[0] > (2, key_depth, -seq, _LAST)
                            ):
                                heapq.heappush(pending, (2, key_depth, -s1, next(push_order), fn1, in1))
                                heapq.heappush(pending, (2, key_depth, -s2, next(push_order), fn2, in2))
                            elif s2 > s1:
                                held_fn = fn2
                                held_in = in2
                                heapq.heappush(pending, (2, key_depth, -s1, next(push_order), fn1, in1))
                            else:
                                held_fn = fn1
                                held_in = in1
                                heapq.heappush(pending, (2, key_depth, -s2, next(push_order), fn2, in2))
                        else:
                            # More: as with two, over the list.
                            held = _hold_best_of(more, pending, heap, key_depth, push_order)
                            if held is not None:
                                held_fn, held_in = held
                            del held
                    if held_fn is None and lone_fn is not None:
                        # pop() as below, for the lone entry
                        if not heap or heap[0] > (2, key_depth, -lone_seq, lone_order):
                            held_fn = lone_fn
                            held_in = lone_in
                            lone_fn = lone_in = None
                    elif held_fn is None and pending:
                        # What pop() would return: the best pending entry, unless the queue's
                        # head (pushed by another thread meanwhile) outranks it.
                        top = pending[0]
                        if not heap or heap[0] > top:
                            heapq.heappop(pending)
                            held_fn = top[4]
                            held_in = top[5]
                    # fn's own NodeTask is done; the successors found ready are counted.
                    if ready != 1:
                        task.outstanding_tasks += ready - 1
                    if held_fn is None:
                        done = task.outstanding_tasks == 0 or (task.exit_on_error and task.has_error)
                finally:
                    if locked:
                        mutex.release()
            except BaseException as exc:  # noqa: BLE001 - every error goes to the caller
                if lone_fn is not None:
                    pending.append((2, key_depth, -lone_seq, lone_order, lone_fn, lone_in))
                    lone_fn = lone_in = None
                if pending:
                    local_queue.push_pending(task, pending)  # to be popped and skipped
                self.thread_on_exception(task, fn, exc)
                return self._decrement_outstanding(task)
            if unsafe:
                grad_state.enabled = create_graph
            if lone_fn is not None and (held_fn is None or task.has_error):
                pending.append((2, key_depth, -lone_seq, lone_order, lone_fn, lone_in))
                lone_fn = lone_in = None
            if held_fn is None:
                if pending:
                    local_queue.push_pending(task, pending)
                return done
            # held_fn is counted in outstanding_tasks, so the task is not done: run it as
            # thread_main would have after popping it.
            fn = held_fn
            inputs = held_in
            held_in = in1 = in2 = top = None  # inputs holds the gradients alone (stealing)
            popped = True
            if task.has_error:
                if pending:
                    local_queue.push_pending(task, pending)
                return self._decrement_outstanding(task)
            plain = fn._plain
            unsafe = not plain and (fn._hooked or not fn._defer_safe)
            if unsafe:
                if lone_fn is not None:
                    pending.append((2, key_depth, -lone_seq, lone_order, lone_fn, lone_in))
                    lone_fn = lone_in = None
                if pending:
                    local_queue.push_pending(task, pending)

    def _evaluate_told(self, task: GraphTask, fn: Node, inputs: list, cpu_ready_queue: ReadyQueue,
                       local_queue: ReadyQueue | None, pending: list[tuple], popped: bool) -> bool:  # fmt: skip
        """evaluate_function with a probe to tell or exec_info to follow. ``pending`` and
        ``popped``: evaluate_function's, when a probe appears in the middle of its call.

        A probe hears the queue this thread would have used: each successor kept aside is told
        as pushed when it becomes ready (``Probe.gradient_in``, with the size the queue would
        have then: its heap, ``pending`` and this node's earlier ones) and as popped when it
        runs or is skipped (``Probe.node_pop``); its later trip through the real queue, if any,
        is not told again (``quiet``).

        A node of a chain (it ran without hooks, and handed its one ready gradient to the node
        this thread runs next) is told in one call, ``Probe.chain_step``: its node_end and that
        gradient_in are owed until the successor's pop, and told first, as they are, if
        anything else is told before it (_tell_due).

        As on the untold loop, grad mode is set back to the task's only after a node that may
        run user code (formulas and AccumulateGrad restore what they change)."""
        grad_state = _grad_state
        dependencies = task.dependencies
        not_ready = task.not_ready
        mutex = task.mutex
        key_depth = -task.reentrant_depth
        # Fixed for the task's life (exec_info is filled before it starts).
        exec_info = task.exec_info
        keep_graph = task.keep_graph
        create_graph = task.create_graph
        if local_queue is not None:
            push_order = local_queue._count
            heap = local_queue._heap  # one list for the queue's life
        else:
            push_order = heap = None
        # For node_begin: a nested backward restores it before its node returns, so it holds for
        # every node this call runs.
        depth = _state.tls.current_depth
        # What the probe is owed, told before any other call (_tell_due): to o_probe, the
        # node_end (ok) of ``owed``, and when o_next is not None, the gradient_in that made o_next
        # ready for local_queue (o_slot, o_grad, o_mode, pushed with o_size). In locals: a tuple
        # of them made and freed a node cost more. o_grad is dropped once told: the node it goes
        # to may steal it (InputBuffer.add, AccumulateGrad count references).
        owed = o_probe = o_next = o_grad = o_mode = None
        o_slot = o_size = 0
        # The tests' reference path (every node through the ReadyQueue), for a probe; set before
        # a backward starts.
        queue_only = self._queue_only
        plain = fn._plain
        # popped: fn was taken from the queue's stand-in (held): its pop is not told yet
        while True:
            probe = self.probe
            if owed is not None and o_probe is not probe:  # the recording ended meanwhile
                owed = o_grad = self._tell_due(o_probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue)
            try:
                if exec_info or (queue_only and probe is not None):
                    if owed is not None:
                        owed = o_grad = self._tell_due(
                            probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                        )
                    if pending:
                        local_queue.push_pending(task, pending, quiet=probe is not None)
                    if popped and probe is not None:
                        self._tell_pop(probe, local_queue, task, fn, len(pending), None)
                    plain = False  # hooks may run there: grad mode is set again below
                    done, held = self._evaluate_function_general(task, fn, inputs, cpu_ready_queue, local_queue)
                    if held is None:
                        held_fn = None
                    else:
                        held_fn, held_in = held
                    del held
                else:
                    # Every node runs (backward() without inputs=): the steps of the general path
                    # in the same order, without the exec_info pruning or InputBuffer.add for a
                    # buffer made here (its first gradient is simply set), and with the probe's
                    # calls where there is one.
                    if not plain and fn._hooked:
                        if owed is not None:
                            owed = o_grad = self._tell_due(
                                probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                            )
                        if popped and probe is not None:
                            self._tell_pop(probe, local_queue, task, fn, len(pending), None)
                        outputs = self.call_function(task, fn, inputs, probe)
                    else:
                        if probe is not None:
                            if popped:
                                # _tell_pop inline: once a node while recording; with what is owed
                                # for the node before, when fn is its successor (a chain), in one call
                                try:
                                    size = len(heap) + len(pending)
                                    if owed is None:
                                        probe.node_pop(local_queue, task, fn, size, depth)
                                    elif o_next is fn:
                                        probe.chain_step(task, owed, fn, o_slot, o_grad, o_mode, local_queue,
                                                         o_size, size, depth)  # fmt: skip
                                    else:
                                        self._tell_due(
                                            probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                                        )
                                        probe.node_pop(local_queue, task, fn, size, depth)
                                except Exception:  # noqa: BLE001
                                    sys.excepthook(*sys.exc_info())
                                owed = o_grad = None
                            else:
                                probe.node_begin(task, fn, depth)
                        try:
                            outputs = fn._apply_all(inputs)
                            edges = fn.next_edges
                            # validate_outputs inline for the usual case, where every gradient
                            # already fits (shape, dtype and device objects of its input);
                            # otherwise the full check.
                            n = len(edges)
                            if (plain or type(outputs) is list) and len(outputs) == n:
                                if not plain and not fn._fresh_outputs:
                                    outputs = list(outputs)  # the hand-on loop clears what it hands on
                                if 0 < n <= 2:
                                    # One or two edges (a chain's node, with a constant operand's
                                    # edge or not): no loop.
                                    grad = outputs[0]
                                    if grad is not None:
                                        next_fn, input_nr = edges[0]
                                        if next_fn is not None:
                                            meta = next_fn.input_metadata[input_nr]
                                            if (grad._data.shape != meta[0] or grad.dtype is not meta[1]
                                                    or grad.device is not meta[2]):  # fmt: skip
                                                # every output checked: grad is the list, the second is skipped
                                                grad = outputs = validate_outputs(edges, outputs, None, fn)
                                    if n == 2 and grad is not outputs:
                                        grad = outputs[1]
                                        if grad is not None:
                                            next_fn, input_nr = edges[1]
                                            if next_fn is not None:
                                                meta = next_fn.input_metadata[input_nr]
                                                if (grad._data.shape != meta[0] or grad.dtype is not meta[1]
                                                        or grad.device is not meta[2]):  # fmt: skip
                                                    outputs = validate_outputs(edges, outputs, None, fn)
                                elif n:
                                    i = -1  # by hand: a range object per node costs more
                                    for next_fn, input_nr in edges:
                                        i += 1
                                        grad = outputs[i]
                                        if grad is not None and next_fn is not None:
                                            meta = next_fn.input_metadata[input_nr]
                                            if (grad._data.shape != meta[0] or grad.dtype is not meta[1]
                                                    or grad.device is not meta[2]):  # fmt: skip
                                                outputs = validate_outputs(edges, outputs, None, fn)
                                                break
                                grad = None  # the node a gradient goes to may steal it
                            else:
                                outputs = validate_outputs(edges, outputs, None, fn)
                        except BaseException:
                            if probe is not None:
                                probe.node_end(task, fn, False)
                            raise
                        if probe is not None:
                            owed = fn  # node_end, told later (see above)
                            o_probe = probe
                            o_next = None
                    del inputs
                    if not keep_graph:
                        released = fn.release_variables()
                        if released and probe is not None:
                            if owed is not None:
                                owed = o_grad = self._tell_due(
                                    probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                                )
                            probe.saved_release(fn, released)
                    if anomaly.enabled and anomaly.check_nan:
                        if owed is not None:
                            owed = o_grad = self._tell_due(
                                probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                            )
                        _check_nan(task, fn, outputs, probe)
                    if not plain:
                        edges = fn.next_edges
                    # Successors ready for local_queue, pushed after the loop but for the one
                    # this thread's next pop() would return, which it runs next: the first in
                    # locals (the chain makes neither tuple nor list), all in order in ``more``
                    # once there are two.
                    fn1 = more = None
                    ready = 0  # of them: counted in outstanding_tasks after the loop, as one sum
                    # The mutex only once another thread may run the task's nodes (GraphTask.shared),
                    # as on the untold path: taken before this thread first makes it so.
                    locked = task.shared
                    if locked:
                        mutex.acquire()
                    try:
                        try:
                            i = -1  # by hand: a range object per node costs more
                            for next_fn, input_nr in edges:
                                i += 1
                                if next_fn is None:
                                    continue
                                remaining = dependencies.get(next_fn)
                                if remaining is None:
                                    raise RuntimeError(f"dependency not found for {next_fn.name()}")
                                output = outputs[i]
                                if output is not None:
                                    outputs[i] = None  # the buffer holds it alone (see InputBuffer.add)
                                if remaining != 1:
                                    dependencies[next_fn] = remaining - 1
                                    buf = not_ready.get(next_fn)
                                    taken = None
                                    if buf is None:
                                        buf = _new_input_buffer(InputBuffer)
                                        n = len(next_fn.input_metadata)
                                        if n == 1:
                                            buf.buffer = [output]  # a list display: [None] * n costs 3x
                                        else:
                                            slots = buf.buffer = [None] * n
                                            if output is not None:
                                                slots[input_nr] = output
                                        buf.owned = 0
                                        not_ready[next_fn] = buf
                                        mode = "undefined" if output is None else "set"
                                        taken = "park"
                                    elif output is not None:
                                        mode = buf.add(input_nr, output)
                                    else:
                                        mode = "undefined"
                                    if probe is not None:
                                        if owed is not None:
                                            owed = o_grad = self._tell_due(
                                                probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                                            )
                                        probe.gradient_in(task, next_fn, fn, input_nr, output, mode, remaining - 1,
                                                          taken, None, 0)  # fmt: skip
                                    continue
                                del dependencies[next_fn]
                                buf = not_ready.pop(next_fn, None)
                                if buf is None:
                                    # Ready at its first gradient: a plain list, no InputBuffer
                                    # to fill (one is made only if the node goes through a queue).
                                    n = len(next_fn.input_metadata)
                                    if n == 1:
                                        slots = [output]  # a list display: [None] * n costs 3x
                                        # One slot: its gradient's device (InputBuffer.device()).
                                        if output is None:
                                            mode = "undefined"
                                            queue = cpu_ready_queue
                                        else:
                                            mode = "set"
                                            if (dev := output.device) is _CPU or dev.type == "cpu":
                                                queue = cpu_ready_queue
                                            else:
                                                queue = self._device_queue(dev._str)
                                    else:
                                        slots = [None] * n
                                        if output is not None:
                                            slots[input_nr] = output
                                            mode = "set"
                                        else:
                                            mode = "undefined"
                                        device = _buffer_device(slots)
                                        queue = cpu_ready_queue if device == CPU_DEVICE else self._device_queue(device)
                                    taken = None
                                else:
                                    mode = "undefined" if output is None else buf.add(input_nr, output)
                                    slots = buf.buffer
                                    taken = "take"
                                    device = _buffer_device(slots)
                                    queue = cpu_ready_queue if device == CPU_DEVICE else self._device_queue(device)
                                if queue is local_queue:
                                    ready += 1
                                    if fn1 is None:
                                        fn1 = next_fn
                                        in1 = slots
                                    elif more is None:
                                        more = [(fn1, in1), (next_fn, slots)]
                                    else:
                                        more.append((next_fn, slots))
                                    # Told as pushed now, with the queue's size as it would be (this
                                    # node's ready successors so far, the heap, pending). Owed with
                                    # fn's node_end until its pop when it may be a chain's step
                                    # (owed implies a probe: see the loop's top).
                                    if owed is not None and o_next is None and taken is None:
                                        o_next = next_fn
                                        o_slot = input_nr
                                        o_grad = output
                                        o_mode = mode
                                        o_size = ready + len(heap) + len(pending)
                                    elif probe is not None:
                                        if owed is not None:
                                            owed = o_grad = self._tell_due(
                                                probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                                            )
                                        size = ready + len(heap) + len(pending)
                                        probe.gradient_in(task, next_fn, fn, input_nr, output, mode, 0, taken,
                                                          local_queue, size)  # fmt: skip
                                    del output
                                    continue
                                if probe is not None:
                                    if owed is not None:
                                        owed = o_grad = self._tell_due(
                                            probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                                        )
                                    probe.gradient_in(task, next_fn, fn, input_nr, output, mode, 0, taken, None, 0)
                                del output
                                if not locked:
                                    mutex.acquire()
                                    locked = True
                                task.outstanding_tasks += 1  # before the task is visible to pop()
                                task.shared = True  # another thread's queue (under the mutex)
                                queue.push_counted(task, ((next_fn, slots),))
                        except BaseException:
                            # Successors counted but not yet pushed must still reach the queue:
                            # they are popped and skipped there (the task has failed), which
                            # balances the count.
                            if fn1 is not None:
                                task.outstanding_tasks += ready
                                local_queue.push_counted(task, more or ((fn1, in1),), quiet=probe is not None)
                            raise
                        # fn's own NodeTask is done; the successors found ready here are counted
                        # (the chain's one: no change).
                        if ready != 1:
                            task.outstanding_tasks += ready - 1
                        held_fn = None
                        if fn1 is not None:
                            if more is None:
                                # The chain case: run it next unless the queue's head or a
                                # pending entry outranks it (a tie goes to those, pushed first;
                                # _LAST makes them lose only then). Pending entries are all
                                # (2, key_depth, ...): their sequence_nr alone decides.
                                if not heap and not pending:
                                    held_fn = fn1
                                    held_in = in1
                                else:
                                    seq = fn1.sequence_nr
                                    if (not pending or -pending[0][2] < seq) and (
                                        not heap or heap[0] > (2, key_depth, -seq, _LAST)
                                    ):
                                        held_fn = fn1
                                        held_in = in1
                                    elif pending:
                                        heapq.heappush(pending, (2, key_depth, -seq, next(push_order), fn1, in1))
                                    else:
                                        local_queue.push_counted(task, ((fn1, in1),), quiet=probe is not None)
                            else:
                                # Several ready (a fan-out): the best of them, the first of equals
                                # (pushed first), runs next if it outranks what waits, without a
                                # trip through pending; the others wait there in ready order.
                                held = _hold_best_of(more, pending, heap, key_depth, push_order)
                                if held is not None:
                                    held_fn, held_in = held
                                del held
                        if held_fn is None and pending:
                            # What pop() would return: the best pending entry, unless the queue's
                            # head (pushed by another thread meanwhile) outranks it.
                            top = pending[0]
                            if not heap or heap[0] > top:
                                heapq.heappop(pending)
                                held_fn = top[4]
                                held_in = top[5]
                        if held_fn is None:
                            done = task.outstanding_tasks == 0 or (task.exit_on_error and task.has_error)
                    finally:
                        if locked:
                            mutex.release()
            except BaseException as exc:  # noqa: BLE001 - every error goes to the caller
                if owed is not None:
                    owed = o_grad = self._tell_due(
                        probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue
                    )
                if pending:
                    local_queue.push_pending(task, pending, quiet=probe is not None)  # to be popped and skipped
                self.thread_on_exception(task, fn, exc)
                return self._decrement_outstanding(task)
            if owed is not None and (held_fn is None or held_fn is not o_next or task.has_error):
                # no chain_step follows
                owed = o_grad = self._tell_due(probe, task, owed, o_next, o_slot, o_grad, o_mode, o_size, local_queue)
            if held_fn is None:
                if pending:
                    local_queue.push_pending(task, pending, quiet=probe is not None)
                return done
            # held_fn is counted in outstanding_tasks, so the task is not done: run it as
            # thread_main would have after popping it.
            fn = held_fn
            inputs = held_in
            popped = True
            if task.has_error:
                if pending:
                    local_queue.push_pending(task, pending, quiet=probe is not None)
                if probe is not None:
                    self._tell_pop(probe, local_queue, task, fn, 0, None)  # popped and skipped
                return self._decrement_outstanding(task)
            if not plain:
                # The task's grad mode (create_graph) again after a node that may have changed it
                # (Node._plain: no hooks, a fresh output list, no user code).
                grad_state.enabled = create_graph
            plain = fn._plain
            if pending and not plain and (fn._hooked or not fn._defer_safe):
                local_queue.push_pending(task, pending, quiet=probe is not None)

    @staticmethod
    def _tell_due(probe: Probe, task: GraphTask, fn: Node, next_fn: Node | None, slot: int, grad: Any, mode: str | None,
                  size: int, queue: ReadyQueue | None) -> None:  # fmt: skip
        """Tell what _evaluate_told owes a probe: fn's node_end, and when next_fn is not None the
        gradient_in (slot, grad, mode) that made next_fn ready for ``queue``, pushed with
        ``size``. Returns None, what is owed then. As node_pop (and chain_step, which tells the
        same later), a failing probe is reported, never fatal: a told step is not the node's own."""
        try:
            probe.node_end(task, fn, True)
            if next_fn is not None:
                probe.gradient_in(task, next_fn, fn, slot, grad, mode, 0, None, queue, size)
        except Exception:  # noqa: BLE001
            sys.excepthook(*sys.exc_info())

    @staticmethod
    def _tell_pop(probe: Probe, queue: ReadyQueue, task: GraphTask, fn: Node, pending: int, depth: int | None) -> None:
        """Tell the probe that fn, kept aside for ``queue``, was popped (and began at ``depth``,
        unless None). Its size after the pop: the queue's heap and the ``pending`` entries still
        kept aside. As in ReadyQueue.pop, a failing probe is reported, never fatal."""
        try:
            probe.node_pop(queue, task, fn, len(queue._heap) + pending, depth)
        except Exception:  # noqa: BLE001
            sys.excepthook(*sys.exc_info())

    def _evaluate_function_general(self, task: GraphTask, fn: Node, inputs: list, cpu_ready_queue: ReadyQueue,
                                   local_queue: ReadyQueue | None) -> tuple[bool, tuple | None]:  # fmt: skip
        """evaluate_function with a probe to tell and exec_info to follow (grad(), inputs=)."""
        probe = self.probe
        exec_info = task.exec_info
        if exec_info:
            info = exec_info[fn]
            grads = inputs
            if not info.needed:
                # Tensor pre-hooks still run exactly once, before the capture.
                grads = call_tensor_pre_hooks(task, fn, grads, probe)
            if info.captures is not None:
                with task.mutex:
                    for input_nr, output_idx in info.captures:
                        task.captured_vars[output_idx] = grads[input_nr]
                        if probe is not None:
                            probe.captured_grad(task, fn, input_nr, output_idx, grads[input_nr])
            if not info.needed:
                return self._decrement_outstanding(task), None
        # Only tasks pruned by exec_info (grad(), backward(inputs=)) and the tests' queue-only
        # reference come here; the unpruned backward the benchmarks time takes the fast path, so
        # this path keeps call_function alone rather than a second copy of its inline output check.
        outputs = self.call_function(task, fn, inputs, probe)
        if not task.keep_graph:
            released = fn.release_variables()
            if probe is not None and released:
                probe.saved_release(fn, released)
        num_outputs = len(outputs)
        if anomaly.enabled and anomaly.check_nan:
            _check_nan(task, fn, outputs, probe)
        next_edges = fn.next_edges
        # Successors ready for local_queue, pushed after the loop (in order) but for the one the
        # next pop would return, which this thread runs next (only when nothing records: the
        # probe hears every push and pop).
        hold = local_queue is not None and probe is None
        ready_local: list | None = None
        with task.mutex:
            try:
                dependencies = task.dependencies
                not_ready = task.not_ready
                for i in range(num_outputs):
                    next_fn, input_nr = next_edges[i]
                    if next_fn is None:
                        continue
                    remaining = dependencies.get(next_fn)
                    if remaining is None:
                        raise RuntimeError(f"dependency not found for {next_fn.name()}")
                    remaining -= 1
                    is_ready = remaining == 0
                    if is_ready:
                        del dependencies[next_fn]
                    else:
                        dependencies[next_fn] = remaining
                    if probe is not None:
                        probe.dependency_decrement(task, next_fn, fn, remaining)
                    output = outputs[i]
                    buf = not_ready.get(next_fn)
                    if buf is None:
                        if exec_info:
                            info = exec_info.get(next_fn)
                            if info is None or not info.should_execute():
                                continue  # pruned: not on a path to the requested outputs
                        buf = _new_input_buffer(InputBuffer)
                        buf.buffer = [None] * len(next_fn.input_metadata)
                        buf.owned = 0
                        if output is not None:
                            outputs[i] = None  # the buffer holds it alone (see InputBuffer.add)
                        mode = buf.add(input_nr, output)
                        if probe is not None:
                            probe.buffer_add(task, next_fn, input_nr, output, mode, fn)
                        if not is_ready:
                            not_ready[next_fn] = buf
                            if probe is not None:
                                probe.not_ready_park(task, next_fn, remaining)
                            continue
                    else:
                        if output is not None:
                            outputs[i] = None
                        mode = buf.add(input_nr, output)
                        if probe is not None:
                            probe.buffer_add(task, next_fn, input_nr, output, mode, fn)
                        if not is_ready:
                            continue
                        del not_ready[next_fn]
                        if probe is not None:
                            probe.not_ready_take(task, next_fn)
                    # Counted here, under the lock held anyway, before the task is visible to pop().
                    task.outstanding_tasks += 1
                    device = buf.device()
                    queue = cpu_ready_queue if device == CPU_DEVICE else self._device_queue(device)
                    if hold and queue is local_queue:
                        if ready_local is None:
                            ready_local = [(next_fn, buf.buffer)]
                        else:
                            ready_local.append((next_fn, buf.buffer))
                        continue
                    del output
                    if queue is not local_queue:
                        task.shared = True  # another thread's queue (under the mutex)
                    queue.push_counted(task, ((next_fn, buf.buffer),))
            except BaseException:
                # Successors counted but not yet pushed must still reach the queue: they are
                # popped and skipped there (the task has failed), which balances the count.
                if ready_local is not None:
                    local_queue.push_counted(task, ready_local)
                raise
            held = None
            if ready_local is not None:
                if len(ready_local) == 1:
                    # The chain case, inline: run it next unless the queue's head outranks it.
                    heap = local_queue._heap
                    if not heap or heap[0] > (2, -task.reentrant_depth, -ready_local[0][0].sequence_nr, _LAST):
                        held = ready_local[0]
                    else:
                        local_queue.push_counted(task, ready_local)
                else:
                    held = _hold_next(task, local_queue, ready_local)
            task.outstanding_tasks -= 1
            return task.outstanding_tasks == 0 or (task.exit_on_error and task.has_error), held

    def call_function(self, task: GraphTask, fn: Node, inputs: list, probe: Probe | None) -> list:
        """Hooks and the node, in torch's order: tensor pre-hooks, retains_grad hooks, pre-hooks,
        the function, output validation, post-hooks."""
        if probe is not None:
            probe.node_begin(task, fn, _state.tls.current_depth)
        ok = False
        try:
            grads = call_tensor_pre_hooks(task, fn, inputs, probe)
            if fn._pre_hooks:
                for hook in list(fn._pre_hooks.values()):
                    if probe is not None:
                        probe.hook(task, fn, "pre", hook)
                    res = hook(tuple(grads))
                    if res is not None:
                        grads = _checked_hook_results(hook, grads, res)
            outputs = fn.apply(list(grads))
            outputs = validate_outputs(fn.next_edges, outputs, None, fn)
            if fn._post_hooks:
                for hook in list(fn._post_hooks.values()):
                    if probe is not None:
                        probe.hook(task, fn, "post", hook)
                    res = hook(tuple(outputs), tuple(grads))
                    if res is not None:
                        outputs = _checked_hook_results(hook, outputs, res)
            ok = True
            return outputs
        finally:
            if probe is not None:
                probe.node_end(task, fn, ok)

    def queue_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the current graph task finishes (only inside a backward)."""
        task = _state.tls.current_graph_task
        if task is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        with task.mutex:
            task.final_callbacks.append(callback)


def _hold_best_of(more: list[tuple], pending: list[tuple], heap: list[tuple], key_depth: int,
                  push_order: Iterator[int]) -> tuple | None:  # fmt: skip
    """Of several successors made ready at once for this thread's queue (``more``: (fn,
    gradients) in ready order; the untold loop handles two in locals and comes here for three or
    more), the one it runs next: the best, the first of equals (pushed first), unless a
    ``pending`` entry or the queue's ``heap`` head outranks it (then None). The others go to
    ``pending`` in ready order. Both evaluate_function paths share it: one call per fan-out."""
    held = more[0]
    seq = held[0].sequence_nr
    for item in more:
        if item[0].sequence_nr > seq:
            held = item
            seq = item[0].sequence_nr
    if (pending and -pending[0][2] >= seq) or (heap and not heap[0] > (2, key_depth, -seq, _LAST)):
        held = None
    for item in more:
        if item is not held:
            next_fn = item[0]
            heapq.heappush(pending, (2, key_depth, -next_fn.sequence_nr, next(push_order), next_fn, item[1]))
    return held


def _hold_next(task: GraphTask, queue: ReadyQueue, ready: list[tuple]) -> tuple | None:
    """Push ``ready`` ((fn, gradient list) pairs of task, in the order they became ready, counted in
    its outstanding_tasks) to ``queue``, the calling thread's own, but for the one its next pop()
    would return: that one is returned for the thread to run at once. It is the one with the
    highest sequence_nr, if no other in ``ready`` ties with it and it ranks above the queue's
    head (ReadyQueue's order); otherwise all are pushed and None is returned. A push from another
    thread racing with this is the same as one arriving just after that pop."""
    best = None
    best_seq = -1
    tie = False
    for item in ready:
        seq = item[0].sequence_nr
        if seq > best_seq:
            best, best_seq, tie = item, seq, False
        elif seq == best_seq:
            tie = True
    heap = queue._heap
    if tie or (heap and not heap[0] > (2, -task.reentrant_depth, -best_seq, _LAST)):
        best = None
    queue.push_counted(task, ready, best)
    return best


# Compared with a queue entry (cls, -depth, -sequence_nr, push order, NodeTask), a key
# (2, -depth, -sequence_nr, _LAST) ranks after an entry with the same first three fields: that
# entry was pushed first, so it pops first.
_LAST = float("inf")


def _check_nan(task: GraphTask, fn: Node, outputs: list, probe: Probe | None) -> None:
    """Anomaly mode's check of a node's outputs (set_detect_anomaly(True, check_nan=True))."""
    for i, out in enumerate(outputs):
        if out is not None and bool(np.isnan(out._data).any()):
            message = f"Function '{fn.name()}' returned nan values in its {i}th output."
            if probe is not None:
                probe.anomaly(task, fn, message, fn._metadata.get("traceback_") if fn._metadata else None)
            raise RuntimeError(message)


def call_tensor_pre_hooks(task: GraphTask, fn: Node, grads: list, probe: Probe | None) -> list:
    if fn._tensor_pre_hooks is None and fn._retains_grad_hooks is None:
        return grads
    grads = list(grads)
    if fn._tensor_pre_hooks:
        for slot, hooks in fn._tensor_pre_hooks.items():
            for hook in list(hooks.values()):
                if probe is not None:
                    probe.hook(task, fn, "tensor_pre", hook)
                res = hook(grads[slot])
                if res is not None:
                    grads[slot] = _checked_hook_result(hook, grads[slot], res)
    if fn._retains_grad_hooks:
        for slot, hook in fn._retains_grad_hooks.items():
            if probe is not None:
                probe.hook(task, fn, "retains_grad", hook)
            res = hook(grads[slot])
            if res is not None:
                grads[slot] = res
    return grads


def _checked_hook_result(hook: Callable, old: Any, new: Any) -> Any:
    """A tensor hook's replacement gradient, refused as torch refuses it: not a tensor, or of
    another dtype, device or size than the gradient it replaces (the node it goes to was built
    for that one: a wrong one would fail later, far from the hook that made it, or not at all)."""
    from gradviz.tensor import Tensor

    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    name = getattr(hook, "__name__", "<unknown>")
    if new.dtype is not old.dtype or new.device != old.device:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {_legacy_type(old)} got {_legacy_type(new)})"
        )
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    return new


def _checked_hook_results(hook: Callable, old: list, res: Any) -> list:
    """A node pre-hook's or post-hook's replacement gradients, checked as torch checks them: a
    tuple of as many values as it was given, each None (undefined) or a tensor that fits the one
    it replaces (_checked_hook_result)."""
    if not isinstance(res, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(res).__name__}'")
    if len(res) != len(old):
        raise RuntimeError(
            f"hook '{getattr(hook, '__name__', '<unknown>')}' has returned an incorrect number of values "
            f"(got {len(res)}, but expected {len(old)})"
        )
    return [new if new is None else _checked_hook_result(hook, was, new) for was, new in zip(old, res, strict=True)]


def _legacy_type(t: Any) -> str:
    """torch's legacy tensor type name, in gradviz's namespace: gradviz.FloatTensor on cpu,
    gradviz.cuda.FloatTensor on cuda (as ``Tensor.type()`` names the cpu ones)."""
    where = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"gradviz.{where}{_dtype.scalar_type_name(t.dtype)}Tensor"


def compute_dependencies(root: Node, task: GraphTask, min_topo_nr: int) -> None:
    """Count, for every node reachable from root, how many edges point at it (iterative).
    A node is in ``dependencies`` once it has been reached, so that dict is also the seen set."""
    dependencies = task.dependencies
    get = dependencies.get
    stack = [root]
    push, pop = stack.append, stack.pop
    while stack:
        fn = pop()
        if min_topo_nr and fn.topological_nr < min_topo_nr:
            continue
        for edge in fn.next_edges:
            next_fn = edge[0]
            if next_fn is not None:
                n = get(next_fn)
                if n is None:
                    dependencies[next_fn] = 1
                    push(next_fn)
                else:
                    dependencies[next_fn] = n + 1


def compute_min_topological_nr(outputs: list[Edge]) -> int:
    if not outputs:
        return 0
    return min(e[0].topological_nr for e in outputs if e[0] is not None)


def validate_outputs(edges: list[Edge], grads: list[Any], format_error: Callable[[str], str] | None,
                     fn: Node | None = None) -> list[Any]:  # fmt: skip
    """Check each gradient against the metadata of the input it flows into; reduce broadcasts
    and cast dtypes as torch does. Errors name ``fn`` ("Function X returned an ...") unless
    ``format_error`` is given. Returns a new list (the given one is left as it is)."""
    n = len(edges)
    if len(grads) != n:
        raise RuntimeError(
            _validate_error(format_error, fn, f"invalid number of gradients - expected {n}, but got {len(grads)}")
        )
    grads = list(grads)
    for i in range(n):
        grad = grads[i]
        if grad is None:
            continue
        next_fn, input_nr = edges[i]
        if next_fn is None:
            continue
        meta = next_fn.input_metadata[input_nr]
        # Raw shapes and the dtype and device objects: a gradient that fits is left as it is.
        if grad._data.shape != meta[0] or grad.dtype is not meta[1] or grad.device is not meta[2]:
            grads[i] = _fit_gradient(grad, meta, i, format_error, fn)
    return grads


def _fit_gradient(grad: Any, meta: Any, i: int, format_error: Callable[[str], str] | None, fn: Node | None) -> Any:
    """validate_outputs for gradient ``i``, which differs from its input's metadata ``meta`` in
    shape, dtype or device object: the gradient reduced, cast or moved to fit, or the error."""
    # Raw shapes: a Size is built only where they differ.
    if grad._data.shape != meta[0]:
        if _expandable_to(meta[0], grad.shape):
            from gradviz.ops.functions import sum_to

            grad = sum_to(grad, meta[0])
        else:
            raise RuntimeError(_validate_error(format_error, fn,
                f"invalid gradient at index {i} - got {list(grad.shape)} but expected shape "
                f"compatible with {list(meta[0])}"
            ))  # fmt: skip
    if grad.dtype is not meta[1]:
        grad = grad.to(meta[1])
    device = meta[2]
    if grad.device is not device and grad.device != device:
        # A 0-dim gradient moves to the input's device, as torch does: a CPU scalar may meet
        # a tensor on any device in forward, so its gradient may come back from that device.
        if grad.ndim == 0:
            grad = grad.to(device)
        else:
            raise RuntimeError(_validate_error(format_error, fn,
                f"invalid gradient at index {i} - expected device {device} but got {grad.device}"
            ))  # fmt: skip
    return grad


def _message_as_is(msg: str) -> str:
    """Engine.execute's format_error: the root gradients' errors carry no node name."""
    return msg


def _validate_error(format_error: Callable[[str], str] | None, fn: Node | None, msg: str) -> str:
    if format_error is not None:
        return format_error(msg)
    return f"Function {fn.name()} returned an {msg}" if fn is not None else msg


def _expandable_to(shape: tuple[int, ...], desired: tuple[int, ...]) -> bool:
    if len(shape) > len(desired):
        return False
    for s, d in zip(reversed(shape), reversed(desired), strict=False):
        if s != d and s != 1:
            return False
    return True


_ENGINE = Engine()
graph._ENGINE = _ENGINE


def get_default_engine() -> Engine:
    return _ENGINE


class set_max_recursion_depth:  # noqa: N801 - a function-like context manager, as set_grad_enabled
    """Set how many reentrant backward calls nest on one thread before the next one moves to a
    reentrant pool thread (torch's max_recursion_depth_, 60 by default and fixed there).

    Takes effect at once on the default engine; used as a context manager it restores the
    previous value on exit::

        with set_max_recursion_depth(4):   # watch the hand-off to pool threads early
            loss.backward()

    0 sends every reentrant call to the pool. The Python recursion limit is per thread, so a
    depth much above torch's 60 can overflow it on the calling thread; the pool hand-off is what
    bounds the stack of each thread.
    """

    def __init__(self, depth: int) -> None:
        self.prev = _ENGINE.max_recursion_depth
        _ENGINE.max_recursion_depth = depth
        self.depth = depth

    def __enter__(self) -> set_max_recursion_depth:
        return self

    def __exit__(self, *exc: object) -> None:
        _ENGINE.max_recursion_depth = self.prev


def get_max_recursion_depth() -> int:
    return _ENGINE.max_recursion_depth


def _shutdown_at_exit() -> None:
    _ENGINE.shutdown(timeout=1.0)


atexit.register(_shutdown_at_exit)
