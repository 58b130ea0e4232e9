"""Running a user's script (or module) as ``__main__`` while recording it: what ``gradviz run``
does, as a library call.

``run_script`` does what ``python SCRIPT ARGS`` (or ``python -m MODULE ARGS``) does: the
script's own ``sys.argv`` and ``sys.path[0]``, its exception printed as the interpreter prints
it (from the script's first frame), its exit status kept. Around it: a recording of the engine
the script uses, written even when the script fails, and signals (SIGTERM, a second Ctrl-C)
that cannot cut the trace's last lines. What can be refused before the script runs (no such
script, a trace passed as the script, an output that cannot be written) is refused before it
runs, with ``ScriptError``: nothing of the user's program has happened yet.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import os
import runpy
import signal
import stat
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from gradviz import launch  # ddp
from gradviz.autograd import graph
from gradviz.trace.errors import TraceError
from gradviz.trace.file import HEAD_BYTES, read_events, sniff
from gradviz.trace.recorder import deferring_handler
from gradviz.trace.recorder_forward import script_scope

ENGINES = ("torch", "gradviz")
Watch = Callable[[Any, str], AbstractContextManager[Any]]  # (recorder, output) -> held while it runs


class ScriptError(Exception):
    """The script cannot be run (one line; nothing of it ran). ``usage``: the caller named
    something that cannot be run (no such script or module, a trace, the wrong engine), as
    opposed to a run that could not start (an output that cannot be written)."""

    def __init__(self, message: str, *, usage: bool = False):
        super().__init__(message)
        self.usage = usage


class _Terminated(BaseException):
    """SIGTERM, turned into an exception so the trace is finished before the process goes."""


@dataclass(frozen=True)
class ScriptRun:
    """What ``run_script`` did."""

    status: str  # the run's status in the trace: ok, error or interrupted
    exit_code: int  # what ``python SCRIPT`` would have exited with (1 raised, 130 Ctrl-C, 143 SIGTERM)
    engine: str  # the engine recorded: torch or gradviz
    output: str  # where the trace was written
    recorded: int  # events the recorder made
    written: int  # events the trace file holds: fewer than recorded only if writing failed
    write_error: OSError | None  # why writing stopped (a full disk), if it did


@dataclass(frozen=True)
class _Target:
    """A script file or a module, resolved before anything runs."""

    argv0: str  # sys.argv[0] as python sets it
    file: str  # the file whose frames are the user's (tracebacks start there)
    path0: str  # sys.path[0] as python sets it
    module: str | None  # -m MODULE


def default_output(path: str, *, module: bool = False) -> str:
    """``<script name>.trace.json`` in the current folder (``<module>.trace.json`` for -m)."""
    if module:
        return f"{path}.trace.json"
    return f"{Path(path).stem}.trace.json"


def run_script(
    path: str | os.PathLike[str], args: Sequence[str] = (), *, engine: str | None = None,
    output: str | os.PathLike[str] | None = None, values: bool = False, module: bool = False,
    watch: Watch | None = None,
) -> ScriptRun:
    """Run ``path`` as ``__main__`` with ``args`` as its ``sys.argv[1:]`` and record it.

    ``module``: ``path`` names a module, run as ``python -m`` runs it. ``engine``: "torch"
    records torch's own engine through its hooks, "gradviz" runs the script on gradviz standing
    in for torch; None: torch when the script imports torch and not gradviz. ``output``: the
    trace's path (default ``default_output``). ``watch(recorder, output)``: a context manager
    held while the script runs (a progress display). The script's exceptions are printed on
    stderr as the interpreter prints them; ``ScriptError`` if it cannot be started."""
    if engine is not None and engine not in ENGINES:
        raise ScriptError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}", usage=True)
    target = _module_target(str(path)) if module else _script_target(os.fspath(path))
    chosen = engine or _detect(target.file)
    if engine == "torch" and not _may_use_torch(target.file):
        raise ScriptError(
            f"{target.argv0} never imports torch: --engine torch would record nothing of it "
            "(leave --engine out to record gradviz's engine)", usage=True,
        )
    out = os.fspath(output) if output is not None else default_output(str(path), module=module)
    out = launch.output_for_rank(out)  # ddp: NAME.rankR.trace.json inside a distributed job
    Path(out).parent.mkdir(parents=True, exist_ok=True)  # missing folders of -o are created
    _check_writable(out)
    if chosen == "torch":
        from gradviz.torchrec import TorchRecorder as recorder_class  # torch itself: only when asked for
    else:
        from gradviz.trace.recorder import Recorder as recorder_class
    recorder = recorder_class(out, values=values)
    with _ScriptContext(target, args):
        try:
            recorder.start()
        except (RuntimeError, OSError) as e:
            raise ScriptError(str(e) if isinstance(e, RuntimeError) else f"{out}: {e.strerror or e}") from None
        signals = _Signals()
        try:
            status, code, error, scope = _run(target, recorder, out, engine, watch)
        finally:
            signals.hold()  # a second Ctrl-C or SIGTERM must not cut the trace's last lines
    try:
        if hasattr(recorder, "tensors_at_end"):  # gradviz why: the script's tensors as it ended
            recorder.tensors_at_end(script_scope(scope, error, target.file))
        write_error = _stop(recorder, status, error)
    finally:
        signals.restore()
    recorded = written = recorder.count
    failed = write_error or getattr(getattr(recorder, "_writer", None), "failed", None)
    if failed is not None:
        written = _events_in(out)
    return ScriptRun(status, code, chosen, out, recorded, written, failed)


def launch_ranks(
    nproc: int, path: str, args: Sequence[str] = (), *, engine: str | None = None, output: str | None = None,
    values: bool = False, module: bool = False,
) -> int:
    """ddp: run ``path`` on ``nproc`` local ranks through torch's launcher, each rank recorded
    by ``gradviz run`` into its own ``NAME.rankR.trace.json``; torchrun's exit code. A script
    that cannot be run is refused here (``ScriptError``), before any rank starts."""
    if engine is not None and engine not in ENGINES:
        raise ScriptError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}", usage=True)
    if not module:
        _script_target(path)
    opts = [*(["-o", output] if output else []), *(["--values"] if values else [])]
    opts += ["--engine", engine] if engine else []
    return launch.launch(nproc, [*opts, *(["-m", path] if module else [path]), *args])


# --- before the script runs -------------------------------------------------------------------


def _script_target(path: str) -> _Target:
    p = Path(path)
    if not p.is_file():
        raise ScriptError(f"{path}: {'no such file' if not p.exists() else 'not a file'}", usage=True)
    try:
        with open(p, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError as e:
        raise ScriptError(f"{path}: {e.strerror or e}") from None
    try:
        sniff(path, head, whole=len(head) < HEAD_BYTES)
        is_trace = b'"gradviz-trace"' in head
    except TraceError:
        is_trace = False
    if is_trace:
        raise ScriptError(
            f"{path} is a gradviz trace, not a script: look at it with 'gradviz info {path}' "
            f"(or replay, render)", usage=True,
        )
    return _Target(argv0=path, file=os.path.abspath(path), path0=str(p.resolve().parent), module=None)


def _module_target(name: str) -> _Target:
    """As ``python -m``: the module's file (a package's ``__main__``), and the current folder
    first on sys.path, where the module is looked for."""
    cwd = os.getcwd()
    sys.path.insert(0, cwd)
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:  # a package
            spec = importlib.util.find_spec(f"{name}.__main__")
    except (ImportError, ValueError) as e:  # a parent package that does not import, "-m .x"
        raise ScriptError(f"{name}: cannot find the module ({type(e).__name__}: {e})", usage=True) from None
    finally:
        sys.path.remove(cwd)
    if spec is None or spec.origin is None or not os.path.isfile(spec.origin):
        raise ScriptError(f"{name}: no module named {name!r} (looked in {cwd} and on sys.path)", usage=True)
    return _Target(argv0=spec.origin, file=os.path.abspath(spec.origin), path0=cwd, module=name)


def _imports(file: str) -> set[str]:
    """The top-level packages the file imports."""
    from gradviz.torchrec.detect import imports  # reads the script's imports; needs no torch

    return imports(file)


def _detect(file: str) -> str:
    from gradviz.torchrec.detect import engine_of

    return engine_of(file)


def _check_writable(out: str) -> None:
    """ScriptError now, before the script runs, if the trace could not be written: a device
    that takes no data (/dev/full), a folder or file without write permission, a full disk. A
    regular file is tried with a scratch file beside it, so an existing trace is left as it is
    until the recording replaces it."""
    try:
        st = os.stat(out)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ScriptError(f"cannot write the trace to {out}: {e.strerror or e}") from None
    try:
        if st is not None and os.path.isdir(out):
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
        if st is not None and not os.path.isfile(out):
            # A character device that is not a terminal (/dev/null, /dev/full) must take a byte;
            # a terminal or a pipe is not written to here (the byte would be in the output).
            if stat.S_ISCHR(st.st_mode):
                fd = os.open(out, os.O_WRONLY | os.O_NONBLOCK)
                try:
                    if not os.isatty(fd):
                        os.write(fd, b"\n")
                finally:
                    os.close(fd)
            return
        if st is not None and not os.access(out, os.W_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        with tempfile.TemporaryFile(dir=os.path.dirname(os.path.abspath(out))) as f:
            f.write(b"\n" * 4096)  # the header's size: a disk with no room for it refuses here
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise ScriptError(f"cannot write the trace to {out}: {e.strerror or e}") from None


# --- while it runs ----------------------------------------------------------------------------


class _ScriptContext:
    """The script's sys.argv and sys.path[0] while it runs (and while the recording starts, so
    trace_begin records its argv); the caller's after."""

    def __init__(self, target: _Target, args: Sequence[str]):
        self.target = target
        self.args = list(args)

    def __enter__(self) -> _ScriptContext:
        self.argv, self.path0 = sys.argv, (sys.path[0] if sys.path else None)
        sys.argv = [self.target.argv0, *self.args]
        if sys.path:
            sys.path[0] = self.target.path0
        else:
            sys.path.insert(0, self.target.path0)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.argv = self.argv
        if self.path0 is not None:
            sys.path[0] = self.path0


class _Signals:
    """SIGTERM raises _Terminated in the script (never inside the recorder), then both it and
    Ctrl-C are held off while the recording stops, then the caller's handlers come back. Only
    the main thread can set handlers: elsewhere this does nothing."""

    def __init__(self) -> None:
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            self.saved_int = signal.getsignal(signal.SIGINT)
            self.saved_term = signal.signal(signal.SIGTERM, deferring_handler(signal.SIGTERM, _Terminated))

    def hold(self) -> None:
        if self.main:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def restore(self) -> None:
        if self.main:
            signal.signal(signal.SIGTERM, self.saved_term)
            signal.signal(signal.SIGINT, self.saved_int)


def _run(target: _Target, recorder: Any, out: str, engine: str | None,
         watch: Watch | None) -> tuple[str, int, BaseException | None, Any]:
    """Run the target under the recording: (status, exit code, the error to book, the script's
    globals as it ended: runpy's result, or None when it raised)."""
    status, error, code, scope = "ok", None, 0, None
    graph.script_entry = target.file  # anomaly mode's forward stacks start at the script
    try:
        with (watch(recorder, out) if watch is not None else contextlib.nullcontext()), _as_torch(engine):
            if target.module is not None:
                scope = runpy.run_module(target.module, run_name="__main__", alter_sys=True)
            else:
                scope = runpy.run_path(target.argv0, run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e)
        if code != 0:
            status, error = "error", e
    except KeyboardInterrupt as e:
        status, code = "interrupted", 130
        _print_exception(e, target.file)
    except _Terminated:
        status, code = "interrupted", 128 + signal.SIGTERM
    except BaseException as e:  # noqa: BLE001 - whatever the script raises is its exit status
        status, error, code = "error", e, 1
        missing = _missing_api(e) if engine == "gradviz" else None
        if missing:  # a torch API gradviz lacks: one line, no traceback of gradviz's own
            print(missing, file=sys.stderr)
        else:
            _print_exception(e, target.file)
    finally:
        graph.script_entry = None
    return status, code, error, scope


def _stop(recorder: Any, status: str, error: BaseException | None) -> OSError | None:
    """Stop the recording; the error that kept the trace from being written, if one did."""
    try:
        recorder.stop(status, error)
        return None
    except OSError as e:
        return e


def _as_torch(engine: str | None) -> AbstractContextManager[Any]:
    """--engine gradviz: gradviz stands in for torch (and every torch.X) while the script runs."""
    if engine != "gradviz":
        return contextlib.nullcontext()
    from gradviz._as_torch import as_torch

    return as_torch()


def _missing_api(e: BaseException) -> str | None:
    from gradviz._as_torch import missing_api

    found = missing_api(e)
    return found[1] if found else None


def _exit_code(e: SystemExit) -> int:
    """What the interpreter would exit with for sys.exit(code), printing a non-int code as it does."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _script_tb(tb: TracebackType | None, file: str) -> TracebackType | None:
    """The traceback from the script's first frame on: gradviz's and runpy's frames hidden."""
    t = tb
    while t is not None:
        if os.path.abspath(t.tb_frame.f_code.co_filename) == file:
            return t
        t = t.tb_next
    return None


_GRADVIZ_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _library_frame(filename: str) -> bool:
    """A frame of gradviz, of an installed package or of the standard library."""
    import sysconfig

    path = os.path.abspath(filename)
    if filename.startswith("<") or path.startswith(_GRADVIZ_DIR):
        return True
    paths = sysconfig.get_paths()
    return any(path.startswith(os.path.abspath(paths[k]) + os.sep)
               for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)


def _print_exception(e: BaseException, file: str) -> None:
    tb = _script_tb(e.__traceback__, file)
    if isinstance(e, KeyboardInterrupt):
        # Ctrl-C lands wherever the program is, often inside the engine or the recorder: end the
        # traceback at the user's last frame (not gradviz's, nor a library's it called into).
        last, t = None, tb
        while t is not None:
            if not _library_frame(t.tb_frame.f_code.co_filename):
                last = t
            t = t.tb_next
        if last is not None:
            last.tb_next = None
    traceback.print_exception(type(e), e, tb, file=sys.stderr)


# --- after ------------------------------------------------------------------------------------


def _events_in(out: str) -> int:
    """The events a trace file holds, as a reader recovers them (after writing stopped)."""
    import warnings

    if not os.path.isfile(out):
        return 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return len(read_events(out)[0])
        except (TraceError, OSError):
            return 0


def _may_use_torch(file: str) -> bool:
    """Whether the script can use torch: it imports torch, or a module that may (its own
    helpers, a library). One that imports only the standard library, numpy and gradviz cannot."""
    names = _imports(file)
    return bool(names - set(sys.stdlib_module_names) - {"gradviz", "numpy", "__future__"})
