"""The trace file: written as a stream while recording, read back with validation.

Layout (format 3; see docs/trace-format.md)::

    {"format":"gradviz-trace","format_version":3,"fields":{"trace_begin":["kind","ts",...],...},"groups":{...},"stats":[...],"events":[
    ["trace_begin",0,1,...],
    ["thread_start",2210,1,"MainThread",null,"caller"],
    ["gradient_in",...],
    ...
    ["trace_end",...]
    ]}

One event (or a group of events, ``codec.GROUPS``) per line, an event's seq its position; every
line but the last ends with a comma, so a finished file is one valid JSON document, and a file
cut anywhere (crash, SIGKILL) is still readable line by line: the reader keeps every complete
line and drops the partial last one. The writer flushes every few thousand events and whenever
the recorder asks (it does so on a timer), so a killed process loses only its last moments.
Format 2 files (each event's seq written last) and format 1 files (one JSON object per event)
are read as well.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import Any

from gradviz._gc import paused
from gradviz.trace import codec, fastload
from gradviz.trace import events as ev
from gradviz.trace.crash import CRASH_MARKER, MARKER_WINDOW, split_crash
from gradviz.trace.errors import TraceError, TraceWarning
from gradviz.trace.model import Trace
from gradviz.trace.text import may_hold_controls, neutralise, neutralise_events
from gradviz.trace.validate import validate
from gradviz.trace.writer import (  # noqa: F401  (re-exported: the writer lived here)
    _JOIN_MAX,
    _O_EXCL,
    _OPEN_FLAGS,
    BATCH,
    FOOTER,
    GROUP_MEMBERS,
    HEADER,
    HEADER_V2,
    TraceWriter,
    _unlink_old_trace,
)

# --- reading ---------------------------------------------------------------------------------


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


def _kind_of(d: Any) -> str | None:
    """The kind an event line claims (object or array), for messages; None if it has none."""
    if type(d) is dict:
        k = d.get("kind")
    elif type(d) is list and d:
        k = d[0]
    else:
        k = None
    return k if type(k) is str and len(k) < 40 else None


def _event_error(name: str, i: int, d: Any, message: str) -> TraceError:
    kind = _kind_of(d)
    what = f"event {i} ({kind})" if kind is not None else f"event {i}"
    return TraceError(_one_line(f"{name}: {what}: {message}"))


class _Reader:
    """Checks events as they come: seq numbering, header first, trace_end last.

    ``decoders``: kind -> decoder of the file's layout (arrays in format 2, objects in 1), and
    ``key`` where a line holds its kind (0 or "kind"). Lines of the other layout, or odd ones,
    go through ``codec.decode``, which takes either and names what is wrong."""

    def __init__(self, name: str, decoders: dict[str, Any], key: Any):
        self.name = name
        self.events: list[ev.Event] = []
        self.ended = False
        self.decoders = decoders
        self.fast = {k: d for k, d in decoders.items() if ev.KINDS[k] not in _BOOKENDS}
        self.key = key
        self.numbered = True  # events carry the seq the file gave them (format 3 numbers them here)

    def add(self, d: Any) -> None:
        events = self.events
        i = len(events)
        try:
            e = self.decoders[d[self.key]](d)  # the common case, without codec.decode's checks
        except (KeyError, TypeError, IndexError):  # not an event, no or unknown kind: decode says
            e = self._decode(d, i)
        except codec.FieldProblem as p:
            raise _event_error(self.name, i, d, p.message) from None
        if e.seq != i or i == 0 or self.ended or type(e) in _BOOKENDS:
            self._check(e, d, i)
        events.append(e)

    def add_all(self, ds: list[Any]) -> None:
        """``add`` for each of ``ds``, with the loop inlined: it runs once per event of a big
        file. The fast path decodes and checks seq; trace_begin, trace_end, the first event and
        anything odd go through ``add`` (all of them, once trace_end has been seen)."""
        events = self.events
        append = events.append
        decoders = self.fast if not self.ended else {}
        key = self.key
        i = len(events)
        it = iter(ds)
        if i == 0:
            for d in it:
                _Reader.add(self, d)
                i = 1
                break
        for d in it:
            try:
                e = decoders[d[key]](d)
            except (KeyError, TypeError, IndexError):  # bookends, or not an event / unknown kind
                _Reader.add(self, d)
                if self.ended:
                    decoders = {}
                i += 1
                continue
            except codec.FieldProblem as p:
                raise _event_error(self.name, i, d, p.message) from None
            if e.seq != i:
                self._check(e, d, i)
            append(e)
            i += 1

    def take(self, evs: list[ev.Event]) -> bool:
        """Append ``evs``, events decoded and type-checked elsewhere (a typed batch), if they are
        the next ones in order, without bookends but for a first trace_begin. False (nothing
        taken) otherwise: ``add_all`` then goes through them one by one and names the problem."""
        events = self.events
        i = len(events)
        if self.ended or not evs:
            return False
        if self.numbered and list(map(_seq_of, evs)) != list(range(i, i + len(evs))):
            return False
        if not _BOOKEND_SET.isdisjoint(map(type, evs[1:] if i == 0 else evs)):
            return False
        if i == 0:
            self._check(evs[0], [evs[0].kind], 0)  # trace_begin first, of a version this reads
        events += evs
        return True

    def _decode(self, d: Any, i: int) -> ev.Event:
        try:
            return codec.decode(d)
        except codec.FieldProblem as p:
            raise _event_error(self.name, i, d, p.message) from None

    def _check(self, e: ev.Event, d: Any, i: int) -> None:
        if self.ended:
            raise _event_error(self.name, i, d, "comes after trace_end, which must be the last event")
        if e.seq != i:
            raise _event_error(
                self.name, i, d,
                f"field 'seq' must be {i} (events are numbered from 0 in file order), got {e.seq}",
            )
        t = type(e)
        if i == 0:
            if t is not ev.TraceBegin:
                raise _event_error(self.name, i, d, "field 'kind' must be 'trace_begin' for the first event")
            if e.format_version > ev.FORMAT_VERSION:  # type: ignore[attr-defined]
                raise _event_error(
                    self.name, i, d,
                    f"field 'format_version' is {e.format_version}: written by a newer gradviz "  # type: ignore[attr-defined]
                    f"(this one reads up to {ev.FORMAT_VERSION})",
                )
        elif t is ev.TraceBegin:
            raise _event_error(self.name, i, d, "trace_begin may only be the first event")
        elif t is ev.TraceEnd:
            if e.events != i:  # type: ignore[attr-defined]
                raise _event_error(
                    self.name, i, d,
                    f"field 'events' is {e.events} but {i} events precede it (events are missing)",  # type: ignore[attr-defined]
                )
            self.ended = True


class _Reader3(_Reader):
    """Format 3: a line is an event's array without its seq (its position gives it), or a group
    of events (``codec.GROUPS``). Each becomes format 2 arrays, numbered, which ``_Reader``
    decodes and checks; typed batches (``take``) come numbered already."""

    def __init__(self, name: str, decoders: dict[str, Any], groups: dict[str, tuple[str, ...]],
                 layouts: dict[str, tuple[str, ...]]):
        super().__init__(name, decoders, 0)
        self.numbered = False
        self.expanders = dict(codec.EXPANDERS)
        self.reordered = bool(groups)
        for kind, names in groups.items():  # groups declared with their fields in another order
            self.expanders[kind] = _reordered(kind, names, codec.EXPANDERS[kind])
        # each event kind's line layout, and its length
        self.layouts = {k: v for k, v in codec.FIELDS.items() if k not in codec.GROUPS} | layouts
        self.lengths = {k: len(v) for k, v in self.layouts.items()}

    def _v2(self, d: Any, i: int, done: list) -> list:
        """The format 2 arrays of line ``d``, whose first event is number ``i``; ``done``: the
        arrays of the lines before it, not yet added (added first if this line is bad, so the
        first problem in the file is the one reported)."""
        if type(d) is not list or not d or type(d[0]) is not str:
            return [d]
        kind = d[0]
        exp = self.expanders.get(kind)
        try:
            if exp is not None:
                return exp(d, i)
            n = self.lengths.get(kind)
            if n is not None and n != len(d):
                raise codec.FieldProblem(
                    None, f"has {len(d)} items, but {kind} has {n} fields ({', '.join(self.layouts[kind])})"
                )
        except codec.FieldProblem as p:
            _Reader.add_all(self, done)
            raise _event_error(self.name, i, d, p.message) from None
        return [[*d, i]]

    def add(self, d: Any) -> None:
        for a in self._v2(d, len(self.events), []):
            _Reader.add(self, a)

    def add_all(self, ds: list[Any]) -> None:
        out: list[Any] = []
        i = len(self.events)
        lengths = self.lengths
        for d in ds:
            if type(d) is list and d:
                k = d[0]
                if type(k) is str and lengths.get(k) == len(d):  # an event's line: the common case
                    out.append([*d, i + len(out)])
                    continue
            out += self._v2(d, i + len(out), out)
        _Reader.add_all(self, out)


def _reordered(kind: str, names: tuple[str, ...], expand: Any) -> Any:
    want = codec.FIELDS[kind]
    # a field its events have a default for (added since: node_created's columns) may be absent
    optional = {f.name: f.default for _, members in [codec.GROUPS[kind]] for m, _ in members
                for f in dataclasses.fields(ev.KINDS[m]) if f.default is not dataclasses.MISSING}

    def expand_by_name(a: list, seq: int) -> list[list]:
        if len(a) != len(names):
            raise codec.FieldProblem(None, f"has {len(a)} items, but the header declares {len(names)} fields")
        d = dict(zip(names, a))
        for f in want:
            if f not in d:
                if f not in optional:
                    raise codec.FieldProblem(f, f"field '{f}' is missing")
                d[f] = optional[f]
        return expand([d[f] for f in want], seq)

    return expand_by_name


_BOOKENDS = (ev.TraceBegin, ev.TraceEnd)
_BOOKEND_SET = frozenset(_BOOKENDS)
_seq_of = attrgetter("seq")


def _by_names(names: tuple[str, ...]) -> Any:
    dec = codec._DECODERS

    def decode(a: Any) -> ev.Event:
        if type(a) is not list:
            return codec.decode(a)
        if len(a) != len(names):
            # a group's member (node_created of a node_edges line) comes expanded in this gradviz's
            # own layout, whatever the header declares for the kind's own lines
            own = codec.FIELDS_V2.get(a[0]) if a and type(a[0]) is str else None
            if own is None or len(a) != len(own):
                raise codec.FieldProblem(None, f"has {len(a)} items, but the header declares {len(names)} fields")
            return dec[a[0]](dict(zip(own, a)))
        return dec[a[0]](dict(zip(names, a)))

    return decode


def _reader_for(name: str, h: dict[str, Any]) -> _Reader:
    """A reader of the layout the header announces."""
    version = h["format_version"]
    if version < 2:
        return _Reader(name, codec._DECODERS, "kind")
    declared = h.get("fields")
    if declared is None:
        declared = {}
    if type(declared) is not dict:
        raise TraceError(f"{name}: header field 'fields' must be an object, got {codec._type_name(declared)}")
    decoders = dict(codec._ARRAY_DECODERS)
    groups: dict[str, tuple[str, ...]] = {}
    layouts: dict[str, tuple[str, ...]] = {}
    for kind, names in declared.items():
        # Written with the fields in another order (or some left out): by name, slower.
        if version >= 3 and kind in codec.GROUPS:
            if tuple(names) != codec.FIELDS[kind]:
                _check_names(name, kind, names)
                groups[kind] = tuple(names)
            continue
        if kind not in decoders:
            continue
        layout = tuple(names) + ("seq",) * (version >= 3) if type(names) is list else None
        if layout != codec.FIELDS_V2[kind]:
            _check_names(name, kind, names)
            decoders[kind] = _by_names(layout)  # type: ignore[arg-type]
            layouts[kind] = tuple(names)
    if version >= 3:
        return _Reader3(name, decoders, groups, layouts)
    return _Reader(name, decoders, 0)


def _check_names(name: str, kind: str, names: Any) -> None:
    if type(names) is not list or names[:1] != ["kind"] or not all(type(n) is str for n in names):
        raise TraceError(f"{name}: header field 'fields.{kind}' must be a list of field names")


def _check_header(name: str, h: Any) -> None:
    if type(h) is not dict or h.get("format") != ev.FORMAT_NAME:
        raise TraceError(f'{name}: not a gradviz trace (no "format": "{ev.FORMAT_NAME}" header)')
    v = h.get("format_version")
    if type(v) is not int:
        raise TraceError(f"{name}: header field 'format_version' must be int, got {codec._type_name(v)}")
    if v > ev.FORMAT_VERSION:
        raise TraceError(
            f"{name}: trace format {v} was written by a newer gradviz (this one reads up to {ev.FORMAT_VERSION})"
        )
    if "events" in h and type(h["events"]) is not list:
        raise TraceError(f"{name}: header field 'events' must be a list, got {codec._type_name(h['events'])}")


def _parse(data: bytes) -> Any:
    try:
        return codec.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, deep nesting
        raise _BadJSON(_one_line(str(exc)) or type(exc).__name__) from None


class _BadJSON(Exception):
    pass


CHUNK_BYTES = 1 << 20  # event lines parsed per JSON call on the fast path


def _read_lines(name: str, first: bytes, data: bytes) -> tuple[list[ev.Event], bool]:
    """The streamed layout (``data``: everything after the header line): (events, complete).

    Whole chunks of comma-terminated lines are parsed as one JSON array each (one backend
    call per megabyte instead of per line); from the first chunk that does not parse, and for
    the tail (the last event, the footer, whatever a crash left), line by line, which says
    which line is bad or drops a partial last one."""
    try:
        header = _parse(first.rstrip() + b"]}")  # the header line, with its array closed
    except _BadJSON as exc:
        raise TraceError(f"{name}: line 1: not a gradviz trace header ({exc})") from None
    _check_header(name, header)
    reader = _reader_for(name, header)
    # whole chunks straight into events where msgspec can, for a file of this gradviz's layout
    typed: Any = None
    if reader.decoders == codec._ARRAY_DECODERS:
        if type(reader) is _Reader3:
            if not reader.reordered and codec.typed_events3 is not None:
                typed = _numbered(codec.typed_events3, reader)
        else:
            typed = codec.typed_events
    typed_errors = codec.TYPED_ERRORS
    loads = codec.loads
    pos = 0
    n = len(data)
    while pos < n:
        end = data.find(b",\n", pos + CHUNK_BYTES)
        if end < 0:
            end = data.rfind(b",\n", pos)
            if end < pos:
                break
        chunk = b"[" + data[pos:end] + b"]"
        if typed is not None:
            try:
                if reader.take(typed(chunk)):
                    pos = end + 2
                    continue
            except typed_errors:
                pass  # the general way below finds the problem, or reads what msgspec cannot
        try:
            ds = loads(chunk)
        except (ValueError, RecursionError):
            break  # the line-by-line pass below says where and why
        reader.add_all(ds)
        pos = end + 2
    lineno = 1 + data.count(b"\n", 0, pos)
    return reader.events, _read_tail(name, reader, data[pos:].split(b"\n"), lineno)


def _numbered(typed3: Any, reader: _Reader) -> Any:
    """Format 3's typed batches, numbered from the reader's next event."""
    return lambda chunk: typed3(chunk, len(reader.events))


def _read_tail(name: str, reader: _Reader, rest: Iterable[bytes], lineno: int) -> bool:
    """Line by line, from line ``lineno + 1``: whether the footer was reached."""
    add = reader.add
    loads = codec.loads
    bad: TraceError | None = None  # a line that did not parse: fatal unless it is the last
    complete = False
    for raw in rest:
        lineno += 1
        line = raw.strip()
        if not line:
            continue
        if bad is not None:
            raise bad
        if complete:
            raise TraceError(f"{name}: line {lineno}: data after the end of the trace")
        if line == b"]}":
            complete = True
            continue
        try:
            d = loads(line[:-1] if line[-1] == 44 else line)  # 44: the trailing comma
        except (ValueError, RecursionError) as exc:  # as _parse: bad JSON, bad UTF-8, deep nesting
            i = len(reader.events)
            why = _one_line(str(exc)) or type(exc).__name__
            bad = TraceError(f"{name}: event {i} (line {lineno}): not valid JSON ({why})")
            continue
        add(d)
    if bad is not None and complete:
        raise bad
    # a partial last line (bad, not complete) is what a kill mid-write leaves: dropped
    return complete


def _read_document(name: str, data: bytes) -> list[ev.Event]:
    """Any other layout of a complete JSON document (e.g. a pretty-printed trace)."""
    if not data.strip():
        raise TraceError(f"{name}: empty file, not a gradviz trace")
    try:
        doc = _parse(data)
    except _BadJSON as exc:
        raise TraceError(f"{name}: not a gradviz trace (not valid JSON: {exc})") from None
    _check_header(name, doc)
    if "events" not in doc:
        raise TraceError(f"{name}: header field 'events' is missing")
    reader = _reader_for(name, doc)
    reader.add_all(doc["events"])
    return reader.events


HEAD_BYTES = 64 << 10  # what is read of a file before anything says it is a trace
READ_BYTES = 8 << 20  # what is read at a time after it, each checked before the next is read


def read_file(name: str) -> tuple[bytes, bytes]:
    """(first line, the rest) of a file that may be a trace: a file that is not one is refused
    from its first bytes (``sniff``), before the rest is read. /dev/zero, a 1 GB log or an
    image passed by mistake cost 64 KiB, not all of memory. The rest is read a few megabytes
    at a time, each checked (``_StillText``) before the next is read: a file that starts as a
    trace and then stops being one (a header, then zeros or a log) is refused where it stops,
    however long it goes on (a pipe from /dev/zero never ends)."""
    with open(name, "rb") as f:
        head = f.read(HEAD_BYTES)
        sniff(name, head, whole=len(head) < HEAD_BYTES)
        nl = head.find(b"\n")
        first = head[: nl + 1] if nl >= 0 else b""
        check = _StillText(name, lines=_is_stream_header(first))
        check(head)
        parts = [head]
        while block := f.read(READ_BYTES):
            check(block)
            parts.append(block)
    if nl < 0:  # a one-line JSON document (or a header cut short): all of it is the first line
        return b"".join(parts), b""
    parts[0] = head[nl + 1 :]
    return first, b"".join(parts) if len(parts) > 1 else parts[0]


# Bytes no trace holds: C0 controls but tab, newline and carriage return (JSON escapes them in
# strings, and they are not its whitespace).
_NOT_TEXT = bytes(range(0x20)).translate(None, b"\t\n\r")
_CONTROL = re.compile(b"[" + re.escape(_NOT_TEXT) + b"]")
# A line of the streamed layout that does not start as an event line does ("[...]," or format 1's
# "{...},") or the footer ("]}"): whitespace aside, its first byte.
_NOT_A_LINE = re.compile(rb"\n[ \t\r]*([^\[\]{\s])")
_BAD_START = re.compile(rb"[ \t\r]*([^\[\]{\s])")  # the same, of a line that starts a block


class _StillText:
    """Checks each block of a file as it is read, in C: a TraceError from the first byte that no
    trace holds (a control byte) or, in the streamed layout (``lines``), from the first line that
    starts as no event line or footer does. After a crash marker (gradviz.trace.crash), the
    fatal error's report is plain text, for as far as the reader looks for the marker
    (``MARKER_WINDOW``): text past that is refused as well."""

    def __init__(self, name: str, *, lines: bool) -> None:
        self.name = name
        self.lines = lines
        self.at = 0  # bytes checked so far
        self.last = b""  # the last byte checked: a line may start at the next block's first byte
        self.crash: int | None = None  # where a crash marker starts, once one is met

    def __call__(self, block: bytes) -> None:
        found: list[tuple[int, str]] = []  # (where in the block, why): the first is refused
        if len(block.translate(None, _NOT_TEXT)) != len(block):  # (a table lookup a byte; the regex finds it)
            k = _CONTROL.search(block).start()  # type: ignore[union-attr]
            found.append((k, f"byte 0x{block[k]:02x} where a trace holds only text"))
        found += self._lines(block) if self.lines and self.crash is None else ()
        if self.crash is not None and self.at + len(block) - self.crash > MARKER_WINDOW:
            found.append((max(0, self.crash + MARKER_WINDOW - self.at), "text after a crash report"))
        if found:
            k, why = min(found, key=lambda f: f[0])  # (a tie: a line that starts with a control byte is named so)
            raise TraceError(f"{self.name}: not a gradviz trace from byte {self.at + k:,} on ({why})")
        self.at += len(block)
        self.last = block[-1:]

    def _lines(self, block: bytes) -> list[tuple[int, str]]:
        m = _NOT_A_LINE.search(block)
        if self.last == b"\n":  # the block starts a line
            m = _BAD_START.match(block) or m
        if m is None:
            return []
        k = m.start(1)  # where the line's first byte is in the block
        if block.startswith(CRASH_MARKER, k):
            self.crash = self.at + k
            return []
        c = block[k]
        what = repr(chr(c)) if 0x20 < c < 0x7F else f"byte 0x{c:02x}"
        return [(k, f"a line that starts with {what}, not an event")]


_FORMAT_KEY = re.compile(rb'"format"\s*:\s*"' + re.escape(ev.FORMAT_NAME.encode()) + rb'"')


def sniff(name: str, head: bytes, *, whole: bool) -> None:
    """TraceError unless ``head`` (a file's first bytes; ``whole``: all of it) can begin a trace:
    a JSON object, declaring the format within its first 64 KiB. A small file (``whole``) with
    the format elsewhere is left to the parser, which names what is wrong in it."""
    s = head.lstrip()
    if not s:
        if whole:
            raise TraceError(f"{name}: empty file, not a gradviz trace")
        raise TraceError(f"{name}: not a gradviz trace (its first {HEAD_BYTES >> 10} KiB are blank)")
    if s[:1] != b"{":
        what = repr(chr(s[0])) if 0x20 < s[0] < 0x7F else f"byte 0x{s[0]:02x}"
        raise TraceError(f"{name}: not a gradviz trace (it starts with {what}, not a JSON object)")
    if not whole and _FORMAT_KEY.search(head) is None:
        raise TraceError(
            f'{name}: not a gradviz trace (no "format": "{ev.FORMAT_NAME}" in its first {HEAD_BYTES >> 10} KiB)'
        )


def _is_stream_header(first: bytes) -> bool:
    s = first.strip()
    return s.startswith(b"{") and s.endswith(b'"events":[')


def read_events(path: str | os.PathLike[str]) -> tuple[list[ev.Event], bool]:
    """(events, complete) from a trace file; TraceError (one line) if it cannot be read."""
    events, complete, _, _ = _read_events(os.fspath(path))
    return events, complete


def _read_events(name: str) -> tuple[list[ev.Event], bool, bool, str | None]:
    """(events, complete, whether a string may hold a terminal control character, the fatal
    error a crash marker names if the recording ended in one: ``gradviz.trace.crash``)."""
    first, data = read_file(name)
    return _read_data(name, first, data)


def _fast(name: str, first: bytes, data: bytes, lazy: bool, records_to: int = 0,
          prefix: bool = False, then: Any = None,
          skip: frozenset[type[ev.Event]] = frozenset()) -> tuple[list[ev.Event] | None, Any] | None:
    """``fastload.scan``'s (events, index) for a finished file of this gradviz's layout that it
    takes; None for any other (the general reader then reads it, and names what is wrong)."""
    if not (fastload.available() and _is_stream_header(first) and data.endswith(FOOTER)):
        return None
    if may_hold_controls(first) or may_hold_controls(data):
        return None  # strings to neutralise: the general reader's way
    try:
        header = _parse(first.rstrip() + b"]}")
        _check_header(name, header)
        reader = _reader_for(name, header)
    except (_BadJSON, TraceError):
        return None
    if type(reader) is not _Reader3 or reader.decoders != codec._ARRAY_DECODERS or reader.reordered:
        return None
    try:
        return fastload.scan(data, keep_events=not lazy, records_to=records_to,
                             prefix_to=records_to if prefix else 0, then=then, skip=skip)
    except fastload.Fallback:
        return None


def _read_data(name: str, first: bytes, data: bytes) -> tuple[list[ev.Event], bool, bool, str | None]:
    crash = None
    if _is_stream_header(first):
        if not data.endswith(FOOTER):  # a finished file has no marker: no need to look
            data, crash = split_crash(data)
        controls = may_hold_controls(first) or may_hold_controls(data)
        return (*_read_lines(name, first, data), controls, crash)
    controls = may_hold_controls(first) or may_hold_controls(data)
    return _read_document(name, first + data), True, controls, crash


def load(path: str | os.PathLike[str], *, lazy: bool = False, fold_to: int = 0, prefix: bool = False,
         then: Callable[[list[Any], int], None] | None = None,
         skip: frozenset[type[ev.Event]] = frozenset()) -> Trace:
    """Read a trace file. A file cut short (crash, kill) loads with the events it holds and a
    ``TraceWarning``; a malformed one raises ``TraceError`` naming the event and field.

    Every field is checked against what the trace declares (``gradviz.trace.validate``), and
    every string comes out safe to print on a terminal (``gradviz.trace.text``): what a file
    holds reaches no reader unchecked.

    ``lazy``: a finished file of this gradviz's layout is checked line by line and its events
    are made only when read (``Trace.iter_events``, or all at once on ``Trace.events``), which a
    command that needs counts, or the events up to one step, finishes sooner with (and in a
    third of the memory); any other file loads as without it. Either way, the same checks.

    ``fold_to`` (with ``lazy``): the caller will fold to that step next (``Trace.fold_events``):
    the lines before it stay decoded from the check, so the file is decoded once, not twice.

    ``prefix`` (with ``lazy`` and ``fold_to``): a command that shows the state at that step and
    nothing after it (replay --step) has a finished file of this layout read and checked only
    up to the step: the Trace holds the events of the lines read (``len``), and
    ``Trace.total_events`` is the count the file declares. Any other file loads in full.

    ``then`` (with ``lazy``): a reader of every line (gradviz diff's ``Lines``) handed each
    chunk's line records as they are checked (``fastload.scan``'s ``then``), so that they are
    decoded once and not kept; it read the whole file only if the Trace is lazy
    (``Trace._lazy``), else the file went the general way and its events are all there.

    ``skip`` (with ``lazy``): kinds of the rare events a lazy trace keeps (gradviz.trace.events'
    ForwardOp, say) that the caller does not need: checked and counted as ever, made again from
    the file only if asked for (``Trace.of_kind``)."""
    name = os.fspath(path)
    first, data = read_file(name)
    with paused():
        fast = _fast(name, first, data, lazy, fold_to, prefix, then, skip)
    if fast is not None:
        events, index = fast
        if events is not None:
            return Trace(events, path=name)
        return Trace(None, path=name, index=index)
    return _load_general(name, first, data)


def _load_general(name: str, first: bytes, data: bytes) -> Trace:
    # The cyclic GC off while the events are made: a million new objects set off collection
    # after collection, each walking every object made so far (1.2 s of a 1M-event load's 1.9).
    # Events hold no cycles; the collector's next run sees them once.
    with paused():
        try:
            events, complete, controls, crash = _read_data(name, first, data)
            del data
            if controls:
                neutralise_events(events)
            validate(events, name)
        except TraceError as e:  # the message may quote the file's strings (a kind, a name)
            raise TraceError(neutralise(str(e))) from None
    ended = bool(events) and type(events[-1]) is ev.TraceEnd
    truncated = not (complete and ended)
    if truncated:
        what = "the file was cut short" if not complete else "it has no trace_end event"
        if crash is not None:
            what = f"the program crashed: {neutralise(crash)}"
        warnings.warn(
            f"{neutralise(name)}: trace is incomplete ({what}; the recording did not finish): "
            f"recovered {len(events)} events",
            TraceWarning,
            stacklevel=3,  # load -> _load_general -> here: the warning names load's caller
        )
    return Trace(events, truncated=truncated, path=name)


def iter_lines(events: Iterable[ev.Event]) -> Iterator[bytes]:
    """The file's bytes for a finished list of events (for tests and tools that write traces)."""
    yield HEADER
    evs = list(events)
    for k, e in enumerate(evs):
        yield codec.encode_line(e) + (b",\n" if k < len(evs) - 1 else b"\n")
    yield FOOTER


def save(events: Iterable[ev.Event], path: str | os.PathLike[str], *, format_version: int = ev.FORMAT_VERSION) -> None:
    """Write a list of events as a trace file (same layout as a recording). ``format_version=2``
    writes the previous format (each event with its seq), which gradviz still reads."""
    evs = list(events)
    if format_version == 2:
        lines = [codec.dumps(codec.encode_array_v2(e)) for e in evs]
        with open(path, "wb") as f:
            f.write(HEADER_V2 + b",\n".join(lines) + (b"\n" if lines else b"") + FOOTER)
        return
    if format_version != ev.FORMAT_VERSION:
        raise ValueError(f"cannot write trace format {format_version} (only 2 and {ev.FORMAT_VERSION})")
    with open(path, "wb") as f:
        f.write(HEADER)
        for i in range(0, len(evs) - 1, BATCH):
            f.write(codec.encode_events(evs[i : min(i + BATCH, len(evs) - 1)]))
        if evs:
            f.write(codec.encode_line(evs[-1]) + b"\n")
        f.write(FOOTER)
