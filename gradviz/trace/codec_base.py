"""The codec's groundwork: JSON backends, non-finite floats, each field's type spec and its
checked conversion, and fast event constructors (re-exported by gradviz.trace.codec)."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING
from operator import attrgetter
from typing import Any

from gradviz.trace import events as ev

try:  # optional speed-ups, same output
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - exercised when msgspec is absent
    _msgspec = None
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _orjson = None

import json as _json

JSON_BACKEND = "msgspec" if _msgspec is not None else "orjson" if _orjson is not None else "json"


class FieldProblem(ValueError):
    """A decoded value does not fit the event definition. ``field`` is a path like ``stats.norm``."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class Raw:
    """A value in a recorder row that JSON cannot take as it is (a ``Stats`` or ``values`` with
    NaN or infinities): ``value`` for the event, ``json`` for the file. The encoders' hook
    writes ``json``; rows that need no care carry plain tuples and lists."""

    __slots__ = ("value", "json")

    def __init__(self, value: Any, json: Any):
        self.value = value
        self.json = json

    @property
    def _id(self) -> Any:
        # what msgspec's hook (attrgetter("_id"), see _ms_hook) writes for a Raw: its JSON
        return self.json


def _hook(obj: Any) -> Any:
    # A recorder row's edges are the engine's Edge tuples (node, input_nr): a node is written as
    # its id (the common call: a big graph's every edge). orjson hands the named tuples
    # themselves here (msgspec and json take tuples).
    try:
        node_id = obj._id
    except AttributeError:
        pass
    else:
        if type(node_id) is int:
            return node_id
    if type(obj) is Raw:
        return obj.json
    if isinstance(obj, tuple):
        return tuple(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


# --- JSON backends ---------------------------------------------------------------------------

_escaping = _json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False, default=_hook)
_stdlib = _json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_hook)


def _dumps_escaped(obj: Any) -> bytes:
    """Strings UTF-8 cannot hold (lone surrogates, e.g. from undecodable file names) as \\u escapes."""
    return _escaping.encode(obj).encode("ascii")


def _dumps_stdlib(obj: Any) -> bytes:
    try:
        return _stdlib.encode(obj).encode("utf-8")
    except UnicodeEncodeError:
        return _dumps_escaped(obj)


# msgspec's hook in C: a recorder row's nodes (a big graph's every edge) have an int _id, a Raw
# gives its JSON as _id; anything else raises AttributeError, and the row goes the stdlib's way
# (``dumps``), whose _hook names what JSON cannot take. _hook in Python: 100 ns a call, a fifth
# of encoding a 10,000-node chain's 20,002 node_edges rows.
_ms_hook = attrgetter("_id")
_MS_REFUSED = (TypeError, UnicodeEncodeError, OverflowError, AttributeError)

if _msgspec is not None:
    _ms_encoder = _msgspec.json.Encoder(enc_hook=_ms_hook)
    _ms_encode = _ms_encoder.encode
    _ms_encode_lines = _ms_encoder.encode_lines
    _ms_decode = _msgspec.json.Decoder().decode
    _MsError = _msgspec.DecodeError

    def dumps(obj: Any) -> bytes:
        """Compact JSON bytes."""
        try:
            return _ms_encode(obj)
        except _MS_REFUSED:
            return _dumps_escaped(obj)

    def loads(data: bytes | str) -> Any:
        try:
            return _ms_decode(data)
        except _MsError:
            # msgspec refuses escaped lone surrogates, which _dumps_escaped writes: the stdlib
            # reads them; anything else it also rejects, with its own message
            return _json.loads(data)

elif _orjson is not None:  # pragma: no cover - exercised when msgspec is absent
    _orjson_dumps = _orjson.dumps
    _orjson_loads = _orjson.loads
    _OrjsonDecodeError = _orjson.JSONDecodeError

    def dumps(obj: Any) -> bytes:
        """Compact JSON bytes."""
        try:
            return _orjson_dumps(obj, default=_hook)
        except TypeError:  # big ints, lone surrogates
            return _dumps_stdlib(obj)

    def loads(data: bytes | str) -> Any:
        try:
            return _orjson_loads(data)
        except _OrjsonDecodeError:
            return _json.loads(data)

else:  # pragma: no cover
    dumps = _dumps_stdlib

    def loads(data: bytes | str) -> Any:
        return _json.loads(data)


def _lines(objs: list[Any]) -> bytes:
    """JSON values as file lines, each followed by ``,\\n`` (the writer's layout)."""
    if not objs:
        return b""
    if _msgspec is not None:
        try:
            # one call for the batch; a newline cannot occur inside an encoded value (strings
            # escape it), so each one marks an end of line
            return _ms_encode_lines(objs).replace(b"\n", b",\n")
        except _MS_REFUSED:
            pass  # a lone surrogate, an int beyond 64 bits: each value by itself, as dumps can
    elif _orjson is not None:  # pragma: no cover - exercised when msgspec is absent
        # one call for the batch, then a line break before each event: an event array starts
        # with its kind, so `],["` is where one ends and the next begins, unless a value holds
        # an array of strings after another array (trace_begin's devices and argv, "NaN" stats):
        # the count of breaks then says so, and that batch goes value by value
        try:
            blob = _orjson_dumps(objs, default=_hook)
        except TypeError:
            blob = None
        if blob is not None:
            out = blob.replace(b'],["', b'],\n["')
            if len(out) - len(blob) == len(objs) - 1:
                return out[1:-1] + b",\n"
    return b",\n".join(map(dumps, objs)) + b",\n"


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
    """A Stats as format 1 writes it (an object)."""
    if s is None:
        return None
    norm, lo, hi = s.norm, s.min, s.max
    if norm - norm == 0 and lo - lo == 0 and hi - hi == 0:  # all finite (NaN and inf fail): common
        return {"norm": norm, "min": lo, "max": hi, "nan": s.nan, "inf": s.inf}
    return {"norm": _float_out(norm), "min": _float_out(lo), "max": _float_out(hi),
            "nan": s.nan, "inf": s.inf}


def stats_json(s: ev.Stats | None) -> Any:
    """A Stats as format 2 writes it: ``[norm, min, max, nan, inf]``."""
    if s is None:
        return None
    norm, lo, hi = s.norm, s.min, s.max
    if norm - norm == 0 and lo - lo == 0 and hi - hi == 0:
        return (norm, lo, hi, s.nan, s.inf)
    return [_float_out(norm), _float_out(lo), _float_out(hi), s.nan, s.inf]


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
            return "a stats array"
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
    hints = ev.field_types(cls)
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is MISSING and f.default_factory is MISSING
        out.append((f.name, _spec_of(hints[f.name]), required))
    return out


# --- checking and converting one value (the general path, also used for error messages) -------

_JSON_TYPE_NAMES = {int: "int", float: "float", str: "str", bool: "bool", list: "list", dict: "object",
                    type(None): "null"}


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
        if type(v) is float:
            return v
        if type(v) is int:
            return _int_to_float(v, path)
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
                )
            return tuple(_convert(s, x, f"{path}[{i}]") for i, (s, x) in enumerate(zip(spec.items, v)))
    elif k == "stats":
        if (type(v) is float or type(v) is int) and v - v == 0:  # format 3: one finite element x
            x = _int_to_float(v, path) if type(v) is int else v
            return ev.Stats(abs(x), x, x, 0, 0)
        if type(v) is list or type(v) is tuple:  # format 2: [norm, min, max, nan, inf]
            if len(v) != len(_STATS_FIELDS):
                raise FieldProblem(
                    path, f"field '{path}' must be a stats array [{', '.join(STATS_FIELDS)}] "
                    f"({len(_STATS_FIELDS)} items), got {len(v)} items",
                )
            return ev.Stats(*(_convert(sub, x, f"{path}.{name}") for (name, sub), x in zip(_STATS_FIELDS, v)))
        if type(v) is dict:  # format 1: {"norm": ..., ...}
            vals = []
            for name, sub in _STATS_FIELDS:
                if name not in v:
                    raise FieldProblem(f"{path}.{name}", f"field '{path}.{name}' is missing")
                vals.append(_convert(sub, v[name], f"{path}.{name}"))
            return ev.Stats(*vals)
    raise FieldProblem(path, f"field '{path}' must be {spec.describe()}, got {_type_name(v)}")


def _int_to_float(v: int, path: str) -> float:
    """An integer where a float belongs: JSON allows any number of digits, a float does not."""
    try:
        return float(v)
    except OverflowError:
        raise FieldProblem(
            path, f"field '{path}' must be a number a float can hold, got an integer beyond 1.8e308"
        ) from None


_STATS_FIELDS = [(name, spec) for name, spec, _ in field_specs(ev.Stats)]  # type: ignore[arg-type]
STATS_FIELDS: tuple[str, ...] = tuple(name for name, _ in _STATS_FIELDS)


_DEFAULTS = {t: {f.name: f.default for f in dataclasses.fields(t) if f.default is not MISSING}
             for t in ev.EVENT_TYPES}


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


# --- building events fast --------------------------------------------------------------------
#
# A frozen dataclass refuses attribute stores (its __setattr__ raises), so its __init__ goes
# through object.__setattr__ by name for every field: 1 us for a ten-field event. Each event
# class gets a twin subclass that adds no slots and stores attributes plainly; an event is built
# as the twin (plain slot stores, a few ns each) and then given its real class. The layouts are
# the same, so the class assignment is allowed, and what comes out is an ordinary frozen event.


def _twin(cls: type) -> type:
    return type(f"_Building{cls.__name__}", (cls,), {
        "__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__,
    })


_TWINS: dict[type, type] = {t: _twin(t) for t in (*ev.EVENT_TYPES, ev.Stats)}


def _build_lines(cls: type, args: list[str], indent: str = "    ") -> list[str]:
    """Source lines making ``o``, an instance of cls, from the expressions ``args`` (field order)."""
    lines = [f"{indent}o = _new(_twin)"]
    lines += [f"{indent}o.{n} = {a}" for n, a in zip(ev.field_names(cls), args)]  # type: ignore[arg-type]
    lines.append(f"{indent}o.__class__ = _cls")
    return lines


def _make_maker(cls: type) -> Callable[..., Any]:
    """A constructor taking every field positionally, three times as fast as the frozen
    dataclass's __init__ (see _TWINS); it builds the same object (events have no __post_init__)."""
    names = ev.field_names(cls)  # type: ignore[arg-type]
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": _TWINS[cls]}
    src = f"def make({', '.join(names)}):\n" + "\n".join(_build_lines(cls, list(names))) + "\n    return o\n"
    exec(compile(src, f"<gradviz make {cls.__name__}>", "exec"), ns)
    return ns["make"]


MAKERS: dict[type[ev.Event], Callable[..., Any]] = {t: _make_maker(t) for t in ev.EVENT_TYPES}
make_stats: Callable[[float, float, float, int, int], ev.Stats] = _make_maker(ev.Stats)
_make_stats = make_stats
_SPECS: dict[type[ev.Event], list[tuple[str, Spec, bool]]] = {t: field_specs(t) for t in ev.EVENT_TYPES}

#: Format 2's field list of each kind: what its header declares, and each event array's layout.
FIELDS_V2: dict[str, tuple[str, ...]] = {t.kind: ("kind", *ev.field_names(t)[1:], "seq") for t in ev.EVENT_TYPES}
