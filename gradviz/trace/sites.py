"""A recorded line with its op's columns, as readers show it: ``file:line:col`` and the op's
own text (``F.relu(self.fc1(x))``), so that several ops on one line are told apart.

The trace holds ``source`` ("file:line") and ``columns`` (UTF-8 byte offsets, as Python's code
positions); the text is read from the file, as a traceback does, when it is still there. A
trace read elsewhere, or a file edited since, shows the column alone: the fragment is what the
file says now, so one that no longer fits the columns (past the line's end) is not shown.
"""

from __future__ import annotations

import functools
import linecache

from gradviz.trace.text import neutralise

Columns = tuple[int, int] | None


def _line(source: str) -> tuple[str, int, str] | None:
    """(path, line number, the line's text without its newline) of "file:line", or None."""
    path, sep, num = source.rpartition(":")
    if not sep or not num.isdigit():
        return None
    return path, int(num), neutralise(linecache.getline(path, int(num)).rstrip("\r\n"))


def _chars(text: str, col: int) -> int | None:
    """A UTF-8 byte offset into ``text`` as a character offset (None: past the end)."""
    raw = text.encode("utf-8", "surrogateescape")
    if col > len(raw):
        return None
    return len(raw[:col].decode("utf-8", "replace"))


# Memoised: a picture asks once a node, and thousands of nodes share a handful of sites.
@functools.lru_cache(maxsize=4096)
def where(source: str | None, columns: Columns, *, short: bool = False) -> str | None:
    """``file:line:col`` (col 1-based, in characters where the file can be read), or the source
    as recorded when no columns are known. short: the file's base name only."""
    if not source:
        return source
    path, sep, num = source.rpartition(":")
    if short and sep:
        source = f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{num}"
    if columns is None:
        return source
    got = _line(f"{path}:{num}")
    col = columns[0]
    if got is not None and got[2]:
        col = _chars(got[2], col)
        if col is None:
            return source
    return f"{source}:{col + 1}"


@functools.lru_cache(maxsize=4096)
def fragment(source: str | None, columns: Columns, width: int = 60) -> str | None:
    """The op's text on its line (``F.relu(self.fc1(x))``), at most ``width`` characters (cut
    with "…"); None where the file, the line or the columns are not there."""
    if not source or columns is None:
        return None
    got = _line(source)
    if got is None or not got[2]:
        return None
    text = got[2]
    start, end = columns
    a = _chars(text, start)
    b = _chars(text, end) if end >= 0 else len(text)
    if a is None or b is None or b <= a:
        return None
    out = text[a:b].strip()
    if end < 0:
        out += " …"
    if len(out) > width:
        out = out[: width - 1] + "…"
    return out or None


def at(source: str | None, columns: Columns, *, short: bool = True) -> str | None:
    """``where`` followed by the fragment in backquotes, for a sentence or a panel line:
    ``m.py:13:25 (`F.relu(self.fc1(x))`)``."""
    w = where(source, columns, short=short)
    frag = fragment(source, columns)
    return f"{w} (`{frag}`)" if w and frag else w
