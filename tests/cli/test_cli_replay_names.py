"""`gradviz replay` names each AccumulateGrad node by the parameter it writes into (issue 13, must-show 3).

samples/nn_module.py is a tutorial-style model (Module subclass, Linear, ReLU, CrossEntropyLoss, SGD with
momentum, DataLoader); its parameters must show under their module names, the names torch gives them, in
replay's node table (--step N), its timeline and the interactive stepper's panels.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from rich.console import Console

from gradviz.cli import main
from gradviz.replay.stepper import Stepper, layout
from gradviz.trace import load

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "nn_module.py"


def _torch_names() -> list[str]:
    """The oracle: the same Net under torch names its parameters so."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 8)
            self.relu = torch.nn.ReLU()
            self.fc2 = torch.nn.Linear(8, 3)

    return [n for n, _ in Net().named_parameters()]


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("names") / "nn_module.trace.json"
    r = CliRunner().invoke(main, ["run", "-o", str(out), str(SAMPLE)])
    assert r.exit_code == 0, r.output
    return out


def _replay(*args: str) -> str:
    r = CliRunner().invoke(main, ["replay", *args, "--width", "200", "--no-pager"])
    assert r.exit_code == 0, r.output
    return r.output


def test_node_table_names_each_leaf(trace_path: Path) -> None:
    names = _torch_names()
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    t = load(trace_path)
    # The state after the first backward: its 11 nodes, 4 of them AccumulateGrad.
    end = next(i for i, e in enumerate(t.events, 1) if e.kind == "task_end")
    out = _replay(str(trace_path), "--step", str(end))
    rows = re.findall(r"^\s*\d+\s+(AccumulateGrad\S*(?: \S+)?)\s+done", out, re.M)
    assert sorted(rows) == sorted(f"AccumulateGrad {n}" for n in names), out


def test_timeline_sums_runs_per_leaf(trace_path: Path) -> None:
    out = _replay(str(trace_path))
    for n in _torch_names():
        # 3 batches x 2 epochs: each parameter's AccumulateGrad ran 6 times.
        assert re.search(rf"AccumulateGrad {re.escape(n)} ×6\b", out), out
    assert not re.search(r"AccumulateGrad ×", out), out


def test_stepper_panels_and_search_name_the_leaf(trace_path: Path) -> None:
    t = load(trace_path)
    s = Stepper(t)
    for k in "/fc2.bias":
        s.key(k)
    s.key("enter")
    assert s.selected is not None and t.nodes[s.selected].name == "AccumulateGrad", s.message
    assert "AccumulateGrad fc2.bias" in s.message
    s.key("a")  # go to the node's start: the graph panel and the event line name the leaf
    con = Console(width=160, height=50, color_system=None, record=True, file=open("/dev/null", "w"))
    con.print(layout(s, 160, 50), height=50)
    screen = con.export_text()
    assert f"* AccumulateGrad fc2.bias (node {s.selected})" in screen, screen
    # Its producer is the second Addmm, whose other next edges are fc2.weight's T and the ReLU.
    assert "AddmmBackward0" in screen
