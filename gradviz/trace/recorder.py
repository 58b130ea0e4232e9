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
check. Inside one, every probe call appends a row ``(kind, ts, tid, *fields)`` to one list (the
per-node steps without taking a lock: see the note above SPILL_ROWS), a format 3 line as Python
values, of an event or of a group of events (codec.GROUPS): a row's position gives its events'
seqs, so file order is seq order even with several engine threads. Rows become JSON lines in
batches (SPILL_ROWS, every FLUSH_INTERVAL from a shared flusher thread, and at stop), or events
when an in-memory recording's ``trace`` is read: the engine's threads pay for a tuple, not for an
event and its encoding one at a time.

Every trace is self-contained: a node, queue, thread or leaf first referenced by a step (because
it was made before the recording started) gets its creation event just before that step.
"""

from __future__ import annotations

import atexit
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np

from gradviz.autograd.probe import Probe
from gradviz.autograd.ready_queue import ReadyQueue
from gradviz.trace import codec
from gradviz.trace import events as ev
from gradviz.trace.model import Trace
from gradviz.trace.ranks import header_fields  # ddp
from gradviz.trace.recorder_announce import AnnounceMixin
from gradviz.trace.recorder_steps import _NOT_PASSED, StepsMixin
from gradviz.trace.summaries import (  # noqa: F401 - this module's names before the split
    _NEVER,
    VALUES_MAX,
    _error_text,
    _id_of,
    _now,
    _small_stats,
    _stats_row,
    stats_of,
)

FLUSH_INTERVAL = 0.05  # seconds between timed flushes: what a SIGKILL can lose at most

_PYTHON_VERSION = platform.python_version()
_PLATFORM = f"{sys.platform}-{platform.machine()}"

# The signal module's getsignal/signal wrap their arguments and results in enums: four such
# calls were a third of starting and stopping a recording (20 us). The C functions underneath
# take and return the same handlers.
try:
    import _signal

    _getsignal, _setsignal = _signal.getsignal, _signal.signal
except ImportError:  # pragma: no cover - not CPython
    _getsignal, _setsignal = signal.getsignal, signal.signal
_SIGINT = int(signal.SIGINT)

_active_lock = threading.Lock()
_active: Recorder | None = None



def active() -> Recorder | None:
    """The recording in progress, if any."""
    return _active


# --- signals: never interrupt the recorder half-way through an event --------------------------

_TRACE_DIR = os.path.dirname(os.path.abspath(__file__))
RESIGNAL_DELAY = 0.005  # seconds before a deferred signal is delivered again


def in_recorder(frame: Any) -> bool:
    """Whether ``frame`` (where a signal handler interrupted the main thread) is inside the trace
    layer, or inside a ready queue's push or pop: an exception raised there could leave an event
    half-written (a seq without its event) or a step without its event (a push the trace never
    hears of, whose pop it does). A queue's wait for work stays interruptible."""
    f = frame
    while f is not None:
        code = f.f_code
        if code is _QUEUE_WAIT:
            return False
        if code in _QUEUE_STEPS or code.co_filename.startswith(_TRACE_DIR):
            return True
        f = f.f_back
    return False


_QUEUE_STEPS = frozenset(m.__code__ for m in (ReadyQueue.push, ReadyQueue.push_ready, ReadyQueue.pop))
_QUEUE_WAIT = ReadyQueue._wait.__code__


def deferring_handler(signum: int, make_exc: Callable[[], BaseException]) -> Callable[[int, Any], None]:
    """A signal handler raising ``make_exc()``, but never inside the recorder: there it sends the
    signal again a few milliseconds later, by when the main thread has left the recorder."""

    # [a signal held back and not yet raised, a timer to send it again is waiting]
    state = [False, False]

    def resend() -> None:
        state[1] = False
        # Only a signal still held back, and only to this handler: once the exception was raised
        # (by a later delivery) or gradviz run restored the default handler, a second signal
        # would be a second Ctrl-C the user never pressed.
        if state[0] and signal.getsignal(signum) is handler:
            os.kill(os.getpid(), signum)

    def handler(sig: int, frame: Any) -> None:
        if in_recorder(frame):
            state[0] = True
            if not state[1]:  # one timer at a time; a resent signal that lands here again re-arms it
                state[1] = True
                t = threading.Timer(RESIGNAL_DELAY, resend)
                t.daemon = True
                t.start()
            return
        state[0] = False
        raise make_exc()

    return handler


# --- the flusher: one thread for all recordings ------------------------------------------------
#
# Flushing on a timer is what makes a killed program's trace whole up to its last 50 ms, even
# when the program sits idle. One thread serves every file recording of the process and lives
# on for FLUSHER_IDLE_EXIT seconds after the last one ends: starting and joining a thread per
# recording cost 0.12 ms of CPU, an eighth of a small MLP's millisecond backward. It is not a
# "gradviz-" engine thread: the engine's shutdown does not wait for it, nor need it.

FLUSHER_IDLE_EXIT = 1.0  # seconds without a file recording before the flusher thread ends
_flusher_cv = threading.Condition(threading.Lock())
_flusher: threading.Thread | None = None


def _wake_flusher() -> None:
    """A file recording started (``_active`` is set): make sure the flusher runs and knows."""
    global _flusher
    with _flusher_cv:
        if _flusher is None:
            _flusher = threading.Thread(target=_flush_main, name="trace-flusher", daemon=True)
            _flusher.start()
        else:
            _flusher_cv.notify()


def _flush_main() -> None:
    global _flusher
    while True:
        rec = _active
        if rec is not None and rec._writer is not None:
            time.sleep(FLUSH_INTERVAL)
            rec._timed_flush()  # a no-op if it stopped meanwhile
            continue
        with _flusher_cv:
            if _flusher_cv.wait(FLUSHER_IDLE_EXIT):
                continue  # woken by a new recording
            rec = _active
            if rec is None or rec._writer is None:  # _wake_flusher holds the lock: no race
                _flusher = None
                return


def _reset_flusher_in_child() -> None:
    global _flusher, _flusher_cv
    _flusher = None  # threads do not survive fork
    _flusher_cv = threading.Condition(threading.Lock())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_flusher_in_child)


# --- the recorder ---------------------------------------------------------------------------


class _ThreadTid(threading.local):
    tid: int | None = None
    ended: int | None = None  # the task this thread's last task_end ended (Recorder.call_error)


# Events are recorded as rows ``(kind, ts, tid, *fields)`` (codec's row layout): a tuple appended
# to a list is what the engine's thread pays for an event. Rows become JSON lines (to a file) or
# events (in memory) in batches: every SPILL_ROWS rows, every FLUSH_INTERVAL and at the end.
#
# The steps of every node (queue push/pop, node begin/end, buffer add, dependency decrement) take
# no lock: list.append is atomic under the GIL, and a row's position in the list is its seq, so
# rows from several threads are numbered in the order they were appended. The one list lives as
# long as the recording; spills take a slice off its front under the lock (rows appended
# meanwhile stay), never swap it for another, which could lose an append racing with the swap.
# The lock serialises what changes the recorder's own state: announcing a node, queue, thread
# or leaf (whose rows must precede any row naming it: the id joins its set only after its rows
# are appended, so a thread that sees it known also sees its rows before its own), spilling,
# starting and stopping. Timestamps are taken before the append: across threads they may be out
# of seq order by a thread switch, within a thread they never are.
SPILL_ROWS = 2048  # ~150 kB of JSON: encoded in cache (8192 rows a batch cost 12% more an event)
_first = itemgetter(0)


class Recorder(StepsMixin, AnnounceMixin, Probe):
    """A probe that records. Make one with ``gradviz.trace(path)`` or ``gradviz.record()``.

    ``start()``/``stop()`` or a ``with`` block. After it stops, ``trace`` is the recorded Trace
    (read back from the file for a file recording). ``count`` is the number of events so far.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, values: bool = False):
        self.path = os.fspath(path) if path is not None else None
        self.values = values
        self._lock = threading.Lock()
        self._rows: list[tuple] = []  # recorded, not yet spilled
        self._append = self._rows.append
        self._base = 0  # events spilled (rows spilled, and the events their groups add)
        # gradient_in rows stand for 3 events: counted from the rows
        # (_scan), up to row _scan_pos; node_edges rows' edges as they are made (under the lock)
        self._scan_pos = 0
        self._scan_extra = 0
        self._edges = 0
        self._spill_at = SPILL_ROWS if path is not None else sys.maxsize  # in memory: kept as rows
        self._t0 = 0
        self._closed = False
        self._final_count = 0
        self._started = False
        self._events: list[ev.Event] | None = None  # in memory, once stopped
        self._writer: Any = None
        # ident -> (tid, Thread): idents are reused once a thread ends, so the Thread object
        # decides whether an ident still means the same thread. _local caches the caller's tid.
        self._tids: dict[int, tuple[int, Any]] = {}
        self._local = _ThreadTid()
        self._next_tid = 1
        self._nodes: set[int] = set()
        self._tensors: set[int] = set()
        self._queues: dict[int, str] = {}  # queue id -> its device's name
        # AccumulateGrad node id -> (stats row, shape, dtype) of the one gradient its InputBuffer
        # got, until a hook might change it: in "set" mode the leaf's new .grad is a copy of it
        self._leaf_in: dict[int, tuple[Any, tuple[int, ...], str]] = {}
        self._tensor_sources: dict[int, str | None] = {}  # leaves made while recording, not yet emitted
        self._dtype_seen: tuple[Any, str] = (None, "")  # buffer_add's last (dtype, name)
        self._device_seen: tuple[Any, str] = (None, "")  # and (device, name)
        # and both, (dtype, device, dtype name, device name), when the dtype is a floating one and
        # values are not stored: gradient_in's chain case
        self._float_seen: tuple[Any, Any, str, str] = (_NEVER, _NEVER, "", "")
        # The last gradient that made a pass-on node ready (see _PASSES_ON): (node id, task id,
        # weak reference to the gradient, its version, its summary).
        self._passed: tuple = _NOT_PASSED
        self._engine: Any = None
        self._prev_probe: Any = None
        self._trace: Trace | None = None
        self._sigint: Any = None
        self.status: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Events recorded so far."""
        if self._closed:  # not len(rows): a step finishing after stop may have appended to them
            return self._final_count
        with self._lock:
            k = len(self._rows)
            return self._base + k + self._scan(k) + self._edges

    def _scan(self, k: int) -> int:
        """Under the lock: the events that the group rows among the first ``k`` rows (not yet
        spilled) add to their count of rows (edges aside)."""
        pos = self._scan_pos
        if k > pos:
            kinds = self._rows[pos:k]
            kinds = list(map(_first, kinds))
            self._scan_extra += 2 * kinds.count("gradient_in")
            self._scan_pos = k
        return self._scan_extra

    def start(self) -> Recorder:
        global _active
        with _active_lock:
            if _active is not None:
                raise RuntimeError("a gradviz recording is already active")
            if self._started:
                raise RuntimeError("this recorder has already been used; make a new one")
            self._started = True
            if self.path is not None:
                self._writer = _trace_writer(self.path)
            self._engine = _default_engine()
            self._t0 = _now()
            thread = threading.current_thread()
            with self._lock:
                tid = self._assign_tid(thread)
                rank = header_fields()  # ddp: a rank of a distributed job says which
                self._put(
                    "trace_begin", tid, ev.FORMAT_VERSION, _gradviz_version(), np.__version__,
                    _PYTHON_VERSION, _PLATFORM,
                    _devices(self._engine), tuple(sys.argv), os.getpid(), self.values,
                    rank.get("rank"), rank.get("local_rank"), rank.get("world_size"), None,  # ddp
                )  # fmt: skip
                self._announce_thread(thread, tid, None, None)
            if self._engine is not None:
                self._prev_probe = self._engine.probe
                self._engine.probe = self
            _active = self
        self._guard_sigint()
        if self._writer is not None:
            _wake_flusher()
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
            with self._lock:
                tid = self._current_tid()
                text = None
                if error is not None:
                    text = _error_text(error)
                    self._put("error", tid, None, None, type(error).__name__, str(error), None)
                # A step still under way on another thread may append after this: past the end,
                # its row is left out of the slice, as it would be if it came after stop.
                if self._writer is not None and len(self._rows) > SPILL_ROWS:
                    self._spill()
                rows = self._rows
                k = len(rows)
                n = self._base + k + self._scan(k) + self._edges
                end = ("trace_end", _now() - self._t0, tid, status, n, text)
                self.status = status
                self._final_count = n + 1
                if self._writer is not None:
                    rows_end = rows[:k]
                    rows_end.append(end)
                    self._writer.close_lines(codec.encode_rows(rows_end), k + 1)  # one encode, one write
                    del rows[:]
                    self._base = n + 1 - self._edges
                    self._scan_pos = self._scan_extra = 0
                else:
                    self._rows = rows[:k]
                    self._rows.append(end)
                self._closed = True
            _active = None
        atexit.unregister(self._at_exit)
        if self._sigint is not None and threading.current_thread() is threading.main_thread():
            if _getsignal(_SIGINT) is self._sigint:
                _setsignal(_SIGINT, signal.default_int_handler)
            self._sigint = None

    def _guard_sigint(self) -> None:
        """Ctrl-C still raises KeyboardInterrupt, just not half-way through writing an event."""
        if threading.current_thread() is not threading.main_thread():
            return
        if _getsignal(_SIGINT) is signal.default_int_handler:
            self._sigint = deferring_handler(_SIGINT, KeyboardInterrupt)
            _setsignal(_SIGINT, self._sigint)

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

    def _timed_flush(self) -> None:
        """Spill, from a thread that does not hold the lock (the flusher; node_end)."""
        with self._lock:
            if not self._closed:
                self._spill()

    def _spill(self) -> None:
        """Under the lock: encode the rows recorded so far and hand them to the OS, in one go."""
        rows = self._rows
        n = len(rows)  # rows appended from here on stay for the next spill
        if not n or self._writer is None:
            return
        extra = self._scan(n)
        step = SPILL_ROWS
        for i in range(0, n, step):  # a big walk's rows: in batches the JSON of which stays in cache
            j = min(i + step, n)
            self._writer.write_lines(codec.encode_rows(rows[i:j]), j - i)
        del rows[:n]
        self._base += n + extra
        self._scan_pos = self._scan_extra = 0

    @property
    def trace(self) -> Trace:
        """The recorded trace (a snapshot while an in-memory recording is still running)."""
        if self._writer is None:
            if not self._closed:
                rows = self._rows[:]
                return Trace(codec.events_from_rows(rows, 0), truncated=True)
            if self._trace is None:
                self._events = codec.events_from_rows(self._rows, 0)
                self._rows = []
                self._base = len(self._events)
                self._trace = Trace(self._events)
            return self._trace
        if not self._closed:
            raise RuntimeError("the trace file is still being written; stop the recording first")
        if self._trace is None:
            from gradviz.trace.file import load

            self._trace = load(self.path)  # type: ignore[arg-type]
        return self._trace

    # -- emitting: the slow paths, all under self._lock -------------------------------------------
    def _put(self, kind: str, tid: int, *fields: Any) -> None:
        if self._closed:  # a worker finishing a step after stop(): too late for this trace
            return
        rows = self._rows
        rows.append((kind, _now() - self._t0, tid, *fields))
        if len(rows) >= self._spill_at:
            self._spill()

    def _tid(self) -> int:
        """The calling thread's tid, announcing the thread if it is new (not under the lock)."""
        with self._lock:
            return self._current_tid()

    def _announce(self, node: Any) -> None:
        """Announce node (and its unknown successors), from a step that holds no lock."""
        with self._lock:
            self._node(node, self._current_tid())

    def _announce_queue(self, queue: Any) -> str:
        with self._lock:
            self._queue(queue, self._current_tid())
        return self._queues[queue.id]

    def _assign_tid(self, thread: Any) -> int:
        tid = self._next_tid
        self._next_tid = tid + 1
        self._tids[thread.ident] = (tid, thread)
        if thread is threading.current_thread():
            self._local.tid = tid
        return tid

    def _announce_thread(self, thread: Any, tid: int, role: str | None, device: str | None) -> None:
        if role is None:
            role = getattr(thread, "gv_role", None) or "caller"
            device = getattr(thread, "gv_device", None)
        self._put("thread_start", tid, thread.name if thread is not None else f"thread-{tid}", device, role)

    def _current_tid(self) -> int:
        tid = self._local.tid
        if tid is None:
            thread = threading.current_thread()
            known = self._tids.get(thread.ident)  # announced by another thread (a queue's owner)?
            if known is not None and known[1] is thread:
                tid = self._local.tid = known[0]
            else:
                tid = self._assign_tid(thread)
                self._announce_thread(thread, tid, None, None)
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
        self._announce_thread(thread, tid, None, None)
        return tid

    def _queue(self, q: Any, tid: int) -> int:
        qid = q.id
        if qid not in self._queues:
            device = str(q.device)
            owner = self._tid_of(getattr(q, "owner", None))
            self._put("queue_created", tid, qid, device, owner, str(q.name))
            self._queues[qid] = device  # known once its row is in: see above
        return qid

# What starting a recording imports, looked up once (an import statement in a function costs a
# microsecond or two each time: a tenth of starting and stopping an empty recording).
_get_default_engine: Any = None
_TraceWriter: Any = None
_VERSION: str | None = None


def _default_engine() -> Any:
    global _get_default_engine
    if _get_default_engine is None:
        try:
            from gradviz.autograd.engine import get_default_engine
        except ImportError:  # the engine is optional for recording hand-made steps (tests)
            return None
        _get_default_engine = get_default_engine
    return _get_default_engine()


def _trace_writer(path: str) -> Any:
    global _TraceWriter
    if _TraceWriter is None:
        from gradviz.trace.file import TraceWriter

        _TraceWriter = TraceWriter
    return _TraceWriter(path)


def _devices(engine: Any) -> tuple[str, ...]:
    """cpu, and every device whose worker the engine has started so far."""
    queues = getattr(engine, "device_ready_queues", None)
    if not queues:
        return ("cpu",)
    return ("cpu", *sorted(str(d) for d in list(queues)))


def _gradviz_version() -> str:
    global _VERSION
    if _VERSION is None:
        from gradviz import __version__

        _VERSION = __version__
    return _VERSION


def trace(path: str | os.PathLike[str], *, values: bool = False) -> Recorder:
    """Record to a file, streamed as it goes: ``with gradviz.trace("run.trace.json"): ...``.

    values: also store the values of tensors of up to VALUES_MAX elements (not just their stats).
    """
    return Recorder(path, values=values)


def record(*, values: bool = False) -> Recorder:
    """Record in memory: ``with gradviz.record() as rec: ...`` then ``rec.trace``."""
    return Recorder(None, values=values)
