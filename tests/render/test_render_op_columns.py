"""Node labels point at the op, not only at its line: several ops on one line (``return
self.fc2(F.relu(self.fc1(x)))``) are told apart by column and text, on both engines (issue 35
item 11)."""

from __future__ import annotations

import re

import _op_columns as oc
import pytest

from gradviz.render import dot_source


def _labels(dot: str) -> dict[int, str]:
    out = {}
    for m in re.finditer(r'^\s*n(\d+) \[id="node-\d+".*label=<(.*)>\]$', dot, re.M):
        out[int(m.group(1))] = " ".join(re.sub(r"<[^>]*>", " ", m.group(2)).split())
    return out


def _op_lines(trace) -> set[tuple[str, str]]:
    """(node name, the label's forward-line row) of each op node."""
    out = set()
    for m in re.finditer(r"^\s*n(\d+) \[.*label=<(.*)>\]$", dot_source(trace), re.M):
        rows = [" ".join(re.sub(r"<[^>]*>", " ", r).split()) for r in m.group(2).split("</TR>")]
        name = trace.nodes[int(m.group(1))].name
        line = next((r for r in rows if r.startswith("ops_line.py:")), None)
        if name != "AccumulateGrad" and line:
            out.add((name, line))
    return out


@pytest.mark.parametrize("engine", ["gradviz", "torch"])
def test_labels_tell_apart_the_ops_of_one_line(engine, tmp_path):
    trace = oc.record(engine, tmp_path)
    labels = _labels(dot_source(trace))
    relu = oc.node(trace, "ReluBackward0")
    assert f"ops_line.py:{oc.FORWARD_LINE}:29 F.relu(self.fc1(x))" in labels[relu.id]
    addmm = [labels[n.id] for n in trace.nodes.values() if n.name == "AddmmBackward0"]
    assert sorted(re.search(r"ops_line\.py:11:\d+ \S+", a).group(0) for a in addmm) == [
        "ops_line.py:11:20 self.fc2(F.relu(self.fc1(x)))", "ops_line.py:11:36 self.fc1(x)"]
    sqrt = oc.node(trace, "SqrtBackward0")
    assert f"ops_line.py:{oc.NAN_LINE}:9 (h * 2).sqrt()" in labels[sqrt.id]
    tip = re.search(rf'n{relu.id} \[.*tooltip="([^"]*)"', dot_source(trace)).group(1)
    assert tip.startswith(f"{tmp_path / 'ops_line.py'}:{oc.FORWARD_LINE}:29")


def test_both_engines_label_each_op_alike(tmp_path):
    mine = _op_lines(oc.record("gradviz", tmp_path))
    theirs = _op_lines(oc.record("torch", tmp_path))
    assert mine == theirs and len(mine) == 8  # T and Addmm for each Linear, Relu, Mul, Sqrt, Sum


def test_a_trace_without_columns_keeps_its_line(tmp_path):
    """A node with no columns recorded (an older trace, a file gone) shows file:line, as before."""
    import dataclasses

    from gradviz.trace import events as ev
    from gradviz.trace.model import Trace

    trace = oc.record("gradviz", tmp_path)
    events = [dataclasses.replace(e, columns=None) if type(e) is ev.NodeCreated else e for e in trace.events]
    labels = _labels(dot_source(Trace(events)))
    relu = oc.node(trace, "ReluBackward0")
    assert re.search(rf"ops_line\.py:{oc.FORWARD_LINE}(?![:\d])", labels[relu.id]), labels[relu.id]
