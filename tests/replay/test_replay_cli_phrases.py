"""Tables and lines at 80 columns wrap between phrases, never inside one (issue 35 item 12): a node's
label, "task 3", "priority (0, 6)" stay whole in replay's timeline and states and in info."""

from __future__ import annotations

import re

import pytest
import trace_builders as tb
from click.testing import CliRunner

from gradviz.cli import main
from gradviz.replay.phrases import Phrases, phrases_of
from gradviz.trace.file import save
from tests.synth import backward_graph

# what a line never starts with: the tail of a phrase cut at its space
BROKEN = re.compile(r"^\s*(│\s*)*(\(node \d|\(seq \d|\d+\)|ran\b|\(\d+, \d+\)|node\(s\)|x\d+\b)")


def _lines(args: list[str]) -> list[str]:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()


@pytest.mark.parametrize("build", [tb.two_devices, tb.diamond, tb.reentrant, tb.unbind_diamond])
def test_replay_at_80_columns_wraps_between_phrases(tmp_path, build):
    path = str(tmp_path / "t.json")
    events = build().events
    save(events, path)
    for step in range(1, len(events) + 1, 3):
        for line in _lines(["replay", path, "--step", str(step), "--width", "80"]):
            assert not BROKEN.match(line.split("   ")[-1] if "   " in line.strip() else line), (step, line)
    for line in _lines(["replay", path, "--width", "80", "--no-pager"]):
        assert not BROKEN.match(line.strip()), line


def test_a_long_dependency_list_wraps_between_nodes(tmp_path):
    path = str(tmp_path / "t.json")
    t = backward_graph("wide", 40).trace()
    save(t.events, path)
    lines = _lines(["replay", path, "--step", "120", "--width", "80"])
    deps = [i for i, line in enumerate(lines) if "dependencies left:" in line]
    assert deps
    i = deps[0] + 1
    while i < len(lines) and lines[i].startswith("      "):
        assert re.match(r"^      \S.*\(node \d+\) \d+,?$", lines[i]) or "more" in lines[i], lines[i]
        i += 1
    assert i > deps[0] + 1  # it did wrap


def test_info_graph_line_wraps_between_names(tmp_path):
    path = str(tmp_path / "t.json")
    save(backward_graph("mlp", 60).trace().events, path)
    for line in _lines(["info", path]):
        assert not BROKEN.match(line.strip()), line


def test_phrases():
    assert phrases_of("1. ToCopyBackward0 (seq 6) task 1, priority (0, 6)") == [
        "1.", "ToCopyBackward0 (seq 6)", "task 1,", "priority (0, 6)"]
    assert phrases_of("  passing a gradient to AccumulateGrad a (node 1)", keep=["AccumulateGrad a (node 1)"])[-1] \
        == "AccumulateGrad a (node 1)"
    p = Phrases(["dependencies left:", "A (node 1) 1,", "B (node 2) 1"], indent="  ")
    assert p.lines(30) == ["dependencies left:", "  A (node 1) 1, B (node 2) 1"]
    assert p.lines(200) == ["dependencies left: A (node 1) 1, B (node 2) 1"]
