"""Issue 18 item 9: the large-trace paths (streamed export, render --step's one fold) say exactly
what the whole-document and whole-trace paths said. Their speed and memory: benchmarks/bench_large.py."""

from __future__ import annotations

import json

import pytest
from trace_builders import diamond, failing, hostile, reentrant, two_devices

import gradviz
from gradviz.render import build_model
from gradviz.replay import state as rs
from gradviz.replay.export import _BATCH, chrome_trace, write_chrome_trace

BUILDERS = [diamond, reentrant, two_devices, hostile, lambda: failing(nan=True)]


def _chain(tmp_path, steps: int) -> gradviz.trace.model.Trace:
    path = tmp_path / "chain.trace.json"
    x = gradviz.ones(1, requires_grad=True)
    with gradviz.trace(str(path)):
        y = x
        for _ in range(steps):
            y = y * 1.0001 + 0.0001
        y.sum().backward()
    return gradviz.load(path)


@pytest.mark.parametrize("build", BUILDERS)
def test_streamed_export_is_the_documents_json_byte_for_byte(build, tmp_path):
    trace = build()
    out = tmp_path / "x.perfetto.json"
    n = write_chrome_trace(trace, out)
    doc = chrome_trace(trace)
    want = json.dumps(doc, allow_nan=False, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert out.read_text(encoding="utf-8") == want
    assert n == len(doc["traceEvents"])


def test_streamed_export_across_batches(tmp_path):
    trace = _chain(tmp_path, 300)  # more trace events than one encoder batch
    doc = chrome_trace(trace)
    assert len(doc["traceEvents"]) > _BATCH
    out = tmp_path / "chain.perfetto.json"
    assert write_chrome_trace(trace, out) == len(doc["traceEvents"])
    assert json.loads(out.read_text(encoding="utf-8")) == doc


def test_render_step_folds_once_without_replay_checkpoints(tmp_path):
    trace = _chain(tmp_path, 40)
    n = len(trace.events)
    for step in (0, 1, n // 3, n // 2, n - 1, n):
        m = build_model(trace, next(iter(trace.tasks)), step=step, max_nodes=10_000)
        assert rs._replayers.get(trace) is None  # no whole-trace checkpoints were built
        want = rs.fold(trace.events[:step])
        assert {nid: g.state for nid, g in m.nodes.items()} == {
            nid: (want.nodes[nid].state if nid in want.nodes else "unreached") for nid in m.nodes
        }
        assert rs.state_once(trace, step).nodes.items() == want.nodes.items()
    # with a Replayer already built (the stepper), render uses it: the same states
    r = rs.replayer(trace)
    assert rs.state_once(trace, n // 2).nodes.items() == r.state_at(n // 2).nodes.items()
