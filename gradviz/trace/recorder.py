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

Steps come from a source: gradviz's engine, whose probe the recorder is, or a ``Source`` that
calls the probe's methods itself (real torch's, gradviz.torchrec, registered in ``SOURCES``):
one writer, one header, one lifecycle for both. The recorder is one concept in one file: its
lifecycle and spilling, then the probe's steps, then the announcements of nodes and leaves.

Every trace is self-contained: a node, queue, thread or leaf first referenced by a step (because
it was made before the recording started) gets its creation event just before that step.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable
from operator import itemgetter
from typing import Any, Protocol
from weakref import ref as _weakref

import numpy as np

from gradviz import _engine_sources
from gradviz.autograd.probe import Probe
from gradviz.autograd.ready_queue import ReadyQueue
from gradviz.trace import codec
from gradviz.trace import events as ev
from gradviz.trace.codec import Raw
from gradviz.trace.model import Trace
from gradviz.trace.ranks import header_fields  # ddp
from gradviz.trace.recorder_forward import ForwardMixin
from gradviz.trace.summaries import (  # noqa: F401 - _small_stats, stats_of: this module's names
    _NEVER,
    VALUES_MAX,
    Summary,
    _array,
    _dtype_name,
    _error_text,
    _host,
    _id_of,
    _name_in,
    _ndarray,
    _now,
    _qualname,
    _small_stats,
    _stats_row,
    _user_frame,
    stats_of,
)
from gradviz.trace.user_code import error_site, user_site
from gradviz.trace.warnings_tap import WarningTap

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
        if code in _QUEUE_STEPS or code in _GUARDED or code.co_filename.startswith(_TRACE_DIR):
            return True
        f = f.f_back
    return False


_QUEUE_STEPS = frozenset(m.__code__ for m in (ReadyQueue.push, ReadyQueue.push_ready, ReadyQueue.pop))
_GUARDED: set[Any] = set()  # a source's code that emits steps (guard())


def guard(*functions: Any) -> None:
    """A Source's functions that emit steps: a Ctrl-C waits until they return, as for the
    recorder's own (they call no user code)."""
    _GUARDED.update(f.__code__ for f in functions)
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


def _leave_recording_to_parent() -> None:
    """After a fork, in the child (a DataLoader worker, a user's os.fork): the recording is the
    parent's. The child records nothing: its steps are not the parent's engine's, and what it
    wrote would land in the middle of the parent's file (the descriptor is shared). Locks that
    another of the parent's threads held at the fork are made anew: that thread is not here to
    release them."""
    global _flusher, _flusher_cv, _active, _active_lock
    _flusher = None  # threads do not survive fork
    _flusher_cv = threading.Condition(threading.Lock())
    _active_lock = threading.Lock()
    rec, _active = _active, None
    if rec is not None:
        rec._left_to_parent()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_leave_recording_to_parent)


# --- the recorder ---------------------------------------------------------------------------


def _leaf_stats(t: Any) -> Any:
    """A leaf's values when it joined a graph, as a stats row (diff tells an unseeded run by them):
    from its data on gradviz's engine; a source's leaf adapter brings its own (None: no storage)."""
    data = getattr(t, "_data", None)
    return _stats_row(data) if data is not None else getattr(t, "stats_row", None)


class Source(Protocol):
    """What feeds a Recorder other than gradviz's engine (torchrec's real-torch source; a
    forward-side source can be one too). ``start`` runs inside Recorder.start, once the trace's
    header is written and the recording is the active one: it installs its observers and from
    then on calls the recorder's probe methods (and engine_info / announce / mark_derived /
    flush_derived / forget) from any thread. ``stop`` runs first in Recorder.stop: it removes its
    observers and emits what it still holds; after it returns it calls the recorder no more.
    ``stop`` may come without ``start`` having run (another source failed to start): then it
    does nothing. Several sources: ``Sources(a, b)``."""

    def start(self, recorder: Recorder) -> None: ...

    def stop(self, recorder: Recorder) -> None: ...

    # Optional: ``forget_in_child()``, called in a forked child: remove the observers without
    # emitting anything (the recording is the parent's; see _leave_recording_to_parent).


class Sources:
    """Several sources feeding one recording (real torch's backward, and a forward-side source):
    started in order, stopped in reverse."""

    def __init__(self, *sources: Source) -> None:
        self.sources = sources

    def start(self, recorder: Recorder) -> None:
        for s in self.sources:  # one that fails: Recorder.start stops them all (a source's stop
            s.start(recorder)  # must do nothing where its start did not run)

    def stop(self, recorder: Recorder) -> None:
        for s in reversed(self.sources):
            s.stop(recorder)

    def forget_in_child(self) -> None:
        for s in reversed(self.sources):
            forget = getattr(s, "forget_in_child", None)
            if forget is not None:
                forget()


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


_NO_ID = object()


def _queue_probe(kind: str) -> Callable[[Any, Any, Any, int], None]:
    """Recorder.queue_push / queue_pop: one function each, with the kind in a closure (not a
    shared helper taking it: that would be one more call on every push and pop)."""

    def probe(self: Any, queue: Any, node_task: Any, size: int) -> None:
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
                      size))

    probe.__name__ = kind
    probe.__qualname__ = f"Recorder.{kind}"
    return probe


def _own_fields(cls: type[ev.Event]) -> list[dataclasses.Field]:  # ddp: Recorder.emit's row order
    """An event class's fields after seq, ts and tid: a row's, in file order."""
    return [f for f in dataclasses.fields(cls) if f.name not in ("seq", "ts", "tid")]


class Recorder(ForwardMixin, Probe):  # ForwardMixin: gradviz why's forward-side events
    """A probe that records. Make one with ``gradviz.trace(path)`` or ``gradviz.record()``.

    ``start()``/``stop()`` or a ``with`` block. After it stops, ``trace`` is the recorded Trace
    (read back from the file for a file recording). ``count`` is the number of events so far.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, values: bool = False,
                 source: Source | None = None):
        self.path = os.fspath(path) if path is not None else None
        self.values = values
        # Where the steps come from: None, gradviz's engine (the recorder is its probe); else a
        # Source that calls the probe's methods itself (torchrec, over real torch).
        self._source = source
        self._derived: list[int] = []  # seqs of events a source inferred, not yet in a derived event
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
        self._warnings: WarningTap | None = None  # the program's warnings, seen as shown (forward side)
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
            extra = 2 * kinds.count("gradient_in")
            if self._source is not None:  # only a source's steps (source_rows) make node_pop rows
                extra += kinds.count("node_pop")
            self._scan_extra += extra
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
                # OSError here (/dev/full, a file-size limit): refused before any of the work
                self._writer = _trace_writer(self.path)
            self._engine = _default_engine() if self._source is None else None
            self._t0 = _now()
            thread = threading.current_thread()
            with self._lock:
                tid = self._assign_tid(thread)
                # ddp: a rank of a distributed job says which (a source adds what only it can know:
                # torch's backend, when the process group exists already)
                rank = {**header_fields(), **getattr(self._source, "header_fields", dict)()}
                self._put(
                    "trace_begin", tid, ev.FORMAT_VERSION, _gradviz_version(), np.__version__,
                    _PYTHON_VERSION, _PLATFORM,
                    _devices(self._engine), tuple(sys.argv), os.getpid(), self.values,
                    rank.get("rank"), rank.get("local_rank"), rank.get("world_size"), rank.get("backend"),  # ddp
                )
                self._announce_thread(thread, tid, None, None)
            if self._engine is not None:
                self._prev_probe = self._engine.probe
                self._engine.probe = self
            _active = self
        if self._source is not None:
            try:
                self._source.start(self)
            except BaseException as exc:
                self.stop("error", exc)
                raise
        self._guard_sigint()
        if self.forward:
            self._warnings = WarningTap(self._warning_shown)
            self._warnings.install()
        if self._writer is not None:
            _wake_flusher()
        atexit.register(self._at_exit)
        return self

    def stop(self, status: str = "ok", error: BaseException | None = None) -> None:
        """End the recording: uninstall, write trace_end (status ok/error/interrupted)."""
        global _active
        if self._warnings is not None:
            self._warnings.remove()
        if self._source is not None and not self._closed and self._started:
            self._source.stop(self)  # its hooks off, and what it still holds written
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
                    self._put("error", tid, None, None, type(error).__name__, str(error), None, error_site(error))
                self._put_derived(tid)
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

    # -- what a Source calls besides the probe's steps ----------------------------------------------
    def engine_info(self, engine: str, torch_version: str | None) -> None:
        """Which engine the source observes (written once, right after the header)."""
        with self._lock:
            self._put("engine", self._current_tid(), engine, torch_version)

    def announce(self, node: Any) -> int:
        """Announce ``node`` and the nodes it reaches that are not announced yet; its id."""
        with self._lock:
            return self._node(node, self._current_tid())

    def announce_sorted(self, nodes: list[Any]) -> None:
        """Announce ``nodes``, every node after those its edges point to (a source that knows its
        graph's order: torchrec's adapters by topological_nr), the unknown ones, and their leaves:
        the rows ``announce`` of the first would make, written as they are made, in batches (no
        walk, no sort, and no row of a big graph held until the last is made)."""
        with self._lock:
            if self._closed:
                return
            tid = self._current_tid()
            ts = _now() - self._t0
            by_id = self._writer is None
            known = self._nodes
            add = known.add
            row = self._row
            rows = self._rows
            append = rows.append
            spill_at = self._spill_at
            n_edges = 0
            for n in nodes:
                nid = n._id
                if nid in known:
                    continue
                made, leaf = row(n, ts, tid, by_id)
                if leaf is not None:
                    append(leaf)
                append(made)
                add(nid)  # after its rows: see the note on SPILL_ROWS
                n_edges += made[8]
                if len(rows) >= spill_at:
                    self._edges += n_edges
                    n_edges = 0
                    self._spill()
            self._edges += n_edges
            if len(rows) >= spill_at:
                self._spill()

    def forget(self, node_ids: Any) -> None:
        """Node ids that will never be named again (a source's freed graph): their bookkeeping
        goes, so a long run's memory stays flat. An id used again would be announced again."""
        with self._lock:
            self._nodes.difference_update(node_ids)

    def mark_derived(self, since: int) -> None:
        """The events from seq ``since`` (a ``count`` read before them) to now were inferred by
        the source, not observed; they are listed in the next ``derived`` event. The caller
        keeps other steps out meanwhile (torchrec emits under one lock)."""
        with self._lock:
            k = len(self._rows)
            end = self._base + k + self._edges + self._scan(k)
            if end > since:
                self._derived.extend(range(since, end))

    def source_rows(self, rows: list[tuple], events: int, derived_from: int, derived_to: int,
                    head: int = 0, flush: bool = False) -> None:
        """A source's steps as finished rows ``(kind, ts, tid, *fields)``, in order: one row an
        event, or a group row (``gradient_in``: three events, ``node_pop``: two), ``events`` in
        all. Its events ``derived_from`` to ``derived_to`` (0: the first row's first event) were
        inferred, not observed: listed in the next ``derived`` event. ``flush``: user code runs
        next (a custom Function's backward, a hook), so what came before goes to the OS now.
        ``head``: the first ``head`` events were inferred too (a second range, before the first).
        One lock and one call for a node's steps, where a probe call each would be several."""
        with self._lock:
            if self._closed:
                return
            mine = self._rows
            k = len(mine)
            start = self._base + k + self._scan(k) + self._edges
            mine.extend(rows)
            self._scan_pos = len(mine)  # what _scan would count of these rows, known
            self._scan_extra += events - len(rows)
            if head:
                self._derived.extend(range(start, start + head))
            if derived_to > derived_from:
                self._derived.extend(range(start + derived_from, start + derived_to))
            if self._writer is not None and (flush or len(mine) >= self._spill_at):
                self._spill()

    def flush_derived(self) -> None:
        """Write the ``derived`` event listing the inferred events so far (if any)."""
        with self._lock:
            self._put_derived(self._current_tid())

    # ddp: a source's events of kinds with no probe step (torch.distributed's), from any thread:
    # a collective completes on the backend's own thread, announced as a "comm" thread.
    def emit(self, cls: type[ev.Event], **fields: Any) -> None:
        """One event of ``cls`` from the calling thread, its fields by name (left out: the default)."""
        with self._lock:
            tid = self._current_tid("comm")
            self._put(cls.kind, tid, *[fields[f.name] if f.name in fields else f.default
                                       for f in _own_fields(cls)])

    def tensor(self, t: Any, name: str | None) -> int:  # ddp
        """Announce a source's leaf (a leaf adapter: ``_id``, ``name``, shape...) if new; its id."""
        with self._lock:
            return self._tensor(t, self._current_tid("comm"), name)

    def now(self) -> int:  # ddp
        """The recording's clock: ns since the trace began (events' ts)."""
        return _now() - self._t0

    def _put_derived(self, tid: int) -> None:
        if self._derived:
            seqs, self._derived = tuple(self._derived), []
            self._put("derived", tid, seqs)

    def _at_exit(self) -> None:
        self.stop("interrupted")

    def _left_to_parent(self) -> None:
        """In a forked child: this recording is closed here without a word written (the parent
        goes on writing the file), its source's observers come off, and the child's exit writes
        no trace_end."""
        self._lock = threading.Lock()
        self._closed = True
        if self._warnings is not None:
            self._warnings.remove()
        self._rows = []
        self._append = self._rows.append
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.forget_in_child()
        if self._engine is not None and self._engine.probe is self:
            self._engine.probe = self._prev_probe
        forget = getattr(self._source, "forget_in_child", None)
        if forget is not None:
            forget()
        atexit.unregister(self._at_exit)
        if self._sigint is not None:
            try:
                if _getsignal(_SIGINT) is self._sigint:
                    _setsignal(_SIGINT, signal.default_int_handler)
            except ValueError:  # forked from a thread other than the main one: not this thread's to set
                pass
            self._sigint = None

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

    def _current_tid(self, role: str | None = None) -> int:  # ddp: role, of a thread not seen yet
        tid = self._local.tid
        if tid is None:
            thread = threading.current_thread()
            known = self._tids.get(thread.ident)  # announced by another thread (a queue's owner)?
            if known is not None and known[1] is thread:
                tid = self._local.tid = known[0]
            else:
                tid = self._assign_tid(thread)
                self._announce_thread(thread, tid, role, None)
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

    # -- the probe's steps: one row per engine step ------------------------------------------------

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
            )

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
                      remaining))

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
                      shape, dtype, device, stats, values))

    def gradient_in(self, task: Any, node: Any, by: Any, slot: int, grad: Any, mode: str, remaining: int,
                    not_ready: str | None, queue: Any, size: int) -> None:
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
        ):
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
            ):
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
                          stats, values, qid, qdevice, (2, task.reentrant_depth, node.sequence_nr), size))
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
                      "ok" if ok else "error"))
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
                          None if before is None else before.stats, after.stats, after.values)
            return
        before_stats = None if before is None else _stats_row(_array(before))
        after_data = _array(after)
        seen = self._leaf_in.pop(node._id, None)
        if (
            seen is not None and mode == "set" and before is None and seen[1] == after_data.shape
            and seen[2] == _dtype_name(getattr(after, "dtype", None) or after_data.dtype)
        ):
            after_stats = seen[0]  # .grad was set to a copy of the gradient summarised in buffer_add
        else:
            after_stats = _stats_row(after_data)
        values = self._values(after_data) if self.values else None
        nid = node._id
        if nid in self._nodes and tensor._id in self._tensors:
            # no lock, as the per-node steps: a known node's rows, its leaf's before them, are in
            self._append(("accumulate_grad", _now() - self._t0, self._local.tid or self._tid(), task.id, nid,
                          tensor._id, mode, before_stats, after_stats, values))
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
            self._put("error", tid, _task_id(task), nid, type(exc).__name__, str(exc), forward, error_site(exc))

    def call_error(self, exc: BaseException) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("error", tid, self._local.ended, None, type(exc).__name__, str(exc), None, error_site(exc))

    def _warning_shown(self, msg: Any, shown: bool) -> None:
        """A warning the program gives (WarningTap): what it says, where Python places it, the
        user's line running then, and whether it was printed or caught."""
        with self._lock:
            if self._closed:
                return
            self._put("warning", self._current_tid(), msg.category.__name__, str(msg.message)[:1000],
                      f"{msg.filename}:{msg.lineno}", user_site(1), shown)

    def anomaly(self, task: Any, node: Any, message: str, forward: str | None) -> None:
        with self._lock:
            tid = self._current_tid()
            self._put("anomaly", tid, task.id, self._node(node, tid), message, forward)

    # -- announcements: a node, its edges and the leaves it reaches, before the first step naming them

    def _node(self, node: Any, tid: int) -> int:
        """node's id, after emitting node_created (and those of its unknown successors) if needed.

        A graph built before the recording began is announced here in one walk, on the first step
        that names one of its nodes (for a backward, task_begin's roots): its rows share one
        timestamp, the moment it was announced."""
        nid = node._id
        known = self._nodes
        if nid in known:
            return nid
        if self._closed:
            return nid
        ts = _now() - self._t0
        # Edges go into a file's rows as the engine's own Edge tuples: the JSON encoder writes
        # their nodes as ids (codec's hook), for a fraction of what building id pairs here costs.
        # Kept in memory, rows hold ids, so that they do not keep the graph alive.
        by_id = self._writer is None
        row = self._row
        for f, _ in node.next_edges:
            if f is not None and f._id not in known:
                break
        else:
            # Its successors are all announced: a graph recorded as it is built (a forward under
            # gradviz run) comes here once a node, with no walk to make.
            made, leaf = row(node, ts, tid, by_id)
            rows = self._rows
            if leaf is not None:
                rows.append(leaf)
            rows.append(made)
            known.add(nid)  # after its rows: see the note on SPILL_ROWS
            self._edges += made[8]
            if len(rows) >= self._spill_at:
                self._spill()
            return nid
        n_edges = 0
        # One pass finds the unknown nodes (breadth first) and makes their rows; then the rows
        # are sorted by topological_nr, which puts every node after the nodes its edges point to
        # (so that an edge names a node announced before it): a node's topological_nr is one more
        # than the largest of its successors' (torch's rule, kept by every way a node is made).
        # The pass checks the rule on the way; a graph that breaks it gets a depth-first order.
        made_rows: list[tuple] = []
        keep = made_rows.append
        leaves: dict[int, tuple] = {}  # node id -> the tensor_created row of its leaf
        todo = [node]
        seen = {nid}
        see = seen.add
        push = todo.append
        ordered = True
        for n in todo:  # grows as it goes
            topo = n.topological_nr
            for f, _ in n.next_edges:
                if f is not None:
                    fid = f._id
                    if fid not in known:
                        if fid not in seen:
                            see(fid)
                            push(f)
                        if f.topological_nr >= topo:
                            ordered = False
            made, leaf = row(n, ts, tid, by_id)
            if leaf is not None:  # goes just before the node's row
                leaves[made[3]] = leaf
            keep(made)
            n_edges += made[8]
        if ordered:
            made_rows.sort(key=_topo_of_row)
        else:
            row_of = {r[3]: r for r in made_rows}
            made_rows = [row_of[n._id] for n in _walk(node, known)]
        if leaves:  # AccumulateGrads (topological_nr 0) come first: a short loop
            out: list[tuple] = []
            left = len(leaves)
            i = 0
            for i, r in enumerate(made_rows):  # noqa: B007 - i is used after the loop
                leaf = leaves.get(r[3])
                if leaf is not None:
                    out.append(leaf)
                    left -= 1
                out.append(r)
                if not left:
                    break
            out += made_rows[i + 1 :]
            made_rows = out
        rows = self._rows
        rows.extend(made_rows)
        known.update(seen)  # after their rows: see the note on SPILL_ROWS
        self._edges += n_edges
        if len(rows) >= self._spill_at:
            self._spill()
        return nid

    def _row(self, n: Any, ts: int, tid: int, by_id: bool) -> tuple[tuple, tuple | None]:
        """Node n's node_edges row, and the tensor_created row of its leaf when that is not
        announced yet (an AccumulateGrad's), else None."""
        edges = n.next_edges
        info = _CLASS_INFO.get(type(n))
        if info is None:
            info = _class_info(type(n))
        name, has_var, plain_device, saved_how = info
        if name is None:
            name = n.name()
        tensor = leaf = None
        if has_var:
            var = n.variable
            if var is not None:
                tensor = var._id
                leaf = self._tensor_row(var, tid, None)
        md = n.input_metadata
        if plain_device:  # Node.device, without the property and str() of the same device again
            if md:
                d = md[0][2]  # (shape, dtype, device)
                last = self._device_seen
                if last[0] is d:
                    device = last[1]
                else:
                    device = str(d)
                    self._device_seen = (d, device)
            else:
                device = "cpu"
        else:
            device = n.device
            if type(device) is not str:
                device = str(device)
        # saved_how: 0 saves nothing (Node's), 1 an OpNode's: tensors (SavedVariables, lists of
        # them) among plain values (a chain's scalar factors), 2 ask the node
        saved = None
        if saved_how == 1:
            for v in n.saved.values():
                if type(v) is _SavedVariable or type(v) is list:
                    saved = n.saved_shapes()
                    break
        elif saved_how == 2:
            saved = n.saved_shapes()
        return (
            "node_edges", ts, tid, n._id, name, n.sequence_nr, n.topological_nr, len(md), len(edges), device,
            tuple([sh if type(sh) is tuple else tuple(sh) for sh in saved]) if saved else (), n.source, tensor,
            getattr(n, "columns", None),  # a probe's node may predate the field (probe.py)
            tuple([(None if f is None else f._id, i) for f, i in edges]) if by_id else edges,
        ), leaf

    def _tensor(self, t: Any, tid: int, name: str | None) -> int:
        row = self._tensor_row(t, tid, name)
        if row is not None and not self._closed:
            rows = self._rows
            rows.append(row)
            if len(rows) >= self._spill_at:
                self._spill()
        return t._id

    def _tensor_row(self, t: Any, tid: int, name: str | None) -> tuple | None:
        """The tensor_created row of a leaf not announced yet (which counts as announced now)."""
        tensor_id = t._id
        if tensor_id in self._tensors:
            return None
        self._tensors.add(tensor_id)
        source = self._tensor_sources.pop(tensor_id, None)
        return (
            "tensor_created", _now() - self._t0, tid, tensor_id, t.name or name, tuple(t.shape), _dtype_name(t.dtype),
            str(t.device), source, _leaf_stats(t),
        )

    def _values(self, data: Any) -> Raw | None:
        if not self.values or data is None:
            return None
        a = _host(data)
        if a.size > VALUES_MAX:
            return None
        v = a.tolist()
        return Raw(v, codec._encode_any(v))


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


# engine name -> what makes its Source (given ``values``). "gradviz" is the engine itself; the
# package above the trace layer registers the others (gradviz/__init__.py: "torch", torchrec's),
# so that this layer never imports them.
SOURCES: dict[str, Callable[[bool], Source]] = _engine_sources  # the dict itself, filled at gradviz's import


def source_for(engine: str, values: bool) -> Source | None:
    """The Source recording ``engine`` (None: gradviz's own engine, whose probe the recorder is)."""
    if engine == "gradviz":
        return None
    make = SOURCES.get(engine)
    if make is None:
        names = ", ".join(repr(n) for n in ("gradviz", *SOURCES))
        raise ValueError(f"engine must be one of {names}, got {engine!r}")
    return make(values)


def trace(path: str | os.PathLike[str], *, values: bool = False, engine: str = "gradviz") -> Recorder:
    """Record to a file, streamed as it goes: ``with gradviz.trace("run.trace.json"): ...``.

    values: also store the values of tensors of up to VALUES_MAX elements (not just their stats).
    engine: "gradviz" (gradviz's engine) or "torch" (real PyTorch's, observed by its hooks).
    """
    return Recorder(path, values=values, source=source_for(engine, values))


def record(*, values: bool = False, engine: str = "gradviz") -> Recorder:
    """Record in memory: ``with gradviz.record() as rec: ...`` then ``rec.trace``."""
    return Recorder(None, values=values, source=source_for(engine, values))


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


# node class -> (its name() if the class does not override Node.name, whether it has a leaf,
# whether its device is Node.device): what announcing a node would otherwise ask every node
_CLASS_INFO: dict[type, tuple[str | None, bool, bool, int]] = {}


def _class_info(cls: type) -> tuple[str | None, bool, bool, int]:
    from gradviz.autograd.graph import Node

    global _SavedVariable
    # The ops layer as far as it is loaded: a class of its (an OpNode) exists only once it is,
    # and a recording of real torch, whose adapters are no OpNodes, need not load it (a quarter
    # of a second, at the first backward of the run).
    core = sys.modules.get("gradviz.ops.core")
    OpNode = getattr(core, "OpNode", None)  # noqa: N806
    if OpNode is not None:
        from gradviz.autograd.saved_variable import SavedVariable

        _SavedVariable = SavedVariable
    name = cls.__name__ if getattr(cls, "name", None) is Node.name else None
    shapes = getattr(cls, "saved_shapes", None)
    saved_how = 0 if shapes is Node.saved_shapes else 1 if OpNode is not None and shapes is OpNode.saved_shapes else 2
    info = _CLASS_INFO[cls] = (
        name, hasattr(cls, "variable"), getattr(cls, "device", None) is Node.__dict__["device"], saved_how,
    )
    return info


_SavedVariable: Any = None  # gradviz.autograd.saved_variable.SavedVariable, once a node class is seen
_topo_of_row = itemgetter(6)  # a node_edges row's topological_nr


def _walk(node: Any, known: set[int]) -> list[Any]:
    """node and the nodes reachable from it that are not in ``known``, each after every node its
    edges point to, by a depth-first walk: for any graph (_node sorts by topological_nr)."""
    out: list[Any] = []
    done: set[int] = set()
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        n_id = n._id
        if n_id in known or n_id in done:
            continue
        if not expanded:
            stack.append((n, True))
            for f, _ in n.next_edges:
                if f is not None and f._id not in known and f._id not in done:
                    stack.append((f, False))
            continue
        done.add(n_id)
        out.append(n)
    return out
