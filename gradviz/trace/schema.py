"""The JSON Schema of a trace file, generated from the event definitions.

docs/trace-schema.json is this function's output, committed; a test keeps it up to date.
Regenerate with ``python -m gradviz.trace.schema > docs/trace-schema.json``.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

from gradviz.trace import codec
from gradviz.trace import events as ev

_NONFINITE = {"enum": ["NaN", "Infinity", "-Infinity"]}


def _schema(spec: codec.Spec) -> dict[str, Any]:
    k = spec.kind
    if k == "int":
        return {"type": "integer"}
    if k == "str":
        return {"type": "string"}
    if k == "bool":
        return {"type": "boolean"}
    if k == "float":
        return {"anyOf": [{"type": "number"}, _NONFINITE]}
    if k == "any":
        return {}
    if k == "stats":
        return {"$ref": "#/$defs/stats"}
    if k == "optional":
        inner = _schema(spec.items[0])
        if set(inner) == {"type"}:
            return {"type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}
    if k == "array":
        return {"type": "array", "items": _schema(spec.items[0])}
    if k == "tuple":
        n = len(spec.items)
        items = [_schema(s) for s in spec.items]
        return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}
    raise TypeError(f"no schema for {k}")  # pragma: no cover


_FIELD_COMMENT = re.compile(r"^\s+(\w+): [^#\n]+#\s*(.+)$", re.M)


def _field_docs(cls: type) -> dict[str, str]:
    """The trailing comments of the field lines in events.py: the fields' documentation."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ == ev.__name__:
            docs.update(_FIELD_COMMENT.findall(inspect.getsource(klass)))
    return docs


def _described(schema: dict[str, Any], doc: str | None) -> dict[str, Any]:
    return {"description": doc, **schema} if doc else schema


def _item(name: str, schema: dict[str, Any], doc: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"title": name}
    if doc:
        out["description"] = doc
    out.update(schema)
    return out


def _event_schema(cls: type[ev.Event]) -> dict[str, Any]:
    """An event is an array ``[kind, ts, tid, *fields]``: prefixItems, one per field, titled."""
    docs = _field_docs(cls)
    specs = codec.field_specs(cls)
    items = [_item("kind", {"const": cls.kind}, None)]
    for name, spec, _ in specs[1:]:
        items.append(_item(name, _schema(spec), docs.get(name)))
    doc = (cls.__doc__ or "").strip()
    out: dict[str, Any] = {"type": "array"}
    if doc and not doc.startswith(cls.__name__ + "("):  # dataclasses invent a docstring
        out["description"] = " ".join(doc.split())
    out.update({"prefixItems": items, "minItems": len(items), "maxItems": len(items), "items": False})
    return out


_EDGES = {
    "type": "array",
    "items": {"type": "array", "prefixItems": [{"type": ["integer", "null"]}, {"type": "integer"}],
              "minItems": 2, "maxItems": 2},
}


def _group_schema(kind: str) -> dict[str, Any]:
    """A group line: ``[kind, ts, tid, *fields]``, each field typed as the member event's field
    it feeds (``codec.GROUPS``)."""
    fields, members = codec.GROUPS[kind]
    typed: dict[str, tuple[dict[str, Any], str | None]] = {"edges": (_EDGES, "[node or null, input_nr] per slot")}
    for member, sources in members:
        cls = ev.KINDS[member]
        docs = _field_docs(cls)
        for (name, spec, _), src in zip(codec.field_specs(cls)[3:], sources):  # type: ignore[arg-type]
            typed.setdefault(src, (_schema(spec), docs.get(name)))
    items = [_item("kind", {"const": kind}, None), _item("ts", {"type": "integer"}, None),
             _item("tid", {"type": "integer"}, None)]
    items += [_item(f, typed[f][0], typed[f][1]) for f in fields]
    names = [m for m, _ in members] + ["edge_created (one per edge)"] * (kind == "node_edges")
    return {
        "type": "array",
        "description": "A group line: the events " + ", ".join(names) + ", in this order, sharing ts and tid.",
        "prefixItems": items, "minItems": len(items), "maxItems": len(items), "items": False,
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a complete trace file of format ``FORMAT_VERSION``."""
    stats_docs = _field_docs(ev.Stats)
    stats_items = [_item(name, _schema(spec), stats_docs.get(name)) for name, spec, _ in codec.field_specs(ev.Stats)]  # type: ignore[arg-type]
    defs: dict[str, Any] = {
        "stats": {
            "anyOf": [
                {
                    "type": "array",
                    "description": "A summary of a tensor's values, [norm, min, max, nan, inf]; non-finite floats "
                    "are strings.",
                    "prefixItems": stats_items,
                    "minItems": len(stats_items),
                    "maxItems": len(stats_items),
                    "items": False,
                },
                {"type": "number", "description": "One finite element x: [abs(x), x, x, 0, 0]."},
            ]
        }
    }
    for t in ev.EVENT_TYPES:
        defs[t.kind] = _event_schema(t)
    for k in codec.GROUPS:
        defs[k] = _group_schema(k)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://gradviz.invalid/trace-schema-v{ev.FORMAT_VERSION}.json",
        "title": f"gradviz trace, format {ev.FORMAT_VERSION}",
        "description": (
            "A recording of gradviz's autograd engine: one object whose 'events' array holds the "
            "events in seq order (an event's seq is its position, from 0), each an array [kind, ts, "
            "tid, *fields] laid out as 'fields' declares, or a group line standing for several "
            "adjacent events ('groups'). Generated from gradviz.trace.events; see docs/trace-format.md."
        ),
        "type": "object",
        "properties": {
            "format": {"const": ev.FORMAT_NAME},
            "format_version": {"const": ev.FORMAT_VERSION},
            "fields": {
                "description": "Each kind's array layout: its field names, in order.",
                "type": "object",
                "properties": {k: {"const": list(v)} for k, v in codec.FIELDS.items()},
            },
            "groups": {
                "description": "Each group line's events, in order.",
                "type": "object",
                "properties": {k: {"const": v} for k, v in _group_members().items()},
            },
            "stats": {"description": "The stats array's layout.", "const": list(codec.STATS_FIELDS)},
            "events": {
                "type": "array",
                "items": {
                    "oneOf": [{"$ref": f"#/$defs/{k}"} for k in (*(t.kind for t in ev.EVENT_TYPES), *codec.GROUPS)],
                },
            },
        },
        "required": ["format", "format_version", "fields", "events"],
        "$defs": defs,
    }


def _group_members() -> dict[str, list[str]]:
    from gradviz.trace.file import GROUP_MEMBERS

    return GROUP_MEMBERS


def schema_text() -> str:
    """The schema as committed in docs/trace-schema.json."""
    return json.dumps(json_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
