"""Strings from a trace made safe for a terminal.

A trace's strings (node and hook names, thread names, argv, exception messages, source paths...)
come from the recorded program, or from whoever wrote the file. Printed raw, an ESC starts a
terminal control sequence (``\\x1b[2J`` clears the screen, ``\\x1b]0;...`` sets the window
title) and so does a C1 control (``\\x9b`` is CSI on its own). ``load`` passes every string
through ``neutralise``, so every command (info, replay, render's messages) shows them as text:
each control character written as its escape (``\\x1b``, ``\\x9b``, ``\\u202e``), readable and
inert. Newline and tab stay (multi-line exception messages, forward tracebacks): they move
the cursor the way text does, and start nothing.

Lone surrogates (a file name that was not UTF-8, decoded with surrogateescape) are written as
their escapes too (``\\udcff``): no encoder can write them, so printed raw they would end any
command that shows them with ``UnicodeEncodeError``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from gradviz.trace import events as ev

# C0 controls but tab and newline, DEL, C1, and the Unicode format characters that reorder or
# hide text (bidi overrides and isolates, line and paragraph separators), and lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
# What such a character looks like in the file's bytes: a JSON escape (any \\u, to be cheap and
# sure), raw C0/DEL bytes, or the UTF-8 of C1 and of the format characters above.
_UNSAFE_BYTES = re.compile(rb"\\u|[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def neutralise(s: str) -> str:
    """``s`` with each terminal control character written as its escape (module doc)."""
    return _UNSAFE.sub(_escape, s) if _UNSAFE.search(s) else s


# Every byte but those that can begin or be a control character (a C0 byte or DEL, and the lead
# bytes of C1's and the format characters' UTF-8): deleting them leaves only suspects, in C.
_INNOCENT = bytes(b for b in range(256) if not (b < 0x20 or b in (0x7F, 0xC2, 0xE2)) or b in (0x09, 0x0A, 0x0D))


def may_hold_controls(data: bytes | memoryview) -> bool:
    """False when the file's bytes cannot hold a control character in any string: the common
    case, which lets ``load`` skip looking at each event. A few hundred MB/s: a regex over a
    28 MB file took 0.7 s, this takes a few hundredths."""
    if b"\\u" in data:  # a JSON escape: a control character, or non-ASCII text escaped
        return True
    suspects = bytes(data).translate(None, _INNOCENT)  # the file's own newlines stay innocent
    return bool(suspects) and _UNSAFE_BYTES.search(data) is not None


def _clean(v: Any) -> Any:
    if type(v) is str:
        return neutralise(v)
    if type(v) is tuple:
        return tuple(_clean(x) for x in v)
    return v


_STR_FIELDS: dict[type, tuple[str, ...]] = {}


def _str_fields(t: type) -> tuple[str, ...]:
    names = _STR_FIELDS.get(t)
    if names is None:
        hints = {f.name: str(f.type) for f in dataclasses.fields(t)}
        names = _STR_FIELDS[t] = tuple(n for n, h in hints.items() if "str" in h)
    return names


def neutralise_events(events: list[ev.Event]) -> None:
    """Replace, in place, each event with a string field holding a control character by a copy
    with every such string neutralised."""
    for i, e in enumerate(events):
        changes = {}
        for f in _str_fields(type(e)):
            v = getattr(e, f)
            w = _clean(v)
            if w != v:
                changes[f] = w
        if changes:
            events[i] = dataclasses.replace(e, **changes)  # type: ignore[type-var]
