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

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from gradviz.trace import events as ev

__all__ = [
    "JSON_BACKEND", "FieldProblem", "dumps", "loads", "encode", "decode", "field_specs", "Spec", "FIELDS",
    "encode_line", "encode_events", "encode_rows", "events_from_rows", "decode_array", "Raw", "GROUPS",
    "encode_array", "encode_array_v2", "decode_line", "row_events", "EXPANDERS", "FIELDS_V2",
]

# The groundwork (JSON backends, type specs, conversion, makers) is in codec_base.
from gradviz.trace.codec_base import (  # noqa: E402, F401 - codec's names
    _DEFAULTS,
    _JSON_TYPE_NAMES,
    _MS_REFUSED,
    _NONFINITE_OUT,
    _SPECS,
    _STATS_FIELDS,
    _TWINS,
    FIELDS_V2,
    JSON_BACKEND,
    MAKERS,
    STATS_FIELDS,
    FieldProblem,
    Raw,
    Spec,
    _build_lines,
    _convert,
    _decode_any,
    _describe_problem,
    _dumps_escaped,
    _dumps_stdlib,
    _encode_any,
    _encode_stats,
    _escaping,
    _float_out,
    _hook,
    _json,
    _lines,
    _make_maker,
    _make_stats,
    _ms_hook,
    _msgspec,
    _orjson,
    _spec_of,
    _stdlib,
    _twin,
    _type_name,
    dumps,
    field_specs,
    loads,
    make_stats,
    stats_json,
)

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
}
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
        # an int a float cannot hold (JSON allows any number of digits) goes the general way
        return f"(type({var}) is float or (type({var}) is int and -_FMAX < {var} < _FMAX))", f"float({var})"
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
    ):
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
        "_stats_dec": _stats_dec, "_FMAX": 2**1023, "_only_int": frozenset([int]), "_only_str": frozenset([str]),
    }


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
                          "_value": _row_value}
    args = ["seq"]
    for n, c in zip(names[1:], care[1:]):
        args.append(f"_stats(v_{n})" if c == "stats" else f"_value(v_{n})" if c else f"v_{n}")
    src = ["def make(seq, r, append):", "    _k, " + ", ".join(f"v_{n}" for n in names[1:]) + ", = r"]
    src += _build_lines(cls, args) + ["    append(o)", "    return seq + 1"]
    exec(compile("\n".join(src) + "\n", f"<gradviz row {cls.kind}>", "exec"), ns)
    return ns["make"]


def _group_source(kind: str, head: list[str], var: Callable[[str], str], care_fn: dict[str, str],
                  ns: dict[str, Any], keep: frozenset[str] | None = None) -> list[str]:
    """The body of a group's maker: each member built and appended (``append``), seq advanced.
    ``keep``: only the members of these kinds are built (the others still count in seq)."""
    _fields, members = GROUPS[kind]
    src = list(head)
    for k, (member, sources) in enumerate(members):
        if keep is not None and member not in keep:
            continue
        cls = ev.KINDS[member]
        ns[f"_cls{k}"] = cls
        ns[f"_twin{k}"] = _TWINS[cls]
        args = [f"seq + {k}", *_member_args(member, sources, var, care_fn)]
        src += [line.replace("_twin", f"_twin{k}").replace("_cls", f"_cls{k}") for line in _build_lines(cls, args)]
        src.append("    append(o)")
    if kind == "node_edges" and keep is not None and "edge_created" not in keep:
        src.append(f"    return seq + {len(members)} + len({var('edges')})")
    elif kind == "node_edges":  # then an edge_created for each of its edges
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


# Typed batch decoding (msgspec) is in codec_typed, which imports from this module.
from gradviz.trace.codec_typed import TYPED_ERRORS, typed_events, typed_events3  # noqa: E402, F401
