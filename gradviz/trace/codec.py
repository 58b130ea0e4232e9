"""Events <-> JSON-ready dicts and bytes: the only place that knows how an event looks in a file.

Each event is one JSON object: ``seq``, ``kind``, ``ts``, ``tid``, then the kind's fields in
declaration order. Tuples become arrays; ``Stats`` becomes an object; floats that JSON cannot
hold (NaN, +inf, -inf) are written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

Speed matters here (millions of events), so the per-kind encoders and decoders are generated
once from the event definitions (plain functions with the field names spelled out) instead of
walking ``dataclasses.fields`` for every event. Decoders validate every field; on the first
problem the slow path (``_describe_problem``) works out exactly which field is wrong and why.

orjson is used when installed (the ``fast`` extra); the stdlib ``json`` module otherwise.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING
from typing import Any

from gradviz.trace import events as ev

try:  # optional speed-up, same output
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _orjson = None

import json as _json

__all__ = [
    "JSON_BACKEND", "FieldProblem", "dumps", "loads", "encode", "decode", "field_specs", "Spec",
]  # fmt: skip

JSON_BACKEND = "orjson" if _orjson is not None else "json"


class FieldProblem(ValueError):
    """A decoded value does not fit the event definition. ``field`` is a path like ``stats.norm``."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


# --- JSON backends ---------------------------------------------------------------------------

_escaping = _json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _dumps_escaped(obj: Any) -> bytes:
    """Strings UTF-8 cannot hold (lone surrogates, e.g. from undecodable file names) as \\u escapes."""
    return _escaping.encode(obj).encode("ascii")


if _orjson is not None:
    _orjson_dumps = _orjson.dumps
    _orjson_loads = _orjson.loads
    _OrjsonDecodeError = _orjson.JSONDecodeError

    def dumps(obj: Any) -> bytes:
        """Compact JSON bytes."""
        try:
            return _orjson_dumps(obj)
        except TypeError:
            return _dumps_escaped(obj)

    def loads(data: bytes | str) -> Any:
        try:
            return _orjson_loads(data)
        except _OrjsonDecodeError:
            # orjson refuses escaped lone surrogates, which _dumps_escaped writes: the stdlib
            # reads them; anything else it also rejects, with its own message
            return _json.loads(data)

else:  # pragma: no cover
    _encoder = _json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    def dumps(obj: Any) -> bytes:
        try:
            return _encoder.encode(obj).encode("utf-8")
        except UnicodeEncodeError:
            return _dumps_escaped(obj)

    def loads(data: bytes | str) -> Any:
        return _json.loads(data)


# --- non-finite floats -----------------------------------------------------------------------

_NONFINITE_OUT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float_out(x: float) -> float | str:
    if x != x:
        return "NaN"
    if x == math.inf:
        return "Infinity"
    if x == -math.inf:
        return "-Infinity"
    return x


def _encode_stats(s: ev.Stats | None) -> dict[str, Any] | None:
    if s is None:
        return None
    norm, lo, hi = s.norm, s.min, s.max
    if norm - norm == 0 and lo - lo == 0 and hi - hi == 0:  # all finite (NaN and inf fail): common
        return {"norm": norm, "min": lo, "max": hi, "nan": s.nan, "inf": s.inf}
    return {"norm": _float_out(norm), "min": _float_out(lo), "max": _float_out(hi),
            "nan": s.nan, "inf": s.inf}  # fmt: skip


def _encode_any(v: Any) -> Any:
    """Values (nested lists of numbers): only non-finite floats need care."""
    if v is None:
        return None
    if type(v) is float:
        return _float_out(v)
    if isinstance(v, (list, tuple)):
        return [_encode_any(x) for x in v]
    return v


def _decode_any(v: Any) -> Any:
    if type(v) is str and v in _NONFINITE_OUT:
        return _NONFINITE_OUT[v]
    if type(v) is list:
        return [_decode_any(x) for x in v]
    return v


# --- type specs: one small tree per field, derived from the annotations ----------------------


class Spec:
    """What a field may hold, in JSON terms. ``kind`` is one of: int, str, bool, float, any,
    stats, optional (items[0] or null), array (items[0] repeated), tuple (items, fixed length)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind: str, items: tuple[Spec, ...] = ()):
        self.kind = kind
        self.items = items

    def describe(self) -> str:
        k = self.kind
        if k == "optional":
            return f"{self.items[0].describe()} or null"
        if k == "array":
            return f"a list of {self.items[0].describe()}"
        if k == "tuple":
            return "[" + ", ".join(i.describe() for i in self.items) + "]"
        if k == "stats":
            return "a stats object"
        if k == "float":
            return "a number"
        if k == "any":
            return "any value"
        return k


def _spec_of(tp: Any) -> Spec:
    if tp is int:
        return Spec("int")
    if tp is str:
        return Spec("str")
    if tp is bool:
        return Spec("bool")
    if tp is float:
        return Spec("float")
    if tp is Any:
        return Spec("any")
    if tp is ev.Stats:
        return Spec("stats")
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return Spec("optional", (_spec_of(rest[0]),))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return Spec("array", (_spec_of(args[0]),))
        return Spec("tuple", tuple(_spec_of(a) for a in args))
    raise TypeError(f"event field type {tp!r} has no JSON mapping")  # a new event kind needs one


def field_specs(cls: type[ev.Event]) -> list[tuple[str, Spec, bool]]:
    """(name, spec, required) for each field of an event type, in file order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is MISSING and f.default_factory is MISSING
        out.append((f.name, _spec_of(hints[f.name]), required))
    return out


# --- checking and converting one value (the general path, also used for error messages) -------

_JSON_TYPE_NAMES = {int: "int", float: "float", str: "str", bool: "bool", list: "list", dict: "object",
                    type(None): "null"}  # fmt: skip


def _type_name(v: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(v), type(v).__name__)


def _convert(spec: Spec, v: Any, path: str) -> Any:
    """The value as the event holds it, or FieldProblem naming the first thing wrong."""
    k = spec.kind
    if k == "int":
        if type(v) is int:
            return v
    elif k == "str":
        if type(v) is str:
            return v
    elif k == "bool":
        if type(v) is bool:
            return v
    elif k == "float":
        if type(v) is float or type(v) is int:
            return float(v)
        if type(v) is str and v in _NONFINITE_OUT:
            return _NONFINITE_OUT[v]
        raise FieldProblem(path, f"field '{path}' must be a number, got {_type_name(v)}")
    elif k == "any":
        return _decode_any(v)
    elif k == "optional":
        if v is None:
            return None
        if spec.items[0].kind not in ("int", "str", "bool", "float"):
            return _convert(spec.items[0], v, path)  # its message is the more precise one
        try:
            return _convert(spec.items[0], v, path)
        except FieldProblem:
            pass
    elif k == "array":
        if type(v) is list or type(v) is tuple:
            item = spec.items[0]
            if item.kind == "int" and all(type(x) is int for x in v):  # shapes, node lists: common
                return tuple(v)
            return tuple(_convert(item, x, f"{path}[{i}]") for i, x in enumerate(v))
    elif k == "tuple":
        if type(v) is list or type(v) is tuple:
            if len(v) != len(spec.items):
                raise FieldProblem(
                    path, f"field '{path}' must be {spec.describe()} ({len(spec.items)} items), "
                    f"got {len(v)} items",
                )  # fmt: skip
            return tuple(_convert(s, x, f"{path}[{i}]") for i, (s, x) in enumerate(zip(spec.items, v)))
    elif k == "stats":
        if type(v) is dict:
            vals = []
            for name, sub in _STATS_FIELDS:
                if name not in v:
                    raise FieldProblem(f"{path}.{name}", f"field '{path}.{name}' is missing")
                vals.append(_convert(sub, v[name], f"{path}.{name}"))
            return ev.Stats(*vals)
    raise FieldProblem(path, f"field '{path}' must be {spec.describe()}, got {_type_name(v)}")


_STATS_FIELDS = [(name, spec) for name, spec, _ in field_specs(ev.Stats)]  # type: ignore[arg-type]


_DEFAULTS = {t: {f.name: f.default for f in dataclasses.fields(t) if f.default is not MISSING}
             for t in ev.EVENT_TYPES}  # fmt: skip


def _describe_problem(cls: type[ev.Event], d: dict[str, Any]) -> FieldProblem:
    for name, spec, required in _SPECS[cls]:
        if name not in d:
            if required:
                return FieldProblem(name, f"field '{name}' is missing")
            continue
        try:
            _convert(spec, d[name], name)
        except FieldProblem as p:
            return p
    return FieldProblem(None, "does not match its definition")  # pragma: no cover - fast path agrees


# --- generated per-kind encoders and decoders ------------------------------------------------


def _gen(spec: Spec, var: str, depth: int = 0, path: str = "stats") -> tuple[str, str] | None:
    """(check, convert): Python expressions over ``var``, the check True when the value is valid
    as it commonly is (no non-finite strings), the conversion giving the event's value. None
    where only the general path will do (``any``)."""
    k = spec.kind
    if k in ("int", "str", "bool"):
        return f"type({var}) is {k}", var
    if k == "float":
        return f"(type({var}) is float or type({var}) is int)", f"float({var})"
    if k == "stats":
        # The field's own name goes along, so a problem inside reads 'before.norm', not 'stats.norm'.
        return f"type({var}) is dict", f"_stats_dec({var}, {path!r})"
    if k == "optional":
        inner = _gen(spec.items[0], var, depth, path)
        if inner is None:
            return None
        conv = var if inner[1] == var else f"(None if {var} is None else {inner[1]})"
        return f"({var} is None or {inner[0]})", conv
    if k == "tuple":
        parts = [_gen(item, f"{var}[{i}]", depth) for i, item in enumerate(spec.items)]
        if any(p is None for p in parts):
            return None
        checks = " and ".join(p[0] for p in parts)  # type: ignore[index]
        identity = all(p[1] == f"{var}[{i}]" for i, p in enumerate(parts))  # type: ignore[index]
        conv = f"tuple({var})" if identity else "(" + ", ".join(p[1] for p in parts) + ",)"  # type: ignore[index]
        return f"(type({var}) is list and len({var}) == {len(parts)} and {checks})", conv
    if k == "array":
        x = f"x{depth}"
        inner = _gen(spec.items[0], x, depth + 1)
        if inner is None:
            return None
        conv = f"tuple({var})" if inner[1] == x else f"tuple([{inner[1]} for {x} in {var}])"
        if spec.items[0].kind in ("int", "str"):  # shapes, node lists: a set of the item types, in C
            return f"(type({var}) is list and {{*map(type, {var})}} <= _only_{spec.items[0].kind})", conv
        return f"(type({var}) is list and all({inner[0]} for {x} in {var}))", conv
    return None


def _stats_dec(v: dict[str, Any], path: str = "stats") -> ev.Stats:
    """The common case of a stats object; anything else goes through the general path."""
    try:
        norm, lo, hi, nan, inf = v["norm"], v["min"], v["max"], v["nan"], v["inf"]
    except KeyError:
        return _convert(_STATS_SPEC, v, path)
    if (
        type(norm) is float and type(lo) is float and type(hi) is float
        and type(nan) is int and type(inf) is int
    ):  # fmt: skip
        return _make_stats(norm, lo, hi, nan, inf)
    return _convert(_STATS_SPEC, v, path)


_STATS_SPEC = Spec("stats")


def _dict_items(cls: type[ev.Event], value: Callable[[str], str]) -> str:
    """The dict literal of an event, ``value(field)`` giving the expression of each field."""
    items = ['"seq": ' + value("seq"), f'"kind": "{cls.kind}"', '"ts": ' + value("ts"), '"tid": ' + value("tid")]
    for name, spec, _ in _SPECS[cls][3:]:
        base = spec.items[0] if spec.kind == "optional" else spec
        if base.kind == "stats":
            items.append(f'"{name}": _stats({value(name)})')
        elif base.kind in ("any", "float"):
            items.append(f'"{name}": _any({value(name)})')
        else:
            items.append(f'"{name}": {value(name)}')
    return "{" + ", ".join(items) + "}"


def _make_codec(cls: type[ev.Event]) -> tuple[Callable[[Any], dict], Callable[[dict], Any]]:
    specs = _SPECS[cls]
    ns: dict[str, Any] = {"_cls": cls, "_stats": _encode_stats, "_any": _encode_any, "_conv": _convert,
                          "_problem": _describe_problem, "_stats_dec": _stats_dec,
                          "_only_int": frozenset([int]), "_only_str": frozenset([str])}  # fmt: skip
    # encoder: a dict literal; tuples are fine as they are (both backends write them as arrays)
    src = "def encode(e):\n    return " + _dict_items(cls, lambda n: f"e.{n}") + "\n"
    # decoder: read every field, check the cheap ones inline, convert the rest; any failure goes
    # to the slow path which names the field.
    lines = ["def decode(d):", "    try:"]
    args = []
    for i, (name, _spec, required) in enumerate(specs):
        var = f"v{i}"
        args.append(var)
        if required:
            lines.append(f"        {var} = d['{name}']")
        else:
            lines.append(f"        {var} = d.get('{name}', _default_{i})")
            ns[f"_default_{i}"] = _DEFAULTS[cls][name]
    lines.append("    except KeyError:\n        raise _problem(_cls, d) from None")
    checks = []
    for i, (name, spec, _required) in enumerate(specs):
        var = f"v{i}"
        ns[f"_spec_{i}"] = spec
        fast = _gen(spec, var, path=name)
        if fast is None:  # values: usually null
            lines.append(f"    if {var} is not None:\n        {var} = _conv(_spec_{i}, {var}, '{name}')")
        elif fast[1] == var:
            checks.append(fast[0])  # valid as read: checked all at once below
        else:
            lines.append(f"    {var} = {fast[1]} if {fast[0]} else _conv(_spec_{i}, {var}, '{name}')")
    if checks:
        lines.append("    if not (" + " and ".join(checks) + "):\n        raise _problem(_cls, d)")
    # the maker's body inlined (see _make_maker): a call with a dozen arguments saved per event
    ns["_new"] = object.__new__
    lines.append("    o = _new(_cls)")
    for i, n in enumerate(ev.field_names(cls)):
        ns[f"_set{i}"] = getattr(cls, n).__set__
        lines.append(f"    _set{i}(o, {args[i]})")
    lines.append("    return o")
    src += "\n".join(lines) + "\n"
    exec(compile(src, f"<gradviz codec {cls.kind}>", "exec"), ns)
    return ns["encode"], ns["decode"]


def _make_maker(cls: type) -> Callable[..., Any]:
    """A constructor taking every field positionally, twice as fast as the frozen dataclass's
    __init__ (slot descriptors' __set__ instead of object.__setattr__ by name); it builds the
    same object (events have no __post_init__)."""
    names = ev.field_names(cls)
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = ["    o = _new(_cls)"]
    for i, n in enumerate(names):
        ns[f"_set{i}"] = getattr(cls, n).__set__  # the slot's member descriptor
        body.append(f"    _set{i}(o, {n})")
    src = f"def make({', '.join(names)}):\n" + "\n".join(body) + "\n    return o\n"
    exec(compile(src, f"<gradviz make {cls.__name__}>", "exec"), ns)
    return ns["make"]


MAKERS: dict[type[ev.Event], Callable[..., Any]] = {t: _make_maker(t) for t in ev.EVENT_TYPES}
make_stats: Callable[[float, float, float, int, int], ev.Stats] = _make_maker(ev.Stats)
_make_stats = make_stats
_SPECS: dict[type[ev.Event], list[tuple[str, Spec, bool]]] = {t: field_specs(t) for t in ev.EVENT_TYPES}
_ENCODERS: dict[type[ev.Event], Callable[[Any], dict]] = {}
_DECODERS: dict[str, Callable[[dict], Any]] = {}
for _t in ev.EVENT_TYPES:
    _ENCODERS[_t], _DECODERS[_t.kind] = _make_codec(_t)


def encode(e: ev.Event) -> dict[str, Any]:
    """The event as a JSON-ready dict (field order: seq, kind, ts, tid, then the kind's fields)."""
    return _ENCODERS[type(e)](e)


def decode(d: Any) -> ev.Event:
    """A dict read from a file back into its event; FieldProblem says what does not fit."""
    if type(d) is not dict:
        raise FieldProblem(None, f"must be a JSON object, got {_type_name(d)}")
    kind = d.get("kind")
    dec = _DECODERS.get(kind) if type(kind) is str else None
    if dec is None:
        if "kind" not in d:
            raise FieldProblem("kind", "field 'kind' is missing")
        if type(kind) is not str:
            raise FieldProblem("kind", f"field 'kind' must be str, got {_type_name(kind)}")
        raise FieldProblem("kind", f"field 'kind' is {kind!r}, not a known event kind")
    return dec(d)


def encode_line(e: ev.Event) -> bytes:
    return dumps(_ENCODERS[type(e)](e))


# --- batches: what the writer and the recorder use -------------------------------------------
#
# One JSON call for thousands of events instead of one each: the backend's per-call cost
# (argument parsing, buffer allocation, bytes object) was a third of encoding an event. The
# list comes out as ``[{..},{..}]``; splitting it into lines is one ``replace`` of the
# ``},{"seq":`` between events (an end marker appended to the list gives the last event its
# separator too). That byte sequence cannot occur inside a string (a quote in a string is
# escaped), only in a ``values`` holding objects with a "seq" key: the length check catches
# that, and such a batch goes the per-event way.

_SEP = b'},{"seq":'
_LINE_SEP = b'},\n{"seq":'

if _orjson is not None:
    _dumps_batch = _orjson_dumps
    _BATCH_ERRORS: tuple[type[Exception], ...] = (TypeError,)  # big ints, lone surrogates
else:  # pragma: no cover - the stdlib fallback (tested in a subprocess)

    def _dumps_batch(obj: Any) -> bytes:
        return _encoder.encode(obj).encode("utf-8")

    _BATCH_ERRORS = (UnicodeEncodeError, ValueError, TypeError)


_END = {"seq": None}  # a last element, so the last real event also gets its ",\n" from replace
_END_LEN = len(b'{"seq":null}]')


def lines(dicts: list[dict[str, Any]]) -> bytes | memoryview:
    """Encoded events as file lines, each followed by ``,\n`` (the writer's layout)."""
    n = len(dicts)
    if n == 0:
        return b""
    dicts.append(_END)
    try:
        blob = _dumps_batch(dicts)
    except _BATCH_ERRORS:
        blob = None
    finally:
        dicts.pop()
    if blob is not None:
        out = blob.replace(_SEP, _LINE_SEP)
        if len(out) - len(blob) == n:  # each replacement adds one byte: none inside a value
            return memoryview(out)[1:-_END_LEN]  # no brackets, no end marker, and no copy
    return b"".join([dumps(d) + b",\n" for d in dicts])


# Kinds in the order a backward emits them most: the batch encoders test them in this order.
_BY_FREQUENCY = (
    ev.QueuePush, ev.QueuePop, ev.NodeBegin, ev.NodeEnd, ev.BufferAdd, ev.DependencyDecrement,
    ev.EdgeCreated, ev.NodeCreated, ev.SavedRelease, ev.AccumulateGradUpdate, ev.TensorCreated,
)  # fmt: skip
_ORDER = _BY_FREQUENCY + tuple(t for t in ev.EVENT_TYPES if t not in _BY_FREQUENCY)


def _make_batch_encoders() -> tuple[Callable[[list], list], Callable[[list, int], list]]:
    """``dicts_of_events(events)`` and ``dicts_of_rows(rows, seq0)``: one loop over the batch
    with the kinds tested inline, so an event costs a dict literal and no function call."""
    ns: dict[str, Any] = {"_stats": _encode_stats, "_any": _encode_any}
    ev_src = ["def dicts_of_events(events):", "    out = []", "    append = out.append", "    for e in events:",
              "        t = type(e)"]  # fmt: skip
    row_src = ["def dicts_of_rows(rows, seq):", "    out = []", "    append = out.append", "    for r in rows:",
               "        t = r[0]"]  # fmt: skip
    for k, cls in enumerate(_ORDER):
        ns[f"_C{k}"] = cls
        names = ev.field_names(cls)
        kw = "if" if k == 0 else "elif"
        ev_src.append(f"        {kw} t is _C{k}:")
        ev_src.append("            append(" + _dict_items(cls, lambda n: f"e.{n}") + ")")
        row_src.append(f"        {kw} t is _C{k}:")
        row_src.append("            _c, " + ", ".join(f"v_{n}" for n in names[1:]) + ", = r")
        row_src.append("            append(" + _dict_items(cls, lambda n: "seq" if n == "seq" else f"v_{n}") + ")")
    ev_src += ["        else:", "            append(_ENCODERS[t](e))", "    return out"]
    row_src += ["        else:", "            raise TypeError(f'not an event class: {t!r}')", "        seq += 1",
                "    return out"]  # fmt: skip
    ns["_ENCODERS"] = _ENCODERS
    exec(compile("\n".join(ev_src) + "\n\n" + "\n".join(row_src) + "\n", "<gradviz batch encoders>", "exec"), ns)
    return ns["dicts_of_events"], ns["dicts_of_rows"]


_dicts_of_events, _dicts_of_rows = _make_batch_encoders()


def encode_events(events: list[ev.Event]) -> bytes | memoryview:
    """Events as file lines (``lines``)."""
    return lines(_dicts_of_events(events))


def encode_rows(rows: list[tuple], seq0: int) -> bytes | memoryview:
    """The recorder's rows ``(cls, ts, tid, *fields)``, numbered from ``seq0``, as file lines
    (``lines``)."""
    return lines(_dicts_of_rows(rows, seq0))


def events_from_rows(rows: list[tuple], seq0: int) -> list[ev.Event]:
    """The recorder's rows as events, numbered from ``seq0``."""
    make = MAKERS
    return [make[r[0]](seq, *r[1:]) for seq, r in enumerate(rows, seq0)]
