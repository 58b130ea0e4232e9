"""The file format: codec round trips, the streamed layout, loading errors, the committed schema."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_builders import diamond, failing, hostile, reentrant, two_devices

from gradviz.trace import TraceError, TraceWarning, codec, load
from gradviz.trace import events as ev
from gradviz.trace.file import FOOTER, HEADER, TraceWriter, save
from gradviz.trace.schema import json_schema, schema_text

ROOT = Path(__file__).resolve().parents[2]


# --- codec -----------------------------------------------------------------------------------


def _strategy(spec: codec.Spec) -> st.SearchStrategy:
    k = spec.kind
    ints = st.integers(-(2**63), 2**64 - 1)
    if k == "int":
        return ints
    if k == "str":
        return st.text(max_size=12)
    if k == "bool":
        return st.booleans()
    if k == "float":
        return st.floats(allow_nan=False) | st.sampled_from([math.inf, -math.inf])
    if k == "any":
        return st.none() | st.lists(st.floats(allow_nan=False), max_size=4)
    if k == "stats":
        f = _strategy(codec.Spec("float"))
        return st.builds(ev.Stats, f, f, f, ints, ints)
    if k == "optional":
        return st.none() | _strategy(spec.items[0])
    if k == "array":
        return st.lists(_strategy(spec.items[0]), max_size=4).map(tuple)
    if k == "tuple":
        return st.tuples(*(_strategy(s) for s in spec.items))
    raise AssertionError(k)


def _event_strategy(cls: type[ev.Event]) -> st.SearchStrategy:
    return st.builds(cls, *(_strategy(spec) for _, spec, _ in codec.field_specs(cls)))


ANY_EVENT = st.one_of(*(_event_strategy(t) for t in ev.EVENT_TYPES))


@settings(max_examples=400, deadline=None)
@given(ANY_EVENT)
def test_every_event_survives_encode_dumps_loads_decode(e):
    line = codec.encode_line(e)
    assert b"\n" not in line
    assert codec.decode_line(codec.loads(line), e.seq) == e
    assert codec.decode_line(json.loads(line), e.seq) == e  # the stdlib reads what we write
    assert codec.decode(list(codec.encode_array_v2(e))) == e  # format 2's arrays: still read
    d = codec.encode(e)
    assert list(d)[:4] == ["seq", "kind", "ts", "tid"]


def _named(a: list) -> dict:
    """A format 3 event line as a dict by field name."""
    return dict(zip(codec.FIELDS[a[0]], a))


def test_nonfinite_floats_are_strings_and_come_back():
    s = ev.Stats(math.nan, -math.inf, math.inf, 1, 2)
    e = ev.CapturedGrad(0, 0, 1, task=1, node=2, input_nr=0, index=0, stats=s, values=[math.nan, 1.5])
    a = json.loads(codec.encode_line(e))  # strict JSON: no NaN literals
    assert _named(a)["stats"] == ["NaN", "-Infinity", "Infinity", 1, 2]
    assert _named(a)["values"] == ["NaN", 1.5]
    back = codec.decode_line(a, 0)
    assert math.isnan(back.stats.norm) and back.stats.min == -math.inf and math.isnan(back.values[0])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"size": "3"}, "field 'size' must be int, got str"),
        ({"size": True}, "field 'size' must be int, got bool"),
        ({"size": 3.0}, "field 'size' must be int, got float"),
        ({"priority": [2, 0]}, "field 'priority' must be [int, int, int] (3 items), got 2 items"),
        ({"priority": [2, "0", 1]}, "field 'priority[1]' must be int, got str"),
        ({"task": []}, "field 'task' must be int or null, got list"),
        ({"kind": "queue_shove"}, "field 'kind' is 'queue_shove', not a known event kind"),
        ({"kind": 7}, "field 'kind' must be str, got int"),
    ],
)
def test_decode_names_the_field(change, message):
    d = codec.encode(ev.QueuePush(0, 0, 1, 1, "cpu", 1, 2, "node", (2, 0, 5), 1))
    d.update(change)
    with pytest.raises(codec.FieldProblem) as info:
        codec.decode(d)
    assert str(info.value) == message


def test_decode_missing_field_and_nested_stats():
    d = codec.encode(ev.QueuePush(0, 0, 1, 1, "cpu", 1, 2, "node", (2, 0, 5), 1))
    del d["what"]
    with pytest.raises(codec.FieldProblem, match="field 'what' is missing"):
        codec.decode(d)
    b = codec.encode(ev.BufferAdd(0, 0, 1, 1, 2, 0, "set", None, (2,), "float32", "cpu", ev.Stats(1, 1, 1, 0, 0)))
    b["stats"]["nan"] = "0"
    with pytest.raises(codec.FieldProblem, match=r"field 'stats.nan' must be int, got str"):
        codec.decode(b)
    b = codec.encode(ev.TaskEnd(0, 0, 1, 1, "ok"))
    del b["error"]  # a field with a default may be left out
    assert codec.decode(b) == ev.TaskEnd(0, 0, 1, 1, "ok", None)


@pytest.mark.parametrize("blocked", [("orjson", "msgspec"), ("msgspec",)])
def test_fallback_backends_write_and_read_the_same_file(tmp_path, blocked):
    """Without the fast JSON libraries (blocked in a subprocess) the same trace is written byte
    for byte."""
    events = diamond().events
    save(events, tmp_path / "fast.json")
    backend = "json" if "orjson" in blocked else "orjson"
    script = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from gradviz.trace import codec, load\n"
        "from gradviz.trace.file import save\n"
        "from trace_builders import diamond\n"
        f"assert codec.JSON_BACKEND == {backend!r}\n"
        "save(diamond().events, sys.argv[1])\n"
        "assert load(sys.argv[1]).events == diamond().events\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "json.json"), str(ROOT / "tests")], check=True, cwd=ROOT
    )
    assert (tmp_path / "json.json").read_bytes() == (tmp_path / "fast.json").read_bytes()


# --- the file ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [diamond, reentrant, failing, two_devices, hostile])
def test_saved_file_is_valid_json_one_event_per_line_and_loads_equal(tmp_path, make):
    events = make().events
    path = tmp_path / "t.json"
    save(events, path)
    data = path.read_bytes()
    doc = json.loads(data)
    assert doc["format"] == "gradviz-trace" and doc["format_version"] == ev.FORMAT_VERSION
    assert len(doc["events"]) == len(events)
    lines = data.split(b"\n")
    assert lines[0] + b"\n" == HEADER and lines[-2] + b"\n" == FOOTER
    assert len(lines) == len(events) + 3  # header, events, footer, "" after the last newline
    t = load(path)
    assert t.events == as_loaded(events) and not t.truncated  # hostile's "\r" comes back as "\x0d"


def as_loaded(events: list) -> list:
    """What load gives for ``events``: each string with its control characters escaped."""
    from gradviz.trace.text import neutralise_events

    out = list(events)
    neutralise_events(out)
    return out


def test_writer_streams_and_a_cut_file_recovers_every_flushed_event(tmp_path):
    events = diamond().events
    path = tmp_path / "t.json"
    w = TraceWriter(path, batch=4)
    for e in events[:-1]:
        w.write(e)
    w.flush()
    with pytest.warns(TraceWarning, match=rf"recovered {len(events) - 1} events"):
        cut = load(path)  # what a SIGKILL leaves: everything flushed, no trace_end
    assert cut.truncated and cut.events == events[:-1]
    w.close(events[-1])
    assert load(path).events == events


def test_load_of_a_pretty_printed_trace(tmp_path):
    events = diamond().events
    save(events, tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_bytes())
    (tmp_path / "pretty.json").write_text(json.dumps(doc, indent=2))
    assert load(tmp_path / "pretty.json").events == events


def _bad_file(tmp_path, edit, format_version: int = ev.FORMAT_VERSION) -> str:
    events = diamond().events
    path = tmp_path / "trace.json"
    save(events, path, format_version=format_version)
    lines = path.read_bytes().split(b"\n")
    edit(lines)
    path.write_bytes(b"\n".join(lines))
    return str(path)


def _set(index: int, field: str, value, fields=codec.FIELDS):
    def edit(lines):
        a = json.loads(lines[index + 1].rstrip(b","))
        a[fields[a[0]].index(field)] = value
        lines[index + 1] = json.dumps(a).encode() + b","

    return edit


@pytest.mark.parametrize(
    "edit, index, message",
    [
        (_set(5, "seq", 6, codec.FIELDS_V2), 5, "event 5 ({kind}): field 'seq' must be 5 (events are numbered "
                                                "from 0 in file order), got 6"),
        (lambda lines: lines.pop(8), 8, "event 7 ({kind}): field 'seq' must be 7"),
        (_set(17, "task", "1", codec.FIELDS_V2), 17, "event 17 ({kind}): field 'task' must be int, got str"),
    ],
)
def test_format_2_files_are_checked_for_their_seqs(tmp_path, edit, index, message):
    events = diamond().events
    path = _bad_file(tmp_path, edit, format_version=2)
    with pytest.raises(TraceError, match=re.escape(message.format(kind=events[index].kind))):
        load(path)


def test_format_3_names_a_dropped_event_at_trace_end(tmp_path):
    """Format 3 numbers events by position: a line gone is missed by trace_end's count."""
    events = diamond().events
    path = _bad_file(tmp_path, lambda lines: lines.pop(8))
    n = len(events) - 2
    with pytest.raises(TraceError, match=rf"event {n} \(trace_end\): field 'events' is {n + 1} but {n} events"):
        load(path)


@pytest.mark.parametrize(
    "edit, index, message",
    [
        (_set(17, "task", "1"), 17, "event 17 ({kind}): field 'task' must be int, got str"),
        (lambda lines: lines.__setitem__(9, b'[8, oops'), 0, "event 8 (line 10): not valid JSON"),
        (lambda lines: lines.__setitem__(0, b"{}"), 0, "not a gradviz trace"),
        (_set(0, "format_version", 99), 0, "event 0 (trace_begin): field 'format_version' is 99: written by a "
                                           "newer gradviz"),
    ],
)
def test_malformed_files_raise_one_line_trace_errors(tmp_path, edit, index, message):
    events = diamond().events
    path = _bad_file(tmp_path, edit)
    expected = message.format(kind=events[index].kind)
    with pytest.raises(TraceError) as info:
        load(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: ")
    assert expected in text
    assert isinstance(info.value, ValueError)


def test_the_issue_example_message(tmp_path):
    b = diamond().events
    k = next(i for i, e in enumerate(b) if isinstance(e, ev.QueuePush))
    path = _bad_file(tmp_path, _set(k, "size", "1"))
    with pytest.raises(TraceError, match=rf"^{path}: event {k} \(queue_push\): field 'size' must be int, got str$"):
        load(path)


@pytest.mark.parametrize("field", ["before", "after"])
def test_a_bad_stats_field_is_named_by_its_own_name(tmp_path, field):
    # Stats-typed fields other than 'stats' once reported 'stats.norm' (found by the fuzz test).
    b = diamond().events
    k = next(i for i, e in enumerate(b) if isinstance(e, ev.AccumulateGradUpdate))
    path = _bad_file(tmp_path, _set(k, field, {}))
    with pytest.raises(TraceError, match=rf"event {k} \(accumulate_grad\): field '{field}.norm' is missing$"):
        load(path)
    path = _bad_file(tmp_path, _set(k, field, [1.0, 1.0, 1.0, 0]))
    with pytest.raises(TraceError, match=rf"event {k} \(accumulate_grad\): field '{field}' must be a stats array"):
        load(path)
    path = _bad_file(tmp_path, _set(k, field, [1.0, 1.0, 1.0, 0, "0"]))
    with pytest.raises(TraceError, match=rf"event {k} \(accumulate_grad\): field '{field}.inf' must be int, got str$"):
        load(path)


def test_empty_and_non_json_files(tmp_path):
    (tmp_path / "empty.json").write_bytes(b"")
    with pytest.raises(TraceError, match="empty file"):
        load(tmp_path / "empty.json")
    (tmp_path / "junk.json").write_bytes(b"\x00\xff garbage")
    with pytest.raises(TraceError, match=r"not a gradviz trace \(it starts with byte 0x00, not a JSON object\)"):
        load(tmp_path / "junk.json")
    (tmp_path / "junk2.json").write_bytes(b"{ garbage")
    with pytest.raises(TraceError, match="not valid JSON"):
        load(tmp_path / "junk2.json")


# --- the schema -----------------------------------------------------------------------------------


def test_committed_schema_is_up_to_date():
    committed = (ROOT / "docs" / "trace-schema.json").read_text()
    assert committed == schema_text(), "regenerate: python -m gradviz.trace.schema > docs/trace-schema.json"


def test_schema_accepts_written_traces_and_rejects_a_bad_field(tmp_path):
    import jsonschema  # a test dependency: missing, this fails rather than skips

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for make in (diamond, reentrant, failing, two_devices, hostile):
        save(make().events, tmp_path / "t.json")
        jsonschema.validate(json.loads((tmp_path / "t.json").read_bytes()), schema)
    doc = json.loads((tmp_path / "t.json").read_bytes())
    doc["events"][3][3] = "1"  # tid
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_every_event_kind_is_in_the_schema():
    defs = json_schema()["$defs"]
    for t in ev.EVENT_TYPES:
        items = defs[t.kind]["prefixItems"]
        assert [i["title"] for i in items] == ["kind", "ts", "tid", *ev.field_names(t)[3:]]
        assert list(codec.FIELDS[t.kind]) == [i["title"] for i in items]


# --- format 1 ---------------------------------------------------------------------------------


def _save_v1(events, path) -> None:
    """A file as gradviz wrote them before format 2: one object per event."""
    lines = [json.dumps(codec.encode(e), separators=(",", ":")).encode() for e in events]
    path.write_bytes(b'{"format":"gradviz-trace","format_version":1,"events":[\n' + b",\n".join(lines) + b"\n]}\n")


@pytest.mark.parametrize("make", [diamond, reentrant, failing, two_devices, hostile])
def test_format_1_files_still_load(tmp_path, make):
    events = make().events
    _save_v1(events, tmp_path / "v1.json")
    assert load(tmp_path / "v1.json").events == as_loaded(events)
    data = (tmp_path / "v1.json").read_bytes()
    (tmp_path / "cut.json").write_bytes(data[: len(data) // 2])
    with pytest.warns(TraceWarning):
        cut = load(tmp_path / "cut.json")
    assert cut.events == as_loaded(events)[: len(cut.events)] and len(cut.events) > 2


def test_format_1_errors_name_the_field(tmp_path):
    events = diamond().events
    _save_v1(events, tmp_path / "v1.json")
    lines = (tmp_path / "v1.json").read_bytes().split(b"\n")
    d = json.loads(lines[18].rstrip(b","))
    d["task"] = "1"
    lines[18] = json.dumps(d).encode() + b","
    (tmp_path / "v1.json").write_bytes(b"\n".join(lines))
    with pytest.raises(TraceError, match=rf"event 17 \({events[17].kind}\): field 'task' must be int, got str"):
        load(tmp_path / "v1.json")


def test_a_header_declaring_other_field_orders_is_read_by_name(tmp_path):
    events = diamond().events
    save(events, tmp_path / "t.json")
    lines = (tmp_path / "t.json").read_bytes().split(b"\n")
    header = json.loads(lines[0] + b"]}")
    names = list(codec.FIELDS["queue_push"])
    names[-2], names[-3] = names[-3], names[-2]  # size before priority
    header["fields"]["queue_push"] = names
    for k, line in enumerate(lines[1:-2], 1):
        a = json.loads(line.rstrip(b","))
        if a[0] == "queue_push":
            a[-2], a[-3] = a[-3], a[-2]
            lines[k] = json.dumps(a).encode() + (b"," if line.endswith(b",") else b"")
    lines[0] = json.dumps(header, separators=(",", ":")).encode()[:-2]
    (tmp_path / "t.json").write_bytes(b"\n".join(lines))
    assert load(tmp_path / "t.json").events == events


def _record_small(path) -> int:
    import gradviz

    x = gradviz.ones(3, requires_grad=True)
    with gradviz.trace(path) as rec:
        (x * x).sum().backward()
    return rec.count


def test_recording_again_to_a_path_replaces_the_old_trace_with_a_new_file(tmp_path: Path) -> None:
    import os

    p = tmp_path / "t.json"
    _record_small(p)
    first = os.stat(p).st_ino
    keep = open(p, "rb")  # a reader of the old trace (a replay still open) keeps what it had
    try:
        old = keep.read()
        n = _record_small(p)
        assert len(load(p).events) == n
        assert os.stat(p).st_ino != first  # a new file, not the old one truncated
        keep.seek(0)
        assert keep.read() == old
    finally:
        keep.close()


def test_recording_through_a_symlink_and_into_a_fifo(tmp_path: Path) -> None:
    import os
    import stat
    import threading

    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    n = _record_small(link)
    assert link.is_symlink() and len(load(target).events) == n

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    n = _record_small(fifo)
    reader.join(timeout=10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # written to, not replaced by a file
    assert got
    (tmp_path / "copy.json").write_bytes(got[0])
    assert len(load(tmp_path / "copy.json").events) == n
