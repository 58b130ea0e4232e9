"""The engine's threads: one worker per non-CPU device, each serving that device's ready queue
(torch's thread_init and device_ready_queues_), and the reentrant pool that takes a nested
backward past max_recursion_depth (torch's ThreadPoolShared, add_thread_pool_task and
reentrant_thread_init). ``Engine`` inherits these methods from ``DeviceThreads``."""

from __future__ import annotations

import itertools
import sys
import threading
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING

from gradviz.autograd import _state
from gradviz.autograd.input_buffer import CPU_DEVICE
from gradviz.autograd.ready_queue import ReadyQueue
from gradviz.device import set_thread_device

if TYPE_CHECKING:
    from gradviz.autograd.graph_task import GraphTask
    from gradviz.autograd.probe import Probe


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


class DeviceThreads:
    """Device workers and the reentrant pool, as methods of the engine that owns them."""

    probe: Probe | None
    max_recursion_depth: int

    def __init__(self) -> None:
        # _device_lock protects: device_ready_queues, device_threads.
        self._device_lock = threading.Lock()
        self.device_ready_queues: dict[str, ReadyQueue] = {}
        self.device_threads: dict[str, threading.Thread] = {}
        self.thread_pool_shared = ThreadPoolShared()

    def thread_main(self, graph_task: GraphTask | None) -> None:
        raise NotImplementedError

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


    def _wait_for_pool_thread(self, task: GraphTask) -> None:
        """Return once the pool thread that ran ``task`` has left the owner's queue: it serves
        that queue until the task's last NodeTask is done (thread_main), so the owner then has
        the queue to itself again."""
        done = task.pool_done
        assert done is not None
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
                )
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

