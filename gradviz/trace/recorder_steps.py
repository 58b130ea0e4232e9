"""The recorder's probe calls: one row per engine step (a mixin of Recorder)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from weakref import ref as _weakref

from gradviz.trace.summaries import (
    Summary,
    _array,
    _dtype_name,
    _error_text,
    _id_of,
    _name_in,
    _ndarray,
    _now,
    _qualname,
    _stats_row,
    _user_frame,
)

if TYPE_CHECKING:
    from gradviz.trace.recorder import Recorder


_NO_ID = object()


def _queue_probe(kind: str) -> Callable[[Recorder, Any, Any, int], None]:
    """Recorder.queue_push / queue_pop: one function each, with the kind in a closure (not a
    shared helper taking it: that would be one more call on every push and pop)."""

    def probe(self: Recorder, queue: Any, node_task: Any, size: int) -> None:
        fn = node_task.fn
        qid = queue.id
        device = self._queues.get(qid)
        # the priority key as NodeTask.key() makes it, without the call
        if fn is None:
            nid = None
            if node_task.is_shutdown:
                what, key = "shutdown", (0, 0, 0)
            else:
                what, key = "wakeup", (1, node_task.reentrant_depth, 0)
        else:
            nid = fn._id
            if nid not in self._nodes:
                self._announce(fn)
            if node_task.is_shutdown:
                what, key = "shutdown", (0, 0, 0)
            else:
                what, key = "node", (2, node_task.reentrant_depth, fn.sequence_nr)
        if device is None:
            device = self._announce_queue(queue)
        # task_id, not graph_task: a wake-up popped after its task is gone names the task its
        # push named (the engine's own NodeTask has it; a bare one may not)
        task_id = getattr(node_task, "task_id", _NO_ID)
        if task_id is _NO_ID:
            gt = node_task.graph_task
            task_id = None if gt is None else gt.id
        self._append((kind, _now() - self._t0, self._local.tid or self._tid(), qid, device, task_id, nid, what, key,
                      size))  # fmt: skip

    probe.__name__ = kind
    probe.__qualname__ = f"Recorder.{kind}"
    return probe


class StepsMixin:
    """Recorder's Probe methods: each appends the rows of one engine step."""

    def thread_start(self, role: str, device: str | None) -> None:
        thread = threading.current_thread()
        with self._lock:
            known = self._tids.get(thread.ident)
            if known is not None and known[1] is thread:
                self._local.tid = known[0]
            else:
                self._announce_thread(thread, self._assign_tid(thread), role, device)

    def thread_end(self) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("thread_end", tid)
            self._tids.pop(threading.get_ident(), None)
            self._local.tid = None

    def queue_created(self, queue: Any) -> None:
        with self._lock:
            self._queue(queue, self._current_tid())

    def tensor_created(self, tensor: Any) -> None:
        # Emitted when the leaf joins a graph (its AccumulateGrad is made): by then the user's
        # variable holding it exists, so the event can carry a name. Remember where it was made.
        frame = _user_frame()
        source = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else None
        with self._lock:
            if not self._closed:
                self._tensor_sources[tensor._id] = source

    def node_created(self, node: Any) -> None:
        var = _variable(node)
        name = None
        if var is not None and var._id not in self._tensors and not var.name:
            name = _name_in(_user_frame(), var)
        with self._lock:
            tid = self._current_tid()
            if var is not None and name is not None:
                self._tensor(var, tid, name)
            self._node(node, tid)

    def task_begin(self, task: Any, roots: list[Any], graph_root: Any, outputs: list[Any]) -> None:
        with self._lock:
            tid = self._current_tid()
            node = self._node
            root_edges = tuple((node(e.function, tid), e.input_nr) for e in roots if e.function is not None)
            gr = node(graph_root, tid) if graph_root is not None else None
            outs = tuple((node(e.function, tid), e.input_nr) for e in outputs if e.function is not None)
            q = self._queue(task.cpu_ready_queue, tid)
            self._put(
                "task_begin", tid, task.id, root_edges, gr, bool(task.keep_graph), bool(task.create_graph),
                bool(task.accumulate_grad), outs, task.reentrant_depth, tid, q,
            )  # fmt: skip

    def dependencies(self, task: Any) -> None:
        with self._lock:
            tid = self._current_tid()
            known = self._nodes
            node = self._node
            deps = task.dependencies
            ids = list(map(_id_of, deps))  # in C: a node a task counts is almost always known
            if not known.issuperset(ids):
                ids = [n._id if n._id in known else node(n, tid) for n in deps]
            self._put("dependencies", tid, task.id, tuple(sorted(zip(ids, deps.values()))))

    def exec_info(self, task: Any) -> None:
        with self._lock:
            tid = self._current_tid()
            needed = []
            captured = []
            for n, info in task.exec_info.items():
                nid = self._node(n, tid)
                if getattr(info, "needed", False):
                    needed.append(nid)
                for input_nr, index in info.captures or ():  # (input_nr, output index) pairs
                    captured.append((nid, input_nr, index))
            self._put("exec_info", tid, task.id, tuple(sorted(needed)), tuple(sorted(captured)))

    def task_end(self, task: Any, error: BaseException | None) -> None:
        with self._lock:
            tid = self._current_tid()
            self._local.ended = task.id
            if error is None:
                self._put("task_end", tid, task.id, "ok", None)
            else:
                self._put("task_end", tid, task.id, "error", _error_text(error))
            if self._writer is not None:
                self._spill()  # control returns to user code: hand what came before to the OS

    def dependency_decrement(self, task: Any, node: Any, by: Any, remaining: int) -> None:
        nid = node._id
        by_id = by._id
        known = self._nodes
        if by_id not in known:
            self._announce(by)
        if nid not in known:
            self._announce(node)
        self._append(("dependency_decrement", _now() - self._t0, self._local.tid or self._tid(), task.id, nid, by_id,
                      remaining))  # fmt: skip

    queue_push = _queue_probe("queue_push")
    queue_pop = _queue_probe("queue_pop")

    def buffer_add(self, task: Any, node: Any, slot: int, grad: Any, mode: str, producer: Any) -> None:
        nid = node._id
        known = self._nodes
        if producer is None:
            pid = None
        else:
            pid = producer._id
            if pid not in known:
                self._announce(producer)
        if nid not in known:
            self._announce(node)
        shape, dtype, device, stats, values = self._summary(node, grad, mode)
        self._append(("buffer_add", _now() - self._t0, self._local.tid or self._tid(), task.id, nid, slot, mode, pid,
                      shape, dtype, device, stats, values))  # fmt: skip

    def gradient_in(self, task: Any, node: Any, by: Any, slot: int, grad: Any, mode: str, remaining: int,
                    not_ready: str | None, queue: Any, size: int) -> None:  # fmt: skip
        # The fast path's steps for one edge, as the rows its single calls would make, one
        # timestamp for all (they happen within a microsecond, in this order, on this thread).
        nid = node._id
        by_id = by._id
        known = self._nodes
        if by_id not in known:
            self._announce(by)
        if nid not in known:
            self._announce(node)
        data = getattr(grad, "_data", None)
        last = self._float_seen
        if (
            type(data) is _ndarray and data.size == 1 and grad.dtype is last[0] and grad.device is last[1]
            and _HAS_VARIABLE.get(type(node)) is False
        ):  # fmt: skip
            # A chain's gradient (one float, of the floating dtype and the device of the last one,
            # into a node without a leaf): _summary's case without the call.
            x = data.item()
            stats = x if x - x == 0.0 else _stats_row(data)
            shape, dtype, device, values = data.shape, last[2], last[3], None
        else:
            passed = self._passed
            if (
                passed[0] == by_id and grad is not None and passed[2]() is grad and passed[1] == task.id
                and passed[3] == grad._version_counter[0]
            ):  # fmt: skip
                # by handed on the gradient it got, unchanged: its summary is the one made then
                shape, dtype, device, stats, values = passed[4]
                if _variable(node) is not None:
                    if mode == "set":
                        self._leaf_in[nid] = (stats, shape, dtype)
                    else:
                        self._leaf_in.pop(nid, None)
            else:
                shape, dtype, device, stats, values = self._summary(node, grad, mode)
            if not remaining and mode == "set":
                passes = _PASSES_ON.get(type(node))
                if passes is None:
                    passes = _passes_on(type(node))
                if passes:
                    version = getattr(grad, "_version_counter", None)
                    if version is not None:
                        self._passed = (nid, task.id, _weakref(grad), version[0], (shape, dtype, device, stats, values))
        if queue is not None:
            qid = queue.id
            qdevice = self._queues.get(qid)
            if qdevice is None:
                qdevice = self._announce_queue(queue)
        ts = _now() - self._t0
        tid = self._local.tid or self._tid()
        task_id = task.id
        if not_ready is None and queue is not None:  # the common case: one group row
            self._append(("gradient_in", ts, tid, task_id, nid, by_id, remaining, slot, mode, shape, dtype, device,
                          stats, values, qid, qdevice, (2, task.reentrant_depth, node.sequence_nr), size))  # fmt: skip
            return
        append = self._append
        append(("dependency_decrement", ts, tid, task_id, nid, by_id, remaining))
        append(("buffer_add", ts, tid, task_id, nid, slot, mode, by_id, shape, dtype, device, stats, values))
        if not_ready is not None:
            if not_ready == "park":
                append(("not_ready_park", ts, tid, task_id, nid, remaining))
            else:
                append(("not_ready_take", ts, tid, task_id, nid))
        if queue is not None:
            key = (2, task.reentrant_depth, node.sequence_nr)
            append(("queue_push", ts, tid, qid, qdevice, task_id, nid, "node", key, size))

    def _summary(self, node: Any, grad: Any, mode: str) -> tuple:
        """buffer_add's shape, dtype, device, stats and values of ``grad`` arriving at node."""
        if grad is None:
            return None, None, None, None, None
        if type(grad) is Summary:
            return grad.shape, grad.dtype, grad.device, grad.stats, grad.values
        data = getattr(grad, "_data", grad)
        shape = data.shape
        # dtype and device names: the last ones asked for, by identity (one pair per
        # tuple, so a thread switch between two stores cannot pair a name with another key)
        dt = getattr(grad, "dtype", None) or data.dtype
        last = self._dtype_seen
        if last[0] is dt:
            dtype = last[1]
        else:
            dtype = _dtype_name(dt)
            self._dtype_seen = (dt, dtype)
        dev = getattr(grad, "device", "cpu")
        last = self._device_seen
        if last[0] is dev:
            device = last[1]
        else:
            device = str(dev)
            self._device_seen = (dev, device)
        if not self.values and data.dtype.kind == "f":
            self._float_seen = (dt, dev, dtype, device)
        if type(data) is _ndarray and data.size == 1 and data.dtype.kind == "f":
            x = data.item()  # a chain's gradient: _stats_row's case without the call
            stats = x if x - x == 0.0 else _stats_row(data)
        else:
            stats = _stats_row(data)
        values = self._values(data) if self.values else None
        if _variable(node) is not None:
            if mode == "set":
                self._leaf_in[node._id] = (stats, shape, dtype)  # type: ignore[assignment]
            else:
                self._leaf_in.pop(node._id, None)
        return shape, dtype, device, stats, values

    def not_ready_park(self, task: Any, node: Any, remaining: int) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("not_ready_park", tid, task.id, self._node(node, tid), remaining)

    def not_ready_take(self, task: Any, node: Any) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("not_ready_take", tid, task.id, self._node(node, tid))

    def pool_push(self, task: Any, depth: int) -> None:
        with self._lock:
            self._put("pool_push", self._current_tid(), task.id, depth)

    def pool_take(self, task: Any) -> None:
        with self._lock:
            self._put("pool_take", self._current_tid(), task.id)

    def node_begin(self, task: Any, node: Any, depth: int) -> None:
        nid = node._id
        if nid not in self._nodes:
            self._announce(node)
        self._append(("node_begin", _now() - self._t0, self._local.tid or self._tid(), task.id, nid, depth))
        if self._writer is not None and (node._hooked or not node._defer_safe):
            self._timed_flush()  # user code runs next (a hook, a custom backward): what came before is the OS's

    def node_end(self, task: Any, node: Any, ok: bool) -> None:
        nid = node._id
        if nid not in self._nodes:
            self._announce(node)
        self._append(("node_end", _now() - self._t0, self._local.tid or self._tid(), task.id, nid,
                      "ok" if ok else "error"))  # fmt: skip
        if len(self._rows) >= self._spill_at:  # once a node: often enough to spill in cache-sized batches
            self._timed_flush()

    def hook(self, task: Any, node: Any, kind: str, fn: Any) -> None:
        with self._lock:
            self._leaf_in.pop(node._id, None)  # the hook may change the gradient
            self._passed = _NOT_PASSED  # or replace it (then another may take its id)
            tid = self._current_tid()
            self._put("hook", tid, task.id, self._node(node, tid), kind, _qualname(fn))

    def accumulate_grad(self, task: Any, node: Any, tensor: Any, before: Any, after: Any, mode: str) -> None:
        if task is None:  # an AccumulateGrad called by hand, outside any backward: not an engine step
            return
        if type(after) is Summary:  # from a source that summarised its own tensors
            with self._lock:
                tid = self._current_tid()
                self._put("accumulate_grad", tid, task.id, self._node(node, tid), self._tensor(tensor, tid, None), mode,
                          None if before is None else before.stats, after.stats, after.values)  # fmt: skip
            return
        before_stats = None if before is None else _stats_row(_array(before))
        after_data = _array(after)
        seen = self._leaf_in.pop(node._id, None)
        if (
            seen is not None and mode == "set" and before is None and seen[1] == after_data.shape
            and seen[2] == _dtype_name(getattr(after, "dtype", None) or after_data.dtype)
        ):  # fmt: skip
            after_stats = seen[0]  # .grad was set to a copy of the gradient summarised in buffer_add
        else:
            after_stats = _stats_row(after_data)
        values = self._values(after_data) if self.values else None
        nid = node._id
        if nid in self._nodes and tensor._id in self._tensors:
            # no lock, as the per-node steps: a known node's rows, its leaf's before them, are in
            self._append(("accumulate_grad", _now() - self._t0, self._local.tid or self._tid(), task.id, nid,
                          tensor._id, mode, before_stats, after_stats, values))  # fmt: skip
            return
        with self._lock:
            tid = self._current_tid()
            nid = self._node(node, tid)
            t = self._tensor(tensor, tid, None)
            self._put("accumulate_grad", tid, task.id, nid, t, mode, before_stats, after_stats, values)

    def captured_grad(self, task: Any, node: Any, input_nr: int, index: int, grad: Any) -> None:
        if type(grad) is Summary:
            stats, values = grad.stats, grad.values
        else:
            data = None if grad is None else _array(grad)
            stats = None if data is None else _stats_row(data)
            values = self._values(data)
        with self._lock:
            tid = self._current_tid()
            self._put("captured_grad", tid, task.id, self._node(node, tid), input_nr, index, stats, values)

    def saved_release(self, node: Any, count: int) -> None:
        nid = node._id
        if nid not in self._nodes:
            self._announce(node)
        self._append(("saved_release", _now() - self._t0, self._local.tid or self._tid(), nid, count))

    def callback(self, task: Any, fn: Any) -> None:
        with self._lock:
            self._put("callback", self._current_tid(), task.id, _qualname(fn))

    def error(self, task: Any, node: Any, exc: BaseException, forward: str | None) -> None:
        if not isinstance(exc, Exception):
            # KeyboardInterrupt, SystemExit, a terminating signal: the run's status (trace_end),
            # not an error of the node that happened to be running (issue 35 item 9)
            return
        with self._lock:
            tid = self._current_tid()
            nid = None if node is None else self._node(node, tid)
            self._put("error", tid, _task_id(task), nid, type(exc).__name__, str(exc), forward)

    def call_error(self, exc: BaseException) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("error", tid, self._local.ended, None, type(exc).__name__, str(exc), None)

    def anomaly(self, task: Any, node: Any, message: str, forward: str | None) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("anomaly", tid, task.id, self._node(node, tid), message, forward)


# Summaries of a gradient handed on unchanged. An AddBackward0 (a bias add) returns the gradient
# it got as its first output: the same tensor, summarised again as its successor's gradient (a
# 64x256 one: ~12 us with the caches cold after the matmuls). gradient_in remembers the summary of
# the gradient that made a node ready alone (remaining 0, "set": no later gradient can be added
# into it in place), when the node is one whose formulas only call ops (an OpNode that is
# _defer_safe: no user code that could write into its input). When that node then reports the
# very same tensor (a weak reference: identity, not an id() that a new tensor could reuse; a
# strong one would change the refcounts that InputBuffer and AccumulateGrad steal by) at the
# same version, in the same task (a node runs once a task), the summary is reused. A hook on the
# node is told before it runs (Recorder.hook), and forgets it: hooks are user code.
_NOT_PASSED: tuple = (None, None, lambda: None, None, None)
_PASSES_ON: dict[type, bool] = {}


def _passes_on(cls: type) -> bool:
    try:
        from gradviz.ops.core import OpNode
    except ImportError:  # pragma: no cover - the ops layer is always there with the engine
        OpNode = None  # noqa: N806
    ok = _PASSES_ON[cls] = bool(OpNode is not None and issubclass(cls, OpNode) and getattr(cls, "_defer_safe", False))
    return ok


_HAS_VARIABLE: dict[type, bool] = {}  # node class -> whether it has a leaf (AccumulateGrad's variable)


def _variable(node: Any) -> Any:
    """An AccumulateGrad's leaf, None for other nodes. By class: ``getattr(node, "variable",
    None)`` on a node without one raises and catches an AttributeError (0.8 us a node), and a
    node class with a __getattr__ (OpNode's) would run it."""
    t = type(node)
    has = _HAS_VARIABLE.get(t)
    if has is None:
        has = _HAS_VARIABLE[t] = hasattr(t, "variable")
    return getattr(node, "variable", None) if has else None


def _task_id(task: Any) -> Any:
    return None if task is None else task.id
