"""Events <-> JSON: the only place that knows how an event looks in a file.

Format 3 (written): each event is one JSON array, ``[kind, ts, tid, *fields]``, the kind's
fields in declaration order (the file's header line declares them, ``FIELDS``), its seq its
position; a group line (``GROUPS``) stands for several adjacent events. A ``Stats`` is the array
``[norm, min, max, nan, inf]``, or for one finite element x the number x. Format 2 (still read):
the same arrays with the seq last, no groups (``FIELDS_V2``). Format 1 (still read): each event
is one JSON object with the same fields by name, a ``Stats`` an object. Tuples become arrays; floats that JSON
cannot hold (NaN, +inf, -inf) are written as the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"``.

Why arrays, and this order: a recording writes millions of events, and the recorder's rows
``(kind, ts, tid, *fields)`` are already those arrays but for their seq, which is appended in C
(a seq anywhere else would cost a Python step per event), so a batch of rows goes to the JSON
encoder as it is; the kind first is what msgspec needs to decode a line straight into a typed,
validated record (``file.py``); a line is also half as long as an object.

Speed matters here (millions of events), so the per-kind encoders and decoders are generated
once from the event definitions (plain functions with the field names spelled out) instead of
walking ``dataclasses.fields`` for every event. Decoders validate every field; on the first
problem the slow path (``_describe_problem``) works out exactly which field is wrong and why.

JSON backends, fastest first, each optional: msgspec (its ``encode_lines`` writes a batch of
events as lines in one call), orjson, the stdlib ``json`` module. They write the same bytes but
for the spelling of some floats (``1e-05`` in the stdlib's, ``0.00001`` in the others').
"""

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

__all__ = [
    "JSON_BACKEND", "FieldProblem", "dumps", "loads", "encode", "decode", "field_specs", "Spec", "FIELDS",
    "encode_line", "encode_events", "encode_rows", "events_from_rows", "decode_array", "Raw", "GROUPS",
    "encode_array", "encode_array_v2", "decode_line", "row_events", "EXPANDERS", "FIELDS_V2",
]  # fmt: skip

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
            "nan": s.nan, "inf": s.inf}  # fmt: skip


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
        if (type(v) is float or type(v) is int) and v - v == 0:  # format 3: one finite element x
            x = float(v)
            return ev.Stats(abs(x), x, x, 0, 0)
        if type(v) is list or type(v) is tuple:  # format 2: [norm, min, max, nan, inf]
            if len(v) != len(_STATS_FIELDS):
                raise FieldProblem(
                    path, f"field '{path}' must be a stats array [{', '.join(STATS_FIELDS)}] "
                    f"({len(_STATS_FIELDS)} items), got {len(v)} items",
                )  # fmt: skip
            return ev.Stats(*(_convert(sub, x, f"{path}.{name}") for (name, sub), x in zip(_STATS_FIELDS, v)))
        if type(v) is dict:  # format 1: {"norm": ..., ...}
            vals = []
            for name, sub in _STATS_FIELDS:
                if name not in v:
                    raise FieldProblem(f"{path}.{name}", f"field '{path}.{name}' is missing")
                vals.append(_convert(sub, v[name], f"{path}.{name}"))
            return ev.Stats(*vals)
    raise FieldProblem(path, f"field '{path}' must be {spec.describe()}, got {_type_name(v)}")


_STATS_FIELDS = [(name, spec) for name, spec, _ in field_specs(ev.Stats)]  # type: ignore[arg-type]
STATS_FIELDS: tuple[str, ...] = tuple(name for name, _ in _STATS_FIELDS)


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
    })  # fmt: skip


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

# --- format 3's groups: one line for several adjacent events -------------------------------------
#
# Steps the engine reports in one probe call are one line: a gradient handed on (the events
# dependency_decrement, buffer_add, queue_push), a node taken to run (queue_pop, node_begin), a
# node announced with its edges (node_created, then one edge_created per next_edges slot), a
# chain's step (a node's end, the gradient it handed on, that successor taken to run). The
# events share the line's ts and tid; their seqs follow the line's position. Each member's
# fields come from the line's fields by name, or are constants (a quoted string, a number).

#: group kind -> (its fields after kind, ts, tid; its members: (event kind, their fields' sources))
GROUPS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "gradient_in": (
        ("task", "node", "by", "remaining", "slot", "mode", "shape", "dtype", "device", "stats", "values",
         "queue", "queue_device", "priority", "size"),
        (("dependency_decrement", ("task", "node", "by", "remaining")),
         ("buffer_add", ("task", "node", "slot", "mode", "by", "shape", "dtype", "device", "stats", "values")),
         ("queue_push", ("queue", "queue_device", "task", "node", '"node"', "priority", "size"))),
    ),
    "node_pop": (
        ("queue", "device", "task", "node", "priority", "size", "depth"),
        (("queue_pop", ("queue", "device", "task", "node", '"node"', "priority", "size")),
         ("node_begin", ("task", "node", "depth"))),
    ),
    # a chain's step (Probe.chain_step): node_end of `by`, then gradient_in and node_pop of node
    "chain_step": (
        ("task", "by", "node", "slot", "mode", "shape", "dtype", "device", "stats", "values", "queue",
         "queue_device", "priority", "push_size", "size", "depth"),
        (("node_end", ("task", "by", '"ok"')),
         ("dependency_decrement", ("task", "node", "by", "0")),
         ("buffer_add", ("task", "node", "slot", "mode", "by", "shape", "dtype", "device", "stats", "values")),
         ("queue_push", ("queue", "queue_device", "task", "node", '"node"', "priority", "push_size")),
         ("queue_pop", ("queue", "queue_device", "task", "node", '"node"', "priority", "size")),
         ("node_begin", ("task", "node", "depth"))),
    ),
    "node_edges": (
        (*ev.field_names(ev.NodeCreated)[3:], "edges"),
        (("node_created", tuple(ev.field_names(ev.NodeCreated)[3:])),),  # then edge_created per edge
    ),
}  # fmt: skip
#: events a group line stands for (node_edges: this plus one per edge)
GROUP_SIZE: dict[str, int] = {k: len(members) for k, (_, members) in GROUPS.items()}

#: Format 3's field list of each kind and group: what the header declares, each line's layout.
FIELDS: dict[str, tuple[str, ...]] = {
    **{t.kind: ("kind", *ev.field_names(t)[1:]) for t in ev.EVENT_TYPES},
    **{k: ("kind", "ts", "tid", *fields) for k, (fields, _) in GROUPS.items()},
}


# --- generated per-kind decoders -------------------------------------------------------------


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
        return f"(type({var}) is list or type({var}) is dict or type({var}) is float)", f"_stats_dec({var}, {path!r})"
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


def _stats_dec(v: Any, path: str = "stats") -> ev.Stats:
    """The common case of a stats array (format 2) or object (format 1); anything else goes
    through the general path."""
    if type(v) is float:
        if v - v == 0.0:
            return make_stats(abs(v), v, v, 0, 0)
        return _convert(_STATS_SPEC, v, path)
    if type(v) is list:
        if len(v) == 5:
            norm, lo, hi, nan, inf = v
        else:
            return _convert(_STATS_SPEC, v, path)
    else:
        try:
            norm, lo, hi, nan, inf = v["norm"], v["min"], v["max"], v["nan"], v["inf"]
        except KeyError:
            return _convert(_STATS_SPEC, v, path)
    if (
        type(norm) is float and type(lo) is float and type(hi) is float
        and type(nan) is int and type(inf) is int
    ):  # fmt: skip
        o = _new(_StatsTwin)
        o.norm = norm
        o.min = lo
        o.max = hi
        o.nan = nan
        o.inf = inf
        o.__class__ = ev.Stats
        return o
    return _convert(_STATS_SPEC, v, path)


_STATS_SPEC = Spec("stats")
_StatsTwin = _TWINS[ev.Stats]
_new = object.__new__


def _decoder_ns(cls: type[ev.Event]) -> dict[str, Any]:
    return {
        "_cls": cls, "_twin": _TWINS[cls], "_new": object.__new__, "_conv": _convert, "_problem": _describe_problem,
        "_stats_dec": _stats_dec, "_only_int": frozenset([int]), "_only_str": frozenset([str]),
    }  # fmt: skip


def _check_and_build(cls: type[ev.Event], ns: dict[str, Any], fail: str) -> list[str]:
    """The body shared by both decoders, once the fields are in v0, v1, ...: check the cheap
    ones inline, convert the rest, build the event. ``fail``: the statement run on a problem."""
    lines = []
    checks = []
    args = []
    for i, (name, spec, _required) in enumerate(_SPECS[cls]):
        var = f"v{i}"
        args.append(var)
        ns[f"_spec_{i}"] = spec
        fast = _gen(spec, var, path=name)
        if fast is None:  # values: usually null
            lines.append(f"    if {var} is not None:\n        {var} = _conv(_spec_{i}, {var}, '{name}')")
        elif fast[1] == var:
            checks.append(fast[0])  # valid as read: checked all at once below
        else:
            lines.append(f"    {var} = {fast[1]} if {fast[0]} else _conv(_spec_{i}, {var}, '{name}')")
    if checks:
        lines.insert(0, "    if not (" + " and ".join(checks) + f"):\n        {fail}")
    lines += _build_lines(cls, args)
    lines.append("    return o")
    return lines


def _make_dict_decoder(cls: type[ev.Event]) -> Callable[[dict], Any]:
    """Format 1's: an event from its object. Any failure goes to the slow path naming the field."""
    specs = _SPECS[cls]
    ns = _decoder_ns(cls)
    lines = ["def decode(d):", "    try:"]
    for i, (name, _spec, required) in enumerate(specs):
        if required:
            lines.append(f"        v{i} = d['{name}']")
        else:
            lines.append(f"        v{i} = d.get('{name}', _default_{i})")
            ns[f"_default_{i}"] = _DEFAULTS[cls][name]
    lines.append("    except KeyError:\n        raise _problem(_cls, d) from None")
    lines += _check_and_build(cls, ns, "raise _problem(_cls, d)")
    exec(compile("\n".join(lines) + "\n", f"<gradviz codec {cls.kind}>", "exec"), ns)
    return ns["decode"]


def _make_array_decoder(cls: type[ev.Event]) -> Callable[[list], Any]:
    """Format 2's: an event from its array ``[kind, ts, tid, ..., seq]``. An array of another
    length or with anything wrong goes the object way, which names the field."""
    n = len(_SPECS[cls]) + 1
    ns = _decoder_ns(cls)
    ns["_by_name"] = _by_name
    vars_ = [f"v{i}" for i in range(len(_SPECS[cls]))]
    unpack = ", ".join(["_kind", *vars_[1:], vars_[0]])
    lines = ["def decode(a):", f"    if len(a) != {n}:", "        return _by_name(_cls, a)", f"    {unpack} = a"]
    lines += _check_and_build(cls, ns, "return _by_name(_cls, a)")
    exec(compile("\n".join(lines) + "\n", f"<gradviz codec2 {cls.kind}>", "exec"), ns)
    return ns["decode"]


def _by_name(cls: type[ev.Event], a: list) -> ev.Event:
    """An event array decoded by field name: the general path, with its precise messages."""
    names = FIELDS_V2[cls.kind]
    if len(a) != len(names):
        raise FieldProblem(None, f"has {len(a)} items, but {cls.kind} has {len(names)} fields ({', '.join(names)})")
    return _DECODERS[cls.kind](dict(zip(names, a)))


_DECODERS: dict[str, Callable[[dict], Any]] = {t.kind: _make_dict_decoder(t) for t in ev.EVENT_TYPES}
_ARRAY_DECODERS: dict[str, Callable[[list], Any]] = {t.kind: _make_array_decoder(t) for t in ev.EVENT_TYPES}


def decode(d: Any) -> ev.Event:
    """An event read from a file (an array, format 2, or an object, format 1) back into its
    event; FieldProblem says what does not fit."""
    if type(d) is list:
        return decode_array(d)
    if type(d) is not dict:
        raise FieldProblem(None, f"must be a JSON array, got {_type_name(d)}")
    kind = d.get("kind")
    dec = _DECODERS.get(kind) if type(kind) is str else None
    if dec is None:
        if "kind" not in d:
            raise FieldProblem("kind", "field 'kind' is missing")
        if type(kind) is not str:
            raise FieldProblem("kind", f"field 'kind' must be str, got {_type_name(kind)}")
        raise FieldProblem("kind", f"field 'kind' is {kind!r}, not a known event kind")
    return dec(d)


def decode_line(a: list, seq: int) -> ev.Event:
    """Format 3's line of one event (not a group), which is event number ``seq``, back into its
    event; FieldProblem says what does not fit."""
    if type(a) is not list:
        raise FieldProblem(None, f"must be a JSON array, got {_type_name(a)}")
    return decode_array([*a, seq])


def decode_array(a: list) -> ev.Event:
    """Format 2's event array back into its event; FieldProblem says what does not fit."""
    kind = a[0] if a else None
    dec = _ARRAY_DECODERS.get(kind) if type(kind) is str else None
    if dec is None:
        if not a:
            raise FieldProblem("kind", "field 'kind' is missing")
        if type(kind) is not str:
            raise FieldProblem("kind", f"field 'kind' must be str, got {_type_name(kind)}")
        raise FieldProblem("kind", f"field 'kind' is {kind!r}, not a known event kind")
    return dec(a)


# --- encoding ----------------------------------------------------------------------------------


def _dict_items(cls: type[ev.Event], value: Callable[[str], str]) -> str:
    """The dict literal of an event (format 1), ``value(field)`` giving each field's expression."""
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


def _needs_care(spec: Spec) -> str | None:
    """How a field's value becomes JSON in format 2: None (as it is), 'stats' or 'any'."""
    base = spec.items[0] if spec.kind == "optional" else spec
    if base.kind == "stats":
        return "stats"
    if base.kind in ("any", "float"):
        return "any"
    return None


def _make_array_encoder(cls: type[ev.Event], *, seq: bool = False) -> Callable[[Any], tuple]:
    """event -> its format 3 array ``(kind, ts, tid, *fields)`` (format 2's with ``seq`` last),
    as a tuple. Kinds whose fields all go as they are get an attrgetter (one C call; ``kind`` is a
    class attribute, so it is read like a field)."""
    names = ev.field_names(cls)
    care = [_needs_care(spec) for _, spec, _ in _SPECS[cls]]
    order = ["kind", *names[1:], *names[:1] * seq]
    if not any(care):
        return attrgetter(*order)  # type: ignore[return-value]
    parts = []
    for n in order:
        c = None if n == "kind" else care[names.index(n)]
        parts.append(f"{'_stats' if c == 'stats' else '_any'}(e.{n})" if c else f"e.{n}")
    ns: dict[str, Any] = {"_stats": stats_json, "_any": _encode_any}
    exec(compile(f"def encode(e):\n    return ({', '.join(parts)},)\n", f"<gradviz enc {cls.kind}>", "exec"), ns)
    return ns["encode"]


_ENCODERS: dict[type[ev.Event], Callable[[Any], dict]] = {}
for _t in ev.EVENT_TYPES:
    _ns: dict[str, Any] = {"_stats": _encode_stats, "_any": _encode_any}
    exec(f"def encode(e):\n    return {_dict_items(_t, lambda n: f'e.{n}')}\n", _ns)
    _ENCODERS[_t] = _ns["encode"]
_ARRAY_ENCODERS: dict[type[ev.Event], Callable[[Any], tuple]] = {t: _make_array_encoder(t) for t in ev.EVENT_TYPES}
_ARRAY_ENCODERS_V2: dict[type[ev.Event], Callable[[Any], tuple]] = {
    t: _make_array_encoder(t, seq=True) for t in ev.EVENT_TYPES
}


def encode(e: ev.Event) -> dict[str, Any]:
    """The event as format 1's JSON-ready dict (field order: seq, kind, ts, tid, then the kind's
    fields): the fields by name, for tools and for reading errors."""
    return _ENCODERS[type(e)](e)


def encode_array(e: ev.Event) -> tuple:
    """The event as format 3's JSON-ready array ``(kind, ts, tid, *fields)`` (its seq is its
    position in the file)."""
    return _ARRAY_ENCODERS[type(e)](e)


def encode_array_v2(e: ev.Event) -> tuple:
    """The event as format 2's array ``(kind, ts, tid, *fields, seq)`` (tests write old files)."""
    return _ARRAY_ENCODERS_V2[type(e)](e)


def encode_line(e: ev.Event) -> bytes:
    """One event's line (format 3), without the separator."""
    return dumps(_ARRAY_ENCODERS[type(e)](e))


def encode_events(events: list[ev.Event]) -> bytes:
    """Events as file lines, each followed by ``,\\n``: one JSON call for the batch."""
    enc = _ARRAY_ENCODERS
    return _lines([enc[type(e)](e) for e in events])


# --- the recorder's rows -----------------------------------------------------------------------
#
# A row is a format 3 line as Python values: ``(kind, ts, tid, *fields)``, an event's or a
# group's (GROUPS). Stats are plain tuples (finite) or Raw (not); values are Raw. So a batch of
# rows goes to the JSON encoder as it is, with no Python step per row.


def encode_rows(rows: list[tuple]) -> bytes:
    """The recorder's rows as file lines (``encode_events``' layout)."""
    return _lines(rows)


def row_events(row: tuple) -> int:
    """How many events a row (or a format 3 line) stands for."""
    n = GROUP_SIZE.get(row[0])
    if n is None:
        return 1
    return n + len(row[-1]) if row[0] == "node_edges" else n


def _row_value(v: Any) -> Any:
    return v.value if type(v) is Raw else v


def _row_stats(v: Any) -> Any:
    if type(v) is tuple:
        return make_stats(*v)
    if type(v) is float:  # one finite element
        return make_stats(abs(v), v, v, 0, 0)
    return v.value if type(v) is Raw else v


def _member_args(kind: str, sources: tuple[str, ...], var: Callable[[str], str], care_fn: dict[str, str]) -> list[str]:
    """Source expressions of an event's fields after seq (ts, tid, then its own), taken from a
    group's values (``var(name)``), constants quoted, converted as ``care_fn`` says."""
    cls = ev.KINDS[kind]
    args = [var("ts"), var("tid")]
    for (_name, spec, _), src in zip(_SPECS[cls][3:], sources):
        if src.startswith('"') or src.isdigit():  # a constant: a string (quoted) or a number
            args.append(src)
            continue
        c = _needs_care(spec)
        args.append(f"{care_fn[c]}({var(src)})" if c else var(src))
    return args


def _make_from_row(cls: type[ev.Event]) -> Callable[[int, tuple, Any], int]:
    names = ev.field_names(cls)
    care = [_needs_care(spec) for _, spec, _ in _SPECS[cls]]
    ns: dict[str, Any] = {"_cls": cls, "_twin": _TWINS[cls], "_new": object.__new__, "_stats": _row_stats,
                          "_value": _row_value}  # fmt: skip
    args = ["seq"]
    for n, c in zip(names[1:], care[1:]):
        args.append(f"_stats(v_{n})" if c == "stats" else f"_value(v_{n})" if c else f"v_{n}")
    src = ["def make(seq, r, append):", "    _k, " + ", ".join(f"v_{n}" for n in names[1:]) + ", = r"]
    src += _build_lines(cls, args) + ["    append(o)", "    return seq + 1"]
    exec(compile("\n".join(src) + "\n", f"<gradviz row {cls.kind}>", "exec"), ns)
    return ns["make"]


def _group_source(kind: str, head: list[str], var: Callable[[str], str], care_fn: dict[str, str],
                  ns: dict[str, Any]) -> list[str]:  # fmt: skip
    """The body of a group's maker: each member built and appended (``append``), seq advanced."""
    _fields, members = GROUPS[kind]
    src = list(head)
    for k, (member, sources) in enumerate(members):
        cls = ev.KINDS[member]
        ns[f"_cls{k}"] = cls
        ns[f"_twin{k}"] = _TWINS[cls]
        args = [f"seq + {k}", *_member_args(member, sources, var, care_fn)]
        src += [line.replace("_twin", f"_twin{k}").replace("_cls", f"_cls{k}") for line in _build_lines(cls, args)]
        src.append("    append(o)")
    if kind == "node_edges":  # then an edge_created for each of its edges
        ns["_edge"] = MAKERS[ev.EdgeCreated]
        ns["_dst"] = _dst
        src += [
            f"    seq += {len(members)}",
            f"    for slot, (dst, input_nr) in enumerate({var('edges')}):",
            f"        append(_edge(seq + slot, {var('ts')}, {var('tid')}, {var('node')}, slot, _dst(dst), input_nr))",
            f"    return seq + len({var('edges')})",
        ]
    else:
        src.append(f"    return seq + {len(members)}")
    return src


def _dst(f: Any) -> int | None:
    """An edge's node id (a recorder row writing to a file holds the node itself)."""
    return f if f is None or type(f) is int else f._id


def _make_group_from_row(kind: str) -> Callable[[int, tuple, Any], int]:
    names = FIELDS[kind][1:]
    ns: dict[str, Any] = {"_new": object.__new__, "_stats": _row_stats, "_value": _row_value}
    head = ["def make(seq, r, append):", "    " + ", ".join(f"v_{n}" for n in names) + ", = r[1:]"]
    src = _group_source(kind, head, lambda n: f"v_{n}", {"stats": "_stats", "any": "_value"}, ns)
    exec(compile("\n".join(src) + "\n", f"<gradviz row {kind}>", "exec"), ns)
    return ns["make"]


_FROM_ROW: dict[str, Callable[[int, tuple, Any], int]] = {
    **{t.kind: _make_from_row(t) for t in ev.EVENT_TYPES},
    **{k: _make_group_from_row(k) for k in GROUPS},
}


def events_from_rows(rows: list[tuple], seq0: int) -> list[ev.Event]:
    """The recorder's rows (or format 3 lines of Python values) as events, numbered from ``seq0``."""
    make = _FROM_ROW
    out: list[ev.Event] = []
    append = out.append
    seq = seq0
    for r in rows:
        seq = make[r[0]](seq, r, append)
    return out


def row_of(e: ev.Event) -> tuple:
    """The recorder's row of an event (for tests and tools that replay events into rows)."""
    names = ev.field_names(type(e))
    out: list[Any] = [e.kind]
    for (_n, spec, _r), name in zip(_SPECS[type(e)][1:], names[1:]):
        v = getattr(e, name)
        c = _needs_care(spec)
        if c == "stats" and v is not None:
            j = stats_json(v)
            v = j if type(j) is tuple else Raw(v, j)
        elif c and v is not None:
            v = Raw(v, _encode_any(v))
        out.append(v)
    return tuple(out)


# --- format 3's lines as format 2's arrays (the general reading path) -----------------------------


def _make_expander(kind: str) -> Callable[[list, int], list[list]]:
    """A group line -> its events' format 2 arrays, numbered from ``seq``; FieldProblem if the
    line is not the group's layout."""
    names = FIELDS[kind][1:]
    ns: dict[str, Any] = {"_problem": FieldProblem}
    src = [
        "def expand(a, seq):",
        f"    if len(a) != {len(names) + 1}:",
        f"        raise _problem(None, 'has ' + str(len(a)) + ' items, but {kind} has {len(names) + 1} fields')",
        "    " + ", ".join(f"v_{n}" for n in names) + ", = a[1:]",
    ]
    _fields, members = GROUPS[kind]
    items = []
    for k, (member, sources) in enumerate(members):
        vals = ", ".join(s if s.startswith('"') or s.isdigit() else f"v_{s}" for s in sources)
        items.append(f"['{member}', v_ts, v_tid, {vals}, seq + {k}]")
    src.append(f"    out = [{', '.join(items)}]")
    if kind == "node_edges":
        src += [
            "    if type(v_edges) is not list:",
            "        raise _problem('edges', _EDGES_MSG + _tn(v_edges))",
            f"    seq += {len(members)}",
            "    for slot, e in enumerate(v_edges):",
            "        if type(e) is not list or len(e) != 2:",
            "            raise _problem('edges', f'field \\'edges[{slot}]\\' must be [node or null, int]')",
            "        out.append(['edge_created', v_ts, v_tid, v_node, slot, e[0], e[1], seq + slot])",
        ]
        ns["_tn"] = _type_name
        ns["_EDGES_MSG"] = "field 'edges' must be a list of [node or null, int], got "
    src.append("    return out")
    exec(compile("\n".join(src) + "\n", f"<gradviz expand {kind}>", "exec"), ns)
    return ns["expand"]


#: group kind -> (line, seq) -> its events as format 2 arrays
EXPANDERS: dict[str, Callable[[list, int], list[list]]] = {k: _make_expander(k) for k in GROUPS}


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


class _HasGroups(Exception):
    pass


def _has_groups(s: Any, seq: int) -> Any:
    raise _HasGroups


def _make_typed(version: int) -> tuple[Callable[..., list[ev.Event]] | None, tuple[type[BaseException], ...]]:
    if _msgspec is None:
        return None, ()
    records = []
    convert: dict[type, Callable[..., Any]] = {}
    convert_in: dict[type, Callable[..., Any]] = {}  # format 3: appending, the seq after returned
    for t in ev.EVENT_TYPES:
        hints = typing.get_type_hints(t)
        names = ev.field_names(t)
        order = [*names[1:], *names[:1] * (version == 2)]  # the line's layout, after its kind
        rec = _msgspec.defstruct(
            f"_Line_{t.kind}", [(n, _line_type(hints[n])) for n in order],
            tag=t.kind, tag_field="kind", array_like=True, gc=False, forbid_unknown_fields=True,
        )  # fmt: skip
        records.append(rec)
        ns: dict[str, Any] = {"_cls": t, "_twin": _TWINS[t], "_new": object.__new__, "_stats": _typed_stats,
                              "_any": _typed_any}  # fmt: skip
        args = []
        for name, spec, _ in _SPECS[t]:
            c = _needs_care(spec)
            if name == "seq" and version != 2:
                args.append("seq")
            else:
                args.append(f"_stats(s.{name}, {name!r})" if c == "stats" else f"_any(s.{name})" if c else f"s.{name}")
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
                hints = typing.get_type_hints(ev.KINDS[member])
                for (name, _spec, _), src in zip(_SPECS[ev.KINDS[member]][3:], sources):
                    types_.setdefault(src, _line_type(hints[name]))
            types_["edges"] = tuple[tuple[int | None, int], ...]
            rec = _msgspec.defstruct(
                f"_Line_{kind}", [("ts", int), ("tid", int), *((n, types_[n]) for n in fields)],
                tag=kind, tag_field="kind", array_like=True, gc=False, forbid_unknown_fields=True,
            )  # fmt: skip
            records.append(rec)
            ns = {"_new": object.__new__}
            head = ["def convert(s, seq, append):"]
            care = {"stats": "_stats", "any": "_any"}
            src = _group_source(kind, head, lambda n: f"s.{n}", care, ns)
            ns["_stats"] = _typed_stats  # a group's one stats field is named stats
            ns["_any"] = _typed_any
            exec(compile("\n".join(src) + "\n", f"<gradviz typed{version} {kind}>", "exec"), ns)
            convert_in[rec] = ns["convert"]
            convert[rec] = _has_groups
    union = records[0]
    for rec in records[1:]:
        union = union | rec
    decoder = _msgspec.json.Decoder(list[union])  # type: ignore[valid-type]
    decode_records = decoder.decode

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


#: ``typed_events(json_array_bytes) -> events`` (format 2) where msgspec is installed, else None;
#: ``typed_events3(json_array_bytes, seq0)`` the same for format 3; and what they raise on a batch
#: they do not take.
typed_events, TYPED_ERRORS = _make_typed(2)
typed_events3, _ = _make_typed(3)
