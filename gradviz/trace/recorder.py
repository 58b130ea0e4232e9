"""The recorder: a probe that turns each engine step into an event.

Use it through ``gradviz.trace(path)`` (streamed to a file) or ``gradviz.record()`` (kept in
memory)::

    with gradviz.trace("run.trace.json"):
        loss.backward()

    with gradviz.record() as rec:
        loss.backward()
    rec.trace            # a gradviz.trace.model.Trace

One recording at a time per process: starting a second while one is active raises
``RuntimeError("a gradviz recording is already active")`` (the engine has one probe slot, and a
nested recording would silently steal events from the outer one).

Outside a recording nothing is recorded and nothing is paid beyond the engine's ``probe is None``
check. Inside one, every probe call takes the recorder's lock once: seq is assigned and the event
appended under that lock, so file order is seq order even with several engine threads.

Every trace is self-contained: a node, queue, thread or leaf first referenced by a step (because
it was made before the recording started) gets its creation event just before that step.
"""

from __future__ import annotations

import atexit
import math
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz.autograd.probe import Probe
from gradviz.trace import events as ev
from gradviz.trace.codec import MAKERS as _MAKERS
from gradviz.trace.model import Trace

VALUES_MAX = 64  # tensors up to this many elements have their values stored when values=True
FLUSH_INTERVAL = 0.05  # seconds between timed flushes: what a SIGKILL can lose at most

_active_lock = threading.Lock()
_active: Recorder | None = None

_NAN = math.nan


def active() -> Recorder | None:
    """The recording in progress, if any."""
    return _active


# --- tensor summaries -------------------------------------------------------------------------


def _host(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)  # cupy arrays copy to the host with .get()
    return np.asarray(get() if callable(get) else a)


def stats_of(data: Any) -> ev.Stats:
    """norm/min/max/NaN/Inf of an array (numpy or cupy), reduced in float64."""
    a = _host(data)
    n = a.size
    if n == 0:
        return ev.Stats(0.0, _NAN, _NAN, 0, 0)
    if n <= _SMALL:
        return _small_stats(a.ravel().tolist())
    f = a.astype(np.float64, copy=False).ravel()
    if a.dtype.kind != "f" or np.isfinite(f).all():
        lo, hi = float(f.min()), float(f.max())
        return ev.Stats(_norm(f, max(-lo, hi)), lo, hi, 0, 0)
    isnan = np.isnan(f)
    nans = int(np.count_nonzero(isnan))
    infs = int(np.count_nonzero(np.isinf(f)))
    if nans == n:
        return ev.Stats(_NAN, _NAN, _NAN, nans, infs)
    norm = _NAN if nans else math.inf
    return ev.Stats(norm, float(np.nanmin(f)), float(np.nanmax(f)), nans, infs)


_SMALL = 16  # up to this many elements, Python floats beat numpy's per-call overhead


def _small_stats(xs: list[Any]) -> ev.Stats:
    vals = [float(x) for x in xs]
    finite = [x for x in vals if x - x == 0.0]  # NaN and +-inf fail this
    nans = sum(1 for x in vals if x != x)
    infs = len(vals) - len(finite) - nans
    if len(finite) == len(vals):
        lo, hi = min(vals), max(vals)
        return ev.Stats(_norm_list(vals, max(-lo, hi)), lo, hi, 0, 0)
    if nans == len(vals):
        return ev.Stats(_NAN, _NAN, _NAN, nans, 0)
    rest = [x for x in vals if x == x]
    return ev.Stats(_NAN if nans else math.inf, min(rest), max(rest), nans, infs)


def _norm_list(vals: list[float], amax: float) -> float:
    if amax < 1e150:
        return math.sqrt(math.fsum(x * x for x in vals))
    return amax * math.sqrt(math.fsum((x / amax) ** 2 for x in vals))


def _norm(f: np.ndarray, amax: float) -> float:
    # A ufunc reduction, not np.dot: dot goes to BLAS, whose thread pool costs a wake-up (up to
    # a millisecond on a busy machine) each time it is called between engine steps.
    if amax < 1e150:  # squares cannot overflow
        return float(np.sqrt(np.add.reduce(np.square(f))))
    g = f / amax  # scaled, so the norm of huge values stays finite when it is
    return float(amax * np.sqrt(np.add.reduce(np.square(g))))


def _array(x: Any) -> Any:
    """A tensor's array (tensors carry it as ``_data``); arrays pass through."""
    return getattr(x, "_data", x)


def _dtype_name(d: Any) -> str:
    name = getattr(d, "name", None)
    return name if isinstance(name, str) else str(d)


def _qualname(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(type(fn), "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# --- naming leaves --------------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CLI_DIR = os.path.join(os.path.dirname(_PKG_DIR), "cli")  # the source checkout's cli/ package


def _user_frame() -> Any:
    f = sys._getframe(2)
    while f is not None:
        fname = f.f_code.co_filename
        if not (fname.startswith(_PKG_DIR) or fname.startswith(_CLI_DIR)):
            return f
        f = f.f_back
    return None


def _name_in(frame: Any, tensor: Any) -> str | None:
    """A variable (or ``var.attr``) in the user's frame bound to ``tensor``: best effort."""
    if frame is None:
        return None
    scopes = [frame.f_locals] if frame.f_locals is not frame.f_globals else []
    scopes.append(frame.f_globals)
    for scope in scopes:
        for k, v in scope.items():
            if v is tensor and not k.startswith("_"):
                return k
    for scope in scopes[:1]:  # one level of attributes (self.weight) in locals only: cheap enough
        for k, v in scope.items():
            d = getattr(v, "__dict__", None)
            if type(d) is dict:
                for a, w in d.items():
                    if w is tensor:
                        return f"{k}.{a}"
    return None


# --- signals: never interrupt the recorder half-way through an event --------------------------

_TRACE_DIR = os.path.dirname(os.path.abspath(__file__))
RESIGNAL_DELAY = 0.005  # seconds before a deferred signal is delivered again


def in_recorder(frame: Any) -> bool:
    """Whether ``frame`` (where a signal handler interrupted the main thread) is inside the trace
    layer: an exception raised there could leave an event half-written (a seq without its event)."""
    f = frame
    while f is not None:
        if f.f_code.co_filename.startswith(_TRACE_DIR):
            return True
        f = f.f_back
    return False


def deferring_handler(signum: int, make_exc: Callable[[], BaseException]) -> Callable[[int, Any], None]:
    """A signal handler raising ``make_exc()``, but never inside the recorder: there it sends the
    signal again a few milliseconds later, by when the main thread has left the recorder."""

    def handler(sig: int, frame: Any) -> None:
        if in_recorder(frame):
            t = threading.Timer(RESIGNAL_DELAY, os.kill, (os.getpid(), signum))
            t.daemon = True
            t.start()
            return
        raise make_exc()

    return handler


# --- the recorder ---------------------------------------------------------------------------


class _ThreadTid(threading.local):
    tid: int | None = None


class Recorder(Probe):
    """A probe that records. Make one with ``gradviz.trace(path)`` or ``gradviz.record()``.

    ``start()``/``stop()`` or a ``with`` block. After it stops, ``trace`` is the recorded Trace
    (read back from the file for a file recording). ``count`` is the number of events so far.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, values: bool = False):
        self.path = os.fspath(path) if path is not None else None
        self.values = values
        self._lock = threading.Lock()
        self._seq = 0
        self._t0 = 0
        self._closed = False
        self._started = False
        self._events: list[ev.Event] | None = None
        self._writer: Any = None
        self._write: Callable[[ev.Event], None] = lambda e: None
        # ident -> (tid, Thread): idents are reused once a thread ends, so the Thread object
        # decides whether an ident still means the same thread. _local caches the caller's tid.
        self._tids: dict[int, tuple[int, Any]] = {}
        self._local = _ThreadTid()
        self._next_tid = 1
        self._nodes: set[int] = set()
        self._tensors: set[int] = set()
        self._queues: set[int] = set()
        self._tensor_sources: dict[int, str | None] = {}  # leaves made while recording, not yet emitted
        self._engine: Any = None
        self._prev_probe: Any = None
        self._flusher: threading.Thread | None = None
        self._stopping = threading.Event()
        self._trace: Trace | None = None
        self._sigint: Any = None
        self.status: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Events recorded so far."""
        return self._seq

    def start(self) -> Recorder:
        global _active
        with _active_lock:
            if _active is not None:
                raise RuntimeError("a gradviz recording is already active")
            if self._started:
                raise RuntimeError("this recorder has already been used; make a new one")
            self._started = True
            if self.path is not None:
                from gradviz.trace.file import TraceWriter

                self._writer = TraceWriter(self.path)
                self._write = self._writer.write
            else:
                self._events = []
                self._write = self._events.append
            self._engine = _default_engine()
            self._t0 = time.perf_counter_ns()
            with self._lock:
                tid = self._assign_tid(threading.current_thread())
                self._put(
                    ev.TraceBegin, tid, ev.FORMAT_VERSION, _gradviz_version(), np.__version__,
                    platform.python_version(), f"{sys.platform}-{platform.machine()}",
                    _devices(self._engine), tuple(sys.argv), os.getpid(), self.values,
                )  # fmt: skip
                self._announce(threading.current_thread(), tid, None, None)
            if self._engine is not None:
                self._prev_probe = self._engine.probe
                self._engine.probe = self
            _active = self
        self._guard_sigint()
        if self._writer is not None:
            self._flusher = threading.Thread(target=self._flush_loop, name="gradviz-trace-flush", daemon=True)
            self._flusher.start()
        atexit.register(self._at_exit)
        return self

    def stop(self, status: str = "ok", error: BaseException | None = None) -> None:
        """End the recording: uninstall, write trace_end (status ok/error/interrupted)."""
        global _active
        with _active_lock:
            if self._closed or not self._started:
                return
            if self._engine is not None and self._engine.probe is self:
                self._engine.probe = self._prev_probe
            self._stopping.set()
            with self._lock:
                tid = self._current_tid()
                text = None
                if error is not None:
                    text = _error_text(error)
                    self._put(ev.Error, tid, None, None, type(error).__name__, str(error), None)
                end = ev.TraceEnd(self._seq, time.perf_counter_ns() - self._t0, tid, status, self._seq, text)
                self._seq += 1
                self._closed = True
                self.status = status
                if self._writer is not None:
                    self._writer.close(end)
                else:
                    self._write(end)
            _active = None
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join()
        atexit.unregister(self._at_exit)
        if self._sigint is not None and threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGINT) is self._sigint:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            self._sigint = None

    def _guard_sigint(self) -> None:
        """Ctrl-C still raises KeyboardInterrupt, just not half-way through writing an event."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._sigint = deferring_handler(signal.SIGINT, KeyboardInterrupt)
            signal.signal(signal.SIGINT, self._sigint)

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, tp: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self.stop("ok")
        elif isinstance(exc, KeyboardInterrupt):
            self.stop("interrupted")
        elif isinstance(exc, SystemExit) and exc.code in (None, 0):
            self.stop("ok")
        else:
            self.stop("error", exc)

    def _at_exit(self) -> None:
        self.stop("interrupted")

    def _flush_loop(self) -> None:
        while not self._stopping.wait(FLUSH_INTERVAL):
            with self._lock:
                if not self._closed:
                    self._writer.flush()

    @property
    def trace(self) -> Trace:
        """The recorded trace (a snapshot while an in-memory recording is still running)."""
        if self._events is not None:
            if not self._closed:
                return Trace(list(self._events), truncated=True)
            if self._trace is None:
                self._trace = Trace(self._events)
            return self._trace
        if not self._closed:
            raise RuntimeError("the trace file is still being written; stop the recording first")
        if self._trace is None:
            from gradviz.trace.file import load

            self._trace = load(self.path)  # type: ignore[arg-type]
        return self._trace

    # -- emitting (all under self._lock) --------------------------------------------------------
    def _put(self, cls: type[ev.Event], tid: int, *fields: Any) -> None:
        if self._closed:  # a worker finishing a step after stop(): too late for this trace
            return
        seq = self._seq
        self._seq = seq + 1
        self._write(_MAKERS[cls](seq, time.perf_counter_ns() - self._t0, tid, *fields))

    def _assign_tid(self, thread: Any) -> int:
        tid = self._next_tid
        self._next_tid = tid + 1
        self._tids[thread.ident] = (tid, thread)
        if thread is threading.current_thread():
            self._local.tid = tid
        return tid

    def _announce(self, thread: Any, tid: int, role: str | None, device: str | None) -> None:
        if role is None:
            role = getattr(thread, "gv_role", None) or "caller"
            device = getattr(thread, "gv_device", None)
        self._put(ev.ThreadStart, tid, thread.name if thread is not None else f"thread-{tid}", device, role)

    def _current_tid(self) -> int:
        tid = self._local.tid
        if tid is None:
            thread = threading.current_thread()
            known = self._tids.get(thread.ident)  # announced by another thread (a queue's owner)?
            if known is not None and known[1] is thread:
                tid = self._local.tid = known[0]
            else:
                tid = self._assign_tid(thread)
                self._announce(thread, tid, None, None)
        return tid

    def _tid_of(self, ident: int | None) -> int | None:
        """The tid of another thread, announcing it if it has not been seen yet."""
        if ident is None:
            return None
        thread = threading._active.get(ident)  # type: ignore[attr-defined]
        if thread is None:
            return None
        known = self._tids.get(ident)
        if known is not None and known[1] is thread:
            return known[0]
        tid = self._assign_tid(thread)
        self._announce(thread, tid, None, None)
        return tid

    def _queue(self, q: Any, tid: int) -> int:
        qid = q.id
        if qid not in self._queues:
            self._queues.add(qid)
            owner = self._tid_of(getattr(q, "owner", None))
            self._put(ev.QueueCreated, tid, qid, str(q.device), owner, str(q.name))
        return qid

    def _node(self, node: Any, tid: int) -> int:
        """node's id, after emitting node_created (and those of its unknown successors) if needed."""
        nid = node._id
        if nid in self._nodes:
            return nid
        # successors first, as a forward pass makes them: edges then point at known nodes
        stack: list[tuple[Any, bool]] = [(node, False)]
        known = self._nodes
        while stack:
            n, expanded = stack.pop()
            if n._id in known:
                continue
            if not expanded:
                stack.append((n, True))
                for e in n.next_edges:
                    f = e.function
                    if f is not None and f._id not in known:
                        stack.append((f, False))
                continue
            known.add(n._id)
            self._emit_node(n, tid)
        return nid

    def _emit_node(self, n: Any, tid: int) -> None:
        var = getattr(n, "variable", None)
        tensor = None
        if var is not None:
            tensor = self._tensor(var, tid, None)
        edges = n.next_edges
        saved = tuple(tuple(s) for s in n.saved_shapes())
        self._put(
            ev.NodeCreated, tid, n._id, n.name(), n.sequence_nr, n.topological_nr, n.num_inputs,
            len(edges), str(n.device), saved, getattr(n, "source", None), tensor,
        )  # fmt: skip
        nid = n._id
        for slot, e in enumerate(edges):
            f = e.function
            self._put(ev.EdgeCreated, tid, nid, slot, None if f is None else f._id, e.input_nr)

    def _tensor(self, t: Any, tid: int, name: str | None) -> int:
        tensor_id = t._id
        if tensor_id not in self._tensors:
            self._tensors.add(tensor_id)
            source = self._tensor_sources.pop(tensor_id, None)
            self._put(
                ev.TensorCreated, tid, tensor_id, t.name or name, tuple(t.shape), _dtype_name(t.dtype),
                str(t.device), source,
            )  # fmt: skip
        return tensor_id

    def _values(self, data: Any) -> Any:
        if not self.values or data is None:
            return None
        a = _host(data)
        return a.tolist() if a.size <= VALUES_MAX else None

    # -- the probe ------------------------------------------------------------------------------
    def thread_start(self, role: str, device: str | None) -> None:
        thread = threading.current_thread()
        with self._lock:
            known = self._tids.get(thread.ident)
            if known is not None and known[1] is thread:
                self._local.tid = known[0]
            else:
                self._announce(thread, self._assign_tid(thread), role, device)

    def thread_end(self) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.ThreadEnd, tid)
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
        var = getattr(node, "variable", None)
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
                ev.TaskBegin, tid, task.id, root_edges, gr, bool(task.keep_graph), bool(task.create_graph),
                bool(task.accumulate_grad), outs, task.reentrant_depth, tid, q,
            )  # fmt: skip

    def dependencies(self, task: Any) -> None:
        with self._lock:
            tid = self._current_tid()
            counts = sorted((self._node(n, tid), c) for n, c in task.dependencies.items())
            self._put(ev.Dependencies, tid, task.id, tuple(counts))

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
            self._put(ev.ExecInfo, tid, task.id, tuple(sorted(needed)), tuple(sorted(captured)))

    def task_end(self, task: Any, error: BaseException | None) -> None:
        with self._lock:
            tid = self._current_tid()
            if error is None:
                self._put(ev.TaskEnd, tid, task.id, "ok", None)
            else:
                self._put(ev.TaskEnd, tid, task.id, "error", _error_text(error))

    def dependency_decrement(self, task: Any, node: Any, by: Any, remaining: int) -> None:
        with self._lock:
            tid = self._current_tid()
            nid, by_id = self._node(node, tid), self._node(by, tid)
            self._put(ev.DependencyDecrement, tid, task.id, nid, by_id, remaining)

    def _queue_event(self, cls: type[ev.Event], queue: Any, node_task: Any, size: int) -> None:
        fn = node_task.fn
        gt = node_task.graph_task
        what = "shutdown" if node_task.is_shutdown else ("wakeup" if fn is None else "node")
        with self._lock:
            tid = self._current_tid()
            qid = self._queue(queue, tid)
            nid = None if fn is None else self._node(fn, tid)
            self._put(cls, tid, qid, str(queue.device), None if gt is None else gt.id, nid, what,
                      tuple(node_task.key()), size)  # fmt: skip

    def queue_push(self, queue: Any, node_task: Any, size: int) -> None:
        self._queue_event(ev.QueuePush, queue, node_task, size)

    def queue_pop(self, queue: Any, node_task: Any, size: int) -> None:
        self._queue_event(ev.QueuePop, queue, node_task, size)

    def buffer_add(self, task: Any, node: Any, slot: int, grad: Any, mode: str, producer: Any) -> None:
        if grad is None:
            shape = dtype = device = stats = values = None
        else:
            data = _array(grad)
            shape = tuple(data.shape)
            dtype = _dtype_name(getattr(grad, "dtype", None) or data.dtype)
            device = str(getattr(grad, "device", "cpu"))
            stats = stats_of(data)
            values = self._values(data)
        with self._lock:
            tid = self._current_tid()
            nid = self._node(node, tid)
            pid = None if producer is None else self._node(producer, tid)
            self._put(ev.BufferAdd, tid, task.id, nid, slot, mode, pid, shape, dtype, device, stats, values)

    def not_ready_park(self, task: Any, node: Any, remaining: int) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.NotReadyPark, tid, task.id, self._node(node, tid), remaining)

    def not_ready_take(self, task: Any, node: Any) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.NotReadyTake, tid, task.id, self._node(node, tid))

    def pool_push(self, task: Any, depth: int) -> None:
        with self._lock:
            self._put(ev.PoolPush, self._current_tid(), task.id, depth)

    def pool_take(self, task: Any) -> None:
        with self._lock:
            self._put(ev.PoolTake, self._current_tid(), task.id)

    def node_begin(self, task: Any, node: Any, depth: int) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.NodeBegin, tid, task.id, self._node(node, tid), depth)

    def node_end(self, task: Any, node: Any, ok: bool) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.NodeEnd, tid, task.id, self._node(node, tid), "ok" if ok else "error")

    def hook(self, task: Any, node: Any, kind: str, fn: Any) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.Hook, tid, task.id, self._node(node, tid), kind, _qualname(fn))

    def accumulate_grad(self, task: Any, node: Any, tensor: Any, before: Any, after: Any, mode: str) -> None:
        if task is None:  # an AccumulateGrad called by hand, outside any backward: not an engine step
            return
        before_stats = None if before is None else stats_of(_array(before))
        after_data = _array(after)
        after_stats = stats_of(after_data)
        values = self._values(after_data)
        with self._lock:
            tid = self._current_tid()
            nid = self._node(node, tid)
            t = self._tensor(tensor, tid, None)
            self._put(ev.AccumulateGradUpdate, tid, task.id, nid, t, mode, before_stats, after_stats, values)

    def captured_grad(self, task: Any, node: Any, input_nr: int, index: int, grad: Any) -> None:
        data = None if grad is None else _array(grad)
        stats = None if data is None else stats_of(data)
        values = self._values(data)
        with self._lock:
            tid = self._current_tid()
            self._put(ev.CapturedGrad, tid, task.id, self._node(node, tid), input_nr, index, stats, values)

    def saved_release(self, node: Any, count: int) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.SavedRelease, tid, self._node(node, tid), count)

    def callback(self, task: Any, fn: Any) -> None:
        with self._lock:
            self._put(ev.Callback, self._current_tid(), task.id, _qualname(fn))

    def error(self, task: Any, node: Any, exc: BaseException, forward: str | None) -> None:
        with self._lock:
            tid = self._current_tid()
            nid = None if node is None else self._node(node, tid)
            self._put(ev.Error, tid, _task_id(task), nid, type(exc).__name__, str(exc), forward)

    def anomaly(self, task: Any, node: Any, message: str, forward: str | None) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put(ev.Anomaly, tid, task.id, self._node(node, tid), message, forward)


def _task_id(task: Any) -> Any:
    return None if task is None else task.id


def _default_engine() -> Any:
    try:
        from gradviz.autograd.engine import get_default_engine
    except ImportError:  # the engine is optional for recording hand-made steps (tests)
        return None
    return get_default_engine()


def _devices(engine: Any) -> tuple[str, ...]:
    """cpu, and every device whose worker the engine has started so far."""
    queues = getattr(engine, "device_ready_queues", None) or {}
    return ("cpu", *sorted(str(d) for d in list(queues)))


def _gradviz_version() -> str:
    from gradviz import __version__

    return __version__


def trace(path: str | os.PathLike[str], *, values: bool = False) -> Recorder:
    """Record to a file, streamed as it goes: ``with gradviz.trace("run.trace.json"): ...``.

    values: also store the values of tensors of up to VALUES_MAX elements (not just their stats).
    """
    return Recorder(path, values=values)


def record(*, values: bool = False) -> Recorder:
    """Record in memory: ``with gradviz.record() as rec: ...`` then ``rec.trace``."""
    return Recorder(None, values=values)
