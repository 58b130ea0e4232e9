"""The trace writer: the stream a recording appends to (layout: ``gradviz.trace.file``).

Split out of file.py (the reader stays there); ``gradviz.trace.file`` re-exports every name.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from gradviz.trace import codec
from gradviz.trace import events as ev
from gradviz.trace.crash import crash_marker_off, crash_marker_on

GROUP_MEMBERS = {k: [m for m, _ in members] + ["edge_created..."] * (k == "node_edges")
                 for k, (_, members) in codec.GROUPS.items()}
HEADER = (
    b'{"format":"' + ev.FORMAT_NAME.encode() + b'","format_version":' + str(ev.FORMAT_VERSION).encode()
    + b',"fields":' + codec.dumps(codec.FIELDS) + b',"groups":' + codec.dumps(GROUP_MEMBERS)
    + b',"stats":' + codec.dumps(codec.STATS_FIELDS) + b',"events":[\n'
)
HEADER_V2 = (
    b'{"format":"' + ev.FORMAT_NAME.encode() + b'","format_version":2,"fields":' + codec.dumps(codec.FIELDS_V2)
    + b',"stats":' + codec.dumps(codec.STATS_FIELDS) + b',"events":[\n'
)
FOOTER = b"]}\n"
BATCH = 2048  # events encoded per JSON call: ~300 kB, which stays in cache


def _unlink_old_trace(path: str) -> None:
    """Remove a previous trace at path, so the new one is a new file rather than a truncated one.

    Rewriting a truncated file makes ext4 (auto_da_alloc) write it back to disk when it is closed:
    recording to the same path again cost 45 us of CPU and 165 us of wall time to open and close,
    against 11 us for unlink and create (a quarter of what recording a small backward adds). Only a
    regular file is removed: a symlink is written through and a device or FIFO (``-o /dev/null``)
    is written to, as before."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        try:
            os.unlink(path)
        except OSError:
            pass  # not ours to remove (a read-only folder): open() then truncates or says why


class TraceWriter:
    """Streams events to a file. Not thread-safe: the recorder calls it under its own lock, which
    is also what keeps file order equal to seq order.

    It writes to the file descriptor itself (os.write), without Python's buffered file: every
    write is handed to the OS at once anyway, and the buffered layer cost a tenth of a small
    recording (opening, flushing and closing it)."""

    def __init__(self, path: str | os.PathLike[str], *, batch: int = BATCH):
        self.path = os.fspath(path)
        self.batch = batch
        self.written = 0  # events handed to the OS
        self._pending: list[ev.Event] = []
        try:
            # A new file in one call when there is none (lstat's failure and its exception cost
            # a fifth of creating the file); otherwise the old one goes first (_unlink_old_trace).
            self._fd: int | None = os.open(self.path, _OPEN_FLAGS | _O_EXCL, 0o666)
        except FileExistsError:
            _unlink_old_trace(self.path)
            self._fd = os.open(self.path, _OPEN_FLAGS, 0o666)
        self.failed: OSError | None = None  # why writing stopped (a full disk), if it did
        self._crash_marker = crash_marker_on(self._fd)
        # A file that exists at all is a readable (empty) trace. A header that cannot be written
        # (/dev/full, a file-size limit of 0) fails the recording before it starts: OSError.
        self._write(HEADER)
        if self.failed is not None:
            raise self.failed
        self._header_done = True

    def _write(self, data: bytes | memoryview) -> None:
        fd = self._fd
        if fd is None:  # writing stopped (a full disk): the rest of the recording goes nowhere
            return
        try:
            n = os.write(fd, data)
            if n < len(data):  # a short write (a signal, a full disk): the rest, or OSError
                view = memoryview(data)
                while n < len(view):
                    n += os.write(fd, view[n:])
        except OSError as exc:
            self._stop_writing(exc)

    def _stop_writing(self, exc: OSError) -> None:
        """A write failed (ENOSPC, EFBIG, EIO...): the recording stops here, the program does not.
        One line on stderr says so; the file keeps what was written, which loads (a partial last
        line is what a crash leaves too, and the reader drops it)."""
        self.failed = exc
        self._release()
        if not getattr(self, "_header_done", False):
            return  # the header itself: the caller raises (see __init__), nothing to warn about
        why = exc.strerror or str(exc)
        code = errno.errorcode.get(exc.errno or 0)
        try:
            sys.stderr.write(
                f"gradviz: warning: recording stopped: cannot write {self.path}: {why}"
                + (f" ({code})" if code else "") + "; the trace keeps what was written before\n"
            )
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):  # no stderr to say it on: stay quiet
            pass

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if self._crash_marker:
            crash_marker_off()
            self._crash_marker = False
        if fd is not None:
            try:
                os.close(fd)
            except OSError:  # a full disk can refuse even this (NFS): the data is the OS's anyway
                pass

    def write(self, e: ev.Event) -> None:
        pending = self._pending
        pending.append(e)
        if len(pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Hand buffered events to the OS (no fsync: surviving the process is what matters)."""
        pending = self._pending
        if not pending or self._fd is None:
            return
        data = codec.encode_events(pending)
        n = len(pending)
        pending.clear()
        self._out(data, n)

    def write_lines(self, data: bytes | memoryview, count: int) -> None:
        """Append ``count`` events already encoded as lines (``codec.encode_rows``), after any
        pending ones, and hand them to the OS: the recorder encodes its own batches."""
        if self._pending:
            self.flush()
        self._out(data, count)

    def _out(self, data: bytes | memoryview, count: int) -> None:
        if self._fd is None or not count:
            return
        self._write(data)
        if self._fd is not None:
            self.written += count

    def close(self, last: ev.TraceEnd, lines: bytes | memoryview = b"", count: int = 0) -> None:
        """Write ``count`` events encoded as ``lines`` (``codec.encode_rows``), if any, then the
        final event (no trailing comma) and the footer: the file becomes valid JSON. One write."""
        if self._fd is None:
            return
        if self._pending:
            self.flush()
        end = codec.encode_line(last) + b"\n" + FOOTER
        if count:
            self._write(bytes(lines) + end if len(lines) < _JOIN_MAX else lines)
            if len(lines) >= _JOIN_MAX:
                self._write(end)
            self.written += count
        else:
            self._write(end)
        if self._fd is not None:
            self.written += 1
        self._release()

    def close_lines(self, lines: bytes, count: int) -> None:
        """Write ``count`` events encoded as ``lines`` (``codec.encode_rows``), the last of them
        the final event, and the footer: the file becomes valid JSON. One write."""
        if self._fd is None:
            return
        if self._pending:
            self.flush()
        end = b"\n" + FOOTER
        if len(lines) < _JOIN_MAX:
            self._write(lines[:-2] + end)  # the last line without its comma
        else:
            self._write(memoryview(lines)[:-2])
            self._write(end)
        if self._fd is not None:
            self.written += count
        self._release()

    def abandon(self) -> None:
        """Flush and close without finishing (what a crash leaves, minus the lost buffer)."""
        if self._fd is not None:
            self.flush()
            self._release()

    def forget_in_child(self) -> None:
        """In a forked child: close the child's copy of the descriptor, writing nothing (what is
        pending is the parent's to write; the crash marker is crash.py's to forget)."""
        fd, self._fd = self._fd, None
        self._pending = []
        self._crash_marker = False
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def closed(self) -> bool:
        return self._fd is None


_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_O_EXCL = os.O_EXCL
_JOIN_MAX = 1 << 20  # the last lines and the end in one write, unless copying them costs more
