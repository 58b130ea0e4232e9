"""`gradviz export`: the Chrome trace event format, checked against the trace it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_builders import diamond, failing, hostile, reentrant, two_devices

from gradviz.cli import main
from gradviz.replay.export import chrome_trace, write_chrome_trace
from gradviz.trace import events as ev
from gradviz.trace.file import save
from gradviz.trace.model import Trace

PHASES = {"M", "X", "C", "s", "f", "b", "e", "i"}


def check_format(doc: dict, trace: Trace) -> None:
    """What the trace event format requires, and what we promise on top of it."""
    evs = doc["traceEvents"]
    assert isinstance(evs, list) and evs
    ns_times = {e.ts for e in trace.events}
    for e in evs:
        assert e["ph"] in PHASES, e
        assert isinstance(e["pid"], int) and isinstance(e.get("tid", 0), int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
            assert isinstance(e["name"], str)
        if e["ph"] in ("X", "C", "b", "e", "i"):
            # Microseconds: every timestamp is one of the trace's nanosecond times / 1000.
            assert round(e["ts"] * 1000) in ns_times, e
        if e["ph"] == "X":
            assert e["dur"] >= 0
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
    # Flows: every start has exactly one finish with the same id, each inside a node span on its thread.
    spans = [e for e in evs if e["ph"] == "X"]
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    assert len(starts) == sum(1 for e in evs if e["ph"] == "s")
    for fid, s in starts.items():
        f = ends[fid]
        assert f["bp"] == "e" and f["cat"] == s["cat"] and f["name"] == s["name"]
        for point in (s, f):
            assert any(x["tid"] == point["tid"] and x["ts"] <= point["ts"] <= x["ts"] + x["dur"]
                       for x in spans), point
        assert s["ts"] <= f["ts"]
    # Thread names as metadata, one per thread of the trace.
    named = {e["tid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(named) == set(trace.threads)
    # A depth counter per ready queue, an outstanding counter per graph task.
    counters = {e["name"] for e in evs if e["ph"] == "C"}
    for q in trace.queues.values():
        assert f"queue {q.name} depth" in counters
    for t in trace.tasks:
        assert f"task {t} outstanding" in counters


def spans_from_events(trace: Trace) -> list[tuple[int, int, int, float, float]]:
    begins: dict[tuple[int, int, int], int] = {}
    out = []
    for e in trace.events:
        if isinstance(e, ev.NodeBegin):
            begins[(e.tid, e.task, e.node)] = e.ts
        elif isinstance(e, ev.NodeEnd):
            b = begins.pop((e.tid, e.task, e.node))
            out.append((e.tid, e.task, e.node, b / 1000, (e.ts - b) / 1000))
    return sorted(out)


@pytest.mark.parametrize("build", [two_devices, diamond, reentrant, failing, hostile])
def test_export_is_valid_and_agrees_with_the_trace(build, tmp_path: Path) -> None:
    trace = build()
    path = tmp_path / "out.perfetto.json"
    write_chrome_trace(trace, path)
    doc = json.loads(path.read_text(encoding="utf-8"))  # well-formed JSON
    check_format(doc, trace)
    spans = sorted((e["tid"], e["args"]["task"], e["args"]["node"], e["ts"], e["dur"])
                   for e in doc["traceEvents"] if e["ph"] == "X")
    assert spans == spans_from_events(trace)
    names = {e["args"]["node"]: e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    for node, name in names.items():
        assert name == trace.nodes[node].name.encode("utf-8", "replace").decode("utf-8")


def test_multi_device_tracks_and_flows() -> None:
    trace = two_devices()
    doc = chrome_trace(trace)
    evs = doc["traceEvents"]
    tracks = {e["tid"] for e in evs if e["ph"] == "X"}
    assert tracks == {1, 2}  # the caller thread and the virtual:0 worker
    # Flow from ToCopyBackward0 (node 4, on the device thread) to MulBackward0 (node 3, same thread),
    # and from MulBackward0 (device) to ToCopyBackward0 (node 2, back on the cpu thread).
    flows = []
    for s in (e for e in evs if e["ph"] == "s"):
        f = next(e for e in evs if e["ph"] == "f" and e["id"] == s["id"])
        src = next(x for x in evs if x["ph"] == "X" and x["tid"] == s["tid"]
                   and x["ts"] <= s["ts"] <= x["ts"] + x["dur"])
        dst = next(x for x in evs if x["ph"] == "X" and x["tid"] == f["tid"]
                   and x["ts"] <= f["ts"] <= x["ts"] + x["dur"])
        flows.append((src["args"]["node"], dst["args"]["node"]))
    assert sorted(flows) == [(2, 1), (3, 2), (4, 3), (5, 4)]
    depth = [e["args"]["depth"] for e in evs if e["ph"] == "C" and e["name"] == "queue virtual:0 depth"]
    assert depth == [0, 1, 0, 1, 0]


def test_failed_node_error_is_an_instant_event() -> None:
    doc = chrome_trace(failing())
    # AccumulateGrad never runs after LogBackward0 fails: no flow may point at it.
    assert {e["id"] for e in doc["traceEvents"] if e["ph"] == "s"} == {
        e["id"] for e in doc["traceEvents"] if e["ph"] == "f"
    }
    errs = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert [e["name"] for e in errs] == ["RuntimeError"]


def test_nan_stats_stay_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    write_chrome_trace(failing(nan=True), path)
    json.loads(path.read_text())  # NaN would be rejected by a strict parser; we write strings


def test_cli_export(tmp_path: Path) -> None:
    src = tmp_path / "multi.trace.json"
    save(two_devices().events, src)
    out = tmp_path / "run.perfetto.json"
    r = CliRunner().invoke(main, ["export", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output
    check_format(json.loads(out.read_text()), two_devices())
    r = CliRunner().invoke(main, ["export", str(tmp_path / "missing.json"), "-o", str(out)])
    assert r.exit_code == 2 and "Traceback" not in r.output  # a missing input: a usage mistake


def test_export_to_a_fifo_writes_through_it_and_leaves_it_a_fifo(tmp_path: Path) -> None:
    """A device or pipe as the output (``-o /dev/null``, ``-o /dev/stdout``) is written in place: an
    atomic rename over it would replace the device with a plain file (as root, /dev/null itself)."""
    import os
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    n = write_chrome_trace(diamond(), fifo)
    reader.join(timeout=10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["traceEvents"] and n == len(json.loads(got[0])["traceEvents"])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gradviz-export-")]
