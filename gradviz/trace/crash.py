"""What a hard crash leaves in a trace file, and how the reader tells it from damage.

A recording hands its events to the OS (a write, no fsync) before the engine runs user code:
a custom Function's backward, a hook, or the program itself once a backward returns
(``Recorder``: node_begin, node_pop, chain_step, task_end). A process killed there (SIGSEGV,
``os._exit``, SIGKILL) leaves every event up to the last completed engine step in the file,
because the kernel holds what was written whatever becomes of the process.

For the fatal signals (SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL) the writer also points
``faulthandler`` at the trace file while it records, so the crash leaves a marker: the text
``Fatal Python error: Segmentation fault`` and the threads' stacks, after the last complete
line. The reader cuts the file there and says how the program ended. Only when faulthandler is
not already on (``python -X faulthandler``, pytest): the user's own choice of where it writes
stands.
"""

from __future__ import annotations

import faulthandler
import os
import threading

CRASH_MARKER = b"Fatal Python error: "
MARKER_WINDOW = 1 << 20  # how far from the end of a file the reader looks for the marker
_lock = threading.Lock()
_owner: int | None = None  # the fd faulthandler writes to for a recording


def crash_marker_on(fd: int) -> bool:
    """Have faulthandler write to ``fd`` on a fatal signal, unless it is on already (the user's or
    another recording's). True if it was turned on for this ``fd``."""
    global _owner
    with _lock:
        if _owner is not None or faulthandler.is_enabled():
            return False
        try:
            faulthandler.enable(file=fd, all_threads=True)
        except (OSError, ValueError, RuntimeError):  # no usable fd: record without the marker
            return False
        _owner = fd
        return True


def crash_marker_off() -> None:
    """Undo ``crash_marker_on`` (before its fd is closed: faulthandler keeps only the number)."""
    global _owner
    with _lock:
        if _owner is not None:
            faulthandler.disable()
            _owner = None


def split_crash(data: bytes) -> tuple[bytes, str | None]:
    """``data`` (a trace file's events part) up to a crash marker, and the marker's first line
    (e.g. ``Segmentation fault``); ``data`` unchanged and None when there is none."""
    k = data.find(b"\n" + CRASH_MARKER, max(0, len(data) - MARKER_WINDOW))
    if k < 0:
        if not data.startswith(CRASH_MARKER):
            return data, None
        k = -1
    end = data.find(b"\n", k + 1 + len(CRASH_MARKER))
    reason = data[k + 1 + len(CRASH_MARKER) : end if end >= 0 else len(data)]
    return data[: k + 1], reason.decode("utf-8", "replace").strip() or "fatal error"


def _forget_in_child() -> None:
    """A forked child (a DataLoader worker) does not write its crashes into its parent's trace:
    its marker would land in the middle of the parent's events."""
    global _lock, _owner
    _lock = threading.Lock()
    if _owner is not None:
        faulthandler.disable()
        _owner = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
