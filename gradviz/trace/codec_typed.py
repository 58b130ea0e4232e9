"""Typed decoding of whole batches with msgspec (re-exported by gradviz.trace.codec, which is
the module to import: this one is loaded at its end)."""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable
from typing import Any

from gradviz.trace import events as ev
from gradviz.trace.codec import (
    _SPECS,
    _STATS_SPEC,
    _TWINS,
    GROUPS,
    _build_lines,
    _convert,
    _decode_any,
    _group_source,
    _needs_care,
    _new,
    _StatsTwin,
    make_stats,
)

try:  # optional speed-ups, same output
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - exercised when msgspec is absent
    _msgspec = None
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _orjson = None


# --- typed decoding of whole batches (msgspec) -----------------------------------------------
#
# msgspec decodes a batch of format 2 lines straight into typed records in C, checking every
# field's type on the way (a line's kind, its first item, picks the record type): no Python
# step per field. Each record then becomes its event (twin build, no checks left to do but the
# stats' non-finite strings). A batch msgspec refuses (a wrong type, an unknown kind, a lone
# surrogate) goes the general way, which names the problem or reads what msgspec cannot.


def _line_type(tp: Any) -> Any:
    """A field's type as msgspec checks it: stats as arrays whose floats may be "NaN" etc."""
    if tp is ev.Stats:
        return tuple[float | str, float | str, float | str, int, int] | float
    args = typing.get_args(tp)
    if ev.Stats in args:
        return tuple[float | str, float | str, float | str, int, int] | float | None
    return tp


def _typed_stats(t: Any, path: str = "stats") -> Any:
    if t is None:
        return None
    if type(t) is float:  # one element, x (format 3)
        if t - t == 0.0:
            return make_stats(abs(t), t, t, 0, 0)
        return _convert(_STATS_SPEC, t, path)
    norm, lo, hi, nan, inf = t
    if type(norm) is float and type(lo) is float and type(hi) is float:
        o = _new(_StatsTwin)
        o.norm = norm
        o.min = lo
        o.max = hi
        o.nan = nan
        o.inf = inf
        o.__class__ = ev.Stats
        return o
    return _convert(_STATS_SPEC, list(t), path)  # "NaN", "Infinity", "-Infinity", or a FieldProblem


def _typed_any(v: Any) -> Any:
    return None if v is None else _decode_any(v)


_GROUP_TYPES: dict[Any, tuple[str, dict[str, Any]]] = {}  # a group's record type -> (kind, its fields' types)
_ONLY: dict[frozenset[type], dict[Any, Any]] = {}


def _group_converter(kind: str, types_: dict[str, Any], keep: frozenset[str] | None) -> Callable[..., int]:
    """``f(record, seq, append) -> next seq`` of a group's line record (``keep``: as _group_source)."""
    ns: dict[str, Any] = {"_new": object.__new__, "_intern": sys.intern, "_stats": _typed_stats, "_any": _typed_any}
    head = ["def convert(s, seq, append):"]
    care = {"stats": "_stats", "any": "_any"}  # a group's one stats field is named stats
    src = _group_source(kind, head, lambda n: _interned(f"s.{n}", types_.get(n)), care, ns, keep)
    exec(compile("\n".join(src) + "\n", f"<gradviz typed3 {kind}>", "exec"), ns)
    return ns["convert"]


def converters_for(types: frozenset[type]) -> dict[Any, Callable[..., int] | None]:
    """Line record type -> a converter that appends only its events of ``types`` (and returns the
    next seq, as LINES["convert"]'s), or None when it has none of them: for readers that look
    at a few kinds of event in a long span (render's task pass)."""
    got = _ONLY.get(types)
    if got is not None:
        return got
    kinds = frozenset(t.kind for t in types)
    out: dict[Any, Callable[..., int] | None] = {}
    for rec, conv in LINES["convert"].items():
        group = _GROUP_TYPES.get(rec)
        if group is None:  # one event a line
            out[rec] = conv if rec.__struct_config__.tag in kinds else None
            continue
        kind, types_ = group
        members = {m for m, _ in GROUPS[kind][1]} | ({"edge_created"} if kind == "node_edges" else set())
        keep = members & kinds
        out[rec] = None if not keep else conv if keep == members else _group_converter(kind, types_, frozenset(keep))
    _ONLY[types] = out
    return out


def _interned(expr: str, tp: Any) -> str:
    """``expr`` as a converter reads it: a string field through sys.intern. A line's strings
    (a device, a dtype, a mode, a node's name and source) are a few values repeated a million
    times, each its own object as decoded: shared, they were a fifth of a loaded trace's memory."""
    if tp is str:
        return f"_intern({expr})"
    if tp == (str | None):
        return f"({expr} if {expr} is None else _intern({expr}))"
    return expr


class _HasGroups(Exception):
    pass


def _has_groups(s: Any, seq: int) -> Any:
    raise _HasGroups


def _make_typed(version: int) -> tuple[Callable[..., list[ev.Event]] | None, tuple[type[BaseException], ...]]:
    if _msgspec is None:
        return None, ()
    if version != 2:
        LINES.clear()
    records = []
    convert: dict[type, Callable[..., Any]] = {}
    convert_in: dict[type, Callable[..., Any]] = {}  # format 3: appending, the seq after returned
    for t in ev.EVENT_TYPES:
        hints = ev.field_types(t)
        names = ev.field_names(t)
        order = [*names[1:], *names[:1] * (version == 2)]  # the line's layout, after its kind
        rec = _msgspec.defstruct(
            f"_Line_{t.kind}", [(n, _line_type(hints[n])) for n in order],
            tag=t.kind, tag_field="kind", array_like=True, gc=False, forbid_unknown_fields=True,
        )
        records.append(rec)
        ns: dict[str, Any] = {"_cls": t, "_twin": _TWINS[t], "_new": object.__new__, "_stats": _typed_stats,
                              "_any": _typed_any, "_intern": sys.intern}
        args = []
        for name, spec, _ in _SPECS[t]:
            c = _needs_care(spec)
            if name == "seq" and version != 2:
                args.append("seq")
            else:
                args.append(f"_stats(s.{name}, {name!r})" if c == "stats" else f"_any(s.{name})" if c
                            else _interned(f"s.{name}", hints.get(name)))
        if version == 2:
            src = ["def convert(s):", *_build_lines(t, args), "    return o"]
        else:
            src = ["def convert(s, seq):", *_build_lines(t, args), "    return o"]
            src += ["def convert_in(s, seq, append):", *_build_lines(t, args), "    append(o)", "    return seq + 1"]
        exec(compile("\n".join(src) + "\n", f"<gradviz typed{version} {t.kind}>", "exec"), ns)
        convert[rec] = ns["convert"]
        if version != 2:
            convert_in[rec] = ns["convert_in"]
    if version != 2:
        for kind, (fields, members) in GROUPS.items():
            types_: dict[str, Any] = {}
            for member, sources in members:
                hints = ev.field_types(ev.KINDS[member])
                for (name, _spec, _), src in zip(_SPECS[ev.KINDS[member]][3:], sources):
                    types_.setdefault(src, _line_type(hints[name]))
            types_["edges"] = tuple[tuple[int | None, int], ...]
            rec = _msgspec.defstruct(
                f"_Line_{kind}", [("ts", int), ("tid", int), *((n, types_[n]) for n in fields)],
                tag=kind, tag_field="kind", array_like=True, gc=False, forbid_unknown_fields=True,
            )
            records.append(rec)
            convert_in[rec] = _group_converter(kind, types_, None)
            convert[rec] = _has_groups
            _GROUP_TYPES[rec] = (kind, types_)
        LINES.update(decode=None, convert=convert_in, types={r.__struct_config__.tag: r for r in records})
    union = records[0]
    for rec in records[1:]:
        union = union | rec
    decoder = _msgspec.json.Decoder(list[union])  # type: ignore[valid-type]
    decode_records = decoder.decode
    if version != 2:
        LINES["decode"] = decode_records

    if version == 2:

        def typed_events(data: bytes) -> list[ev.Event]:
            """A JSON array of format 2 event lines as events; msgspec's errors or FieldProblem
            if any line does not fit (the general path then says which and why)."""
            conv = convert
            return [conv[type(r)](r) for r in decode_records(data)]

        return typed_events, (ValueError, RecursionError)

    def typed_events3(data: bytes, seq: int) -> list[ev.Event]:
        """A JSON array of format 3 lines as events numbered from ``seq``; msgspec's errors or
        FieldProblem if any line does not fit (the general path then says which and why)."""
        records = decode_records(data)
        conv = convert
        try:  # a chunk of single events (a file that save() wrote): one list comprehension
            return [conv[type(r)](r, i) for i, r in enumerate(records, seq)]
        except _HasGroups:  # a recording's: group lines, each several events
            pass
        conv = convert_in
        out: list[ev.Event] = []
        append = out.append
        for r in records:
            seq = conv[type(r)](r, seq, append)
        return out

    # msgspec's DecodeError and FieldProblem are ValueErrors, as is bad UTF-8's UnicodeDecodeError
    return typed_events3, (ValueError, RecursionError)


#: Format 3's line records, for readers that look at lines before (or instead of) making events
#: (gradviz.trace.fastload): ``decode`` (a JSON array of lines -> records, type-checked in C),
#: ``convert`` (record type -> ``f(record, seq, append) -> next seq``, appending its events) and
#: ``types`` (line kind -> record type). Empty without msgspec.
LINES: dict[str, Any] = {}  # see also converters_for

#: ``typed_events(json_array_bytes) -> events`` (format 2) where msgspec is installed, else None;
#: ``typed_events3(json_array_bytes, seq0)`` the same for format 3; and what they raise on a batch
#: they do not take.
typed_events3, TYPED_ERRORS = _make_typed(3)
_typed2: list[Callable[..., list[ev.Event]]] = []  # format 2's, built on first use


def _typed_events2(data: bytes) -> list[ev.Event]:
    """Format 2's typed_events, its records and converters built the first time a format 2 file
    is read: every command paid a sixth of codec's import for files few still have."""
    if not _typed2:
        made, _ = _make_typed(2)
        assert made is not None
        _typed2.append(made)
    return _typed2[0](data)


typed_events = _typed_events2 if _msgspec is not None else None
