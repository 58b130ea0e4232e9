"""GraphTask: the state of one backward call while it runs (torch's graph_task.h), with
exec_info (which nodes must run, which inputs are captured) and the future the caller waits on."""

from __future__ import annotations

import itertools
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gradviz.autograd import _state, graph
from gradviz.autograd.grad_mode import anomaly
from gradviz.autograd.graph import Edge, Node

if TYPE_CHECKING:
    from gradviz.autograd.input_buffer import InputBuffer
    from gradviz.autograd.ready_queue import ReadyQueue

_task_ids = itertools.count(1)


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
    # the instance only when they change: one GraphTask is made per backward, so a short
    # backward pays for each store.
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
                 reentrant_depth: int, cpu_ready_queue: ReadyQueue, exit_on_error: bool = False):
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
        # has_error, future_completed, final_callbacks (torch guards the atomics separately).
        self.mutex = _RLock()
        self.outstanding_tasks = 0
        # Read for every node: instance fields (Python 3.11 specializes those reads, not those
        # of a class default through the instance).
        self.has_error = False
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
                        min_topo_nr: int) -> None:
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
                probe = graph._ENGINE.probe
                if probe is not None:
                    probe.callback(self, cb)
                cb()
                i += 1
        finally:
            tls.current_graph_task = prev


# -- the reentrant thread pool ---------------------------------------------------------------
