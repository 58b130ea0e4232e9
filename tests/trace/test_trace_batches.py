"""The batched paths of the trace layer: the recorder's rows, batch encoding, chunked loading and
stats in the array's own dtype. Each is checked against the one-event-at-a-time path it replaces."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_trace_file import ANY_EVENT, as_loaded
from trace_builders import diamond, failing, hostile, reentrant, two_devices

import gradviz
import gradviz as torch
from gradviz.trace import TraceError, TraceWarning, codec, fastload, load, recorder
from gradviz.trace import events as ev
from gradviz.trace import file as trace_file
from gradviz.trace.check import invariants
from gradviz.trace.file import save
from gradviz.trace.recorder import stats_of

ROOT = Path(__file__).resolve().parents[2]


def _row(e: ev.Event) -> tuple:
    return codec.row_of(e)


def _fields(e: ev.Event) -> list:
    return [getattr(e, f) for f in ev.field_names(type(e))[1:]]


# --- encoding ----------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.lists(ANY_EVENT, max_size=6))
def test_a_batch_encodes_as_its_events_one_by_one(events):
    one_by_one = b"".join(codec.encode_line(e) + b",\n" for e in events)
    assert bytes(codec.encode_events(events)) == one_by_one
    seq0 = events[0].seq if events else 0
    renumbered = [codec.MAKERS[type(e)](seq0 + i, *_fields(e)) for i, e in enumerate(events)]
    assert bytes(codec.encode_rows([_row(e) for e in events])) == one_by_one  # format 3: no seq
    assert codec.events_from_rows([_row(e) for e in events], seq0) == renumbered


def test_batches_the_json_backend_refuses_go_event_by_event():
    s = ev.Stats(1.0, 1.0, 1.0, 0, 0)
    odd = [
        ev.ThreadStart(0, 0, 1, "bad\udce9name", None, "caller"),  # a lone surrogate
        ev.BufferAdd(1, 0, 1, 1, 2, 0, "set", None, (2,), "float32", "cpu", s, [{"seq": 1}, {"seq": 2}]),
        ev.CapturedGrad(2, 0, 1, 1, 2, 0, 0, s, [[math.nan, math.inf], {"}": "{"}]),
        ev.NodeEnd(3, 0, 1, 1, 2, "ok"),
    ]
    for k in range(len(odd)):
        batch = odd[k:]
        assert bytes(codec.encode_events(batch)) == b"".join(codec.encode_line(e) + b",\n" for e in batch)


def test_rows_write_nodes_as_ids_raws_as_their_json_and_refuse_the_rest():
    class N:
        def __init__(self, i):
            self._id = i

    rows = [("node_edges", 1, 1, 5, ((N(3), 0), (None, 1))), ("x", codec.Raw(math.nan, "NaN"))]
    assert bytes(codec.encode_rows(rows)) == b'["node_edges",1,1,5,[[3,0],[null,1]]],\n["x","NaN"],\n'
    with pytest.raises(TypeError, match="not JSON serializable"):  # msgspec's hook: AttributeError
        codec.encode_rows([("x", object())])


@pytest.mark.parametrize("make", [diamond, reentrant, failing, two_devices, hostile])
def test_saved_files_load_the_same_in_small_chunks(tmp_path, monkeypatch, make):
    events = make().events
    save(events, tmp_path / "t.json")
    _small_chunks(monkeypatch, 200)  # a few lines a chunk
    assert load(tmp_path / "t.json").events == as_loaded(events)
    assert load(tmp_path / "t.json", lazy=True).events == as_loaded(events)


@pytest.mark.parametrize("make", [diamond, reentrant, failing, two_devices, hostile])
def test_typed_batches_load_what_the_general_path_loads(tmp_path, monkeypatch, make):
    events = make().events
    save(events, tmp_path / "t.json")
    typed = load(tmp_path / "t.json").events
    _typed_off(monkeypatch)
    assert load(tmp_path / "t.json").events == typed == as_loaded(events)
    save(events, tmp_path / "t2.json", format_version=2)
    assert load(tmp_path / "t2.json").events == as_loaded(events)  # format 2, by the general path too


def _typed_off(monkeypatch) -> None:
    """msgspec's typed records off (formats 2 and 3), and the line scan that reads clean files
    with them (gradviz.trace.fastload): the general reader's Python decoders."""
    monkeypatch.setattr(codec, "typed_events", None)
    monkeypatch.setattr(codec, "typed_events3", None)
    monkeypatch.setattr(fastload, "available", lambda: False)


def _small_chunks(monkeypatch, size: int) -> None:
    """Both readers' chunks (the general reader's and fastload's) a few lines each."""
    monkeypatch.setattr(trace_file, "CHUNK_BYTES", size)
    monkeypatch.setattr(fastload, "CHUNK_BYTES", size)


def test_typed_batches_of_a_recording_with_nonfinite_stats_and_values(tmp_path, monkeypatch):
    a = torch.tensor([1.0, 0.0, -1.0], requires_grad=True)
    with gradviz.trace(tmp_path / "t.json", values=True):
        (a / 0.0).sum().backward()  # nan and +-inf gradients
    typed = load(tmp_path / "t.json").events
    _typed_off(monkeypatch)
    assert load(tmp_path / "t.json").events == typed
    grads = [e for e in typed if isinstance(e, ev.AccumulateGradUpdate)]
    assert grads and math.isinf(grads[0].after.max) and math.isinf(grads[0].values[0])


def test_a_bad_field_deep_in_a_typed_batch_is_named(tmp_path):
    events = diamond().events
    path = tmp_path / "t.json"
    save(events, path)
    lines = path.read_bytes().split(b"\n")
    k = next(i for i, e in enumerate(events) if isinstance(e, ev.NodeEnd) and i > 20)
    lines[k + 1] = lines[k + 1].replace(b',"ok"]', b',"ok",null]', 1)  # one item too many
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceError, match=rf"event {k} \(node_end\): has 7 items, but node_end has 6 fields"):
        load(path)


def test_a_bad_line_inside_a_chunk_is_named_as_line_by_line(tmp_path, monkeypatch):
    events = diamond().events
    path = tmp_path / "t.json"
    save(events, path)
    lines = path.read_bytes().split(b"\n")
    lines[10] = b'{"seq": 9, oops'
    path.write_bytes(b"\n".join(lines))
    messages = set()
    for chunk in (1 << 20, 300, 50):
        _small_chunks(monkeypatch, chunk)
        with pytest.raises(TraceError) as info:
            load(path)
        messages.add(str(info.value))
    (message,) = messages
    assert "event 9 (line 11): not valid JSON" in message


def test_a_file_cut_anywhere_loads_a_prefix_in_small_chunks(tmp_path, monkeypatch):
    events = diamond().events
    save(events, tmp_path / "t.json")
    data = (tmp_path / "t.json").read_bytes()
    header_end = data.index(b"\n")
    _small_chunks(monkeypatch, 150)
    path = tmp_path / "cut.json"
    for n in range(header_end + 1, len(data) + 1, 7):
        path.write_bytes(data[:n])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceWarning)
            t = load(path)
        assert t.events == events[: len(t.events)]
        assert len(t.events) >= data.count(b"\n", 0, n) - 2


# --- recording in batches ----------------------------------------------------------------------


def _program() -> None:
    a = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = torch.tensor([[0.5, 1.0, 2.0]] * 3, requires_grad=True)
    for _ in range(3):
        ((a @ w).tanh() * a).sum().backward()


def test_a_recording_spilled_every_few_rows_is_whole_and_sound(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder, "SPILL_ROWS", 5)
    path = tmp_path / "t.json"
    with gradviz.trace(path) as rec:
        _program()
    t = load(path)
    assert invariants(t) == []
    assert rec.count == len(t.events) and [e.seq for e in t.events] == list(range(len(t.events)))
    with gradviz.record() as mem:
        _program()
    assert [e.kind for e in mem.trace.events] == [e.kind for e in t.events]


@pytest.mark.parametrize("spill", [1, 2, 3, 7])
def test_a_graph_made_before_the_recording_survives_any_spill_size(tmp_path, monkeypatch, spill):
    leaves = [torch.tensor([1.0, 2.0], requires_grad=True) for _ in range(3)]
    y = leaves[0]
    for w in leaves[1:]:
        y = (y * w).tanh() + w  # announced in one walk at the backward, leaves on the way
    monkeypatch.setattr(recorder, "SPILL_ROWS", spill)
    with gradviz.trace(tmp_path / "t.json") as rec:
        y.sum().backward()
    t = load(tmp_path / "t.json")
    assert invariants(t) == [] and len(t.events) == rec.count
    assert len(t.tensors) == 3 and len(t.of_kind(ev.AccumulateGradUpdate)) == 3


def test_an_in_memory_snapshot_while_recording_is_a_prefix():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.record() as rec:
        (a * a).sum().backward()
        snap = rec.trace
        (a * 3).sum().backward()
    assert snap.truncated and rec.trace.events[: len(snap.events)] == snap.events


@pytest.mark.parametrize("blocked, backend", [(("orjson", "msgspec"), "json"), (("msgspec",), "orjson")])
def test_recording_to_a_file_with_each_json_backend(tmp_path, blocked, backend):
    script = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import gradviz, gradviz as torch\n"
        "from gradviz.trace import codec, load, recorder\n"
        "from gradviz.trace.check import invariants\n"
        f"assert codec.JSON_BACKEND == {backend!r}\n"
        "recorder.SPILL_ROWS = 4\n"
        "a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "with gradviz.trace(sys.argv[1]) as rec:\n"
        "    (a * a).exp().sum().backward()\n"
        "    (a / 0.0).sum().backward()  # non-finite stats\n"
        "t = load(sys.argv[1])\n"
        "assert invariants(t) == [] and len(t.events) == rec.count\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "t.json")], check=True, cwd=ROOT)


# --- stats ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("size", [1, 5, 17, 100_000])
def test_stats_in_the_native_dtype_match_float64(dtype, size):
    rng = np.random.default_rng(size)
    a = (rng.standard_normal(size) * 3).astype(dtype)
    ref = a.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = stats_of(a)
    assert s.min == ref.min() and s.max == ref.max() and (s.nan, s.inf) == (0, 0)
    assert s.norm == pytest.approx(math.sqrt(float(np.sum(ref * ref))), rel=1e-5)
    assert type(s.norm) is float and type(s.min) is float


def test_stats_whose_squares_overflow_the_dtype_are_still_finite():
    a = np.full(1000, 3e18, dtype=np.float32)  # squares fit float32; their sum does not
    s = stats_of(a)
    assert s.norm == pytest.approx(3e18 * math.sqrt(1000), rel=1e-6)
    h = np.full(100, 200.0, dtype=np.float16)
    assert stats_of(h).norm == pytest.approx(2000.0)


def test_stats_of_large_arrays_count_nan_and_inf():
    a = np.arange(100, dtype=np.float32)
    a[3] = np.nan
    a[7] = -np.inf
    s = stats_of(a)
    assert math.isnan(s.norm) and (s.nan, s.inf) == (1, 1) and s.min == -math.inf and s.max == 99.0


# --- format 3's group lines ------------------------------------------------------------------------


def _record_grouped(path):
    """A graph made before the recording (announced as node_edges lines), a chain of one-element
    gradients (gradient_in lines, stats as one number), a fan-in (not_ready: single lines)."""
    x = torch.tensor([1.5], requires_grad=True)
    w = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    y = x
    for _ in range(5):
        y = y * 1.5 + 0.25
    z = ((w @ torch.tensor([1.0, 2.0])).tanh() * y).sum() + y.sum()  # y feeds two nodes
    with gradviz.trace(path) as rec:
        z.backward()
    return rec


def _line_kinds(path) -> list[str]:
    return [json.loads(ln.rstrip(b","))[0] for ln in path.read_bytes().split(b"\n")[1:-2]]


def test_group_lines_load_the_same_events_by_every_path(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    rec = _record_grouped(path)
    kinds = _line_kinds(path)
    assert {"node_edges", "gradient_in"} <= set(kinds) and "not_ready_park" in kinds
    assert len(kinds) < rec.count  # fewer lines than events
    typed = load(path)
    assert invariants(typed) == [] and len(typed.events) == rec.count
    assert [e.seq for e in typed.events] == list(range(rec.count))
    one = [e for e in typed.events if isinstance(e, ev.BufferAdd) and e.shape == (1,)]
    assert one and all(e.stats == ev.Stats(abs(e.stats.max), e.stats.max, e.stats.max, 0, 0) for e in one)
    _small_chunks(monkeypatch, 100)
    assert load(path).events == typed.events  # small chunks: groups across chunk boundaries
    lazy = load(path, lazy=True)  # counted, then made chunk by chunk, in the same small chunks
    assert lazy.kinds == typed.kinds and list(lazy.kinds) == list(typed.kinds) and len(lazy) == len(typed)
    assert lazy.nodes == typed.nodes and list(lazy.iter_events(5, 40)) == typed.events[5:40]
    assert lazy.events == typed.events
    _typed_off(monkeypatch)
    assert load(path).events == typed.events  # the general path expands groups itself
    save(typed.events, tmp_path / "plain.json")  # one event a line
    assert load(tmp_path / "plain.json").events == typed.events


def test_in_memory_rows_make_the_events_the_file_holds(tmp_path):
    path = tmp_path / "t.json"
    _record_grouped(path)
    x = torch.tensor([1.5], requires_grad=True)
    y = x
    for _ in range(5):
        y = y * 1.5 + 0.25
    with gradviz.record() as mem:
        y.sum().backward(retain_graph=True)  # the chain is backed through again below
    with gradviz.trace(tmp_path / "u.json") as rec:
        (y * 1.0).sum().backward()
    assert invariants(mem.trace) == [] and invariants(load(tmp_path / "u.json")) == []
    assert mem.count == len(mem.trace.events) and rec.count == len(load(tmp_path / "u.json").events)


def test_a_bad_field_in_a_group_line_is_named_as_its_event(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    _record_grouped(path)
    events = load(path).events
    lines = path.read_bytes().split(b"\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith(b'["gradient_in",'))
    a = json.loads(lines[k].rstrip(b","))
    a[codec.FIELDS["gradient_in"].index("size")] = "1"
    lines[k] = json.dumps(a).encode() + b","
    path.write_bytes(b"\n".join(lines))
    first = sum(codec.row_events(json.loads(ln.rstrip(b","))) for ln in lines[1:k])
    assert isinstance(events[first + 2], ev.QueuePush)
    for off in (False, True):
        if off:
            _typed_off(monkeypatch)
        with pytest.raises(TraceError, match=rf"event {first + 2} \(queue_push\): field 'size' must be int, got str"):
            load(path)
    a[codec.FIELDS["gradient_in"].index("size")] = 1
    lines[k] = json.dumps(a[:-1]).encode() + b","  # one item short
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceError, match=rf"event {first} \(gradient_in\): has 17 items, but gradient_in has 18"):
        load(path)


def test_node_edges_with_bad_edges_are_named(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    _record_grouped(path)
    lines = path.read_bytes().split(b"\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith(b'["node_edges",') and ln.endswith(b"]],"))
    a = json.loads(lines[k].rstrip(b","))
    a[-1] = [[1, 0, 5]]
    lines[k] = json.dumps(a).encode() + b","
    path.write_bytes(b"\n".join(lines))
    _typed_off(monkeypatch)
    with pytest.raises(TraceError, match=r"\(node_edges\): field 'edges\[0\]' must be \[node or null, int\]"):
        load(path)


def test_a_header_declaring_a_group_in_another_order_is_read_by_name(tmp_path):
    path = tmp_path / "t.json"
    _record_grouped(path)
    events = load(path).events
    data = path.read_bytes()
    head, rest = data.split(b"\n", 1)
    names = list(codec.FIELDS["gradient_in"])
    swapped = names[:3] + names[3:][::-1]
    head = head.replace(
        json.dumps(names, separators=(",", ":")).encode(), json.dumps(swapped, separators=(",", ":")).encode()
    )
    out = [head]
    for ln in rest.split(b"\n"):
        if ln.startswith(b'["gradient_in",'):
            a = json.loads(ln.rstrip(b","))
            ln = json.dumps(a[:3] + a[3:][::-1], separators=(",", ":")).encode() + (b"," if ln.endswith(b",") else b"")
        out.append(ln)
    path.write_bytes(b"\n".join(out))
    assert load(path).events == events


def test_stats_of_one_element_are_one_number_in_the_file():
    row = recorder._stats_row(np.array([-2.5], dtype=np.float32))
    assert row == -2.5 and stats_of(np.array([-2.5])) == ev.Stats(2.5, -2.5, -2.5, 0, 0)
    e = ev.BufferAdd(0, 0, 1, 1, 2, 0, "set", None, (1,), "float32", "cpu", ev.Stats(2.5, -2.5, -2.5, 0, 0))
    assert codec.decode_line(json.loads(codec.encode_line(e)), 0) == e
    assert codec.decode_line(json.loads(b'["buffer_add",0,1,1,2,0,"set",null,[1],"float32","cpu",-2.5,null]'), 0) == e
    assert codec.events_from_rows(
        [("buffer_add", 0, 1, 1, 2, 0, "set", None, (1,), "float32", "cpu", -2.5, None)], 0
    ) == [e]
