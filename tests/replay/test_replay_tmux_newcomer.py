"""The stepper in tmux at 80x24 and 120x30 (issue 35 items 1, 2 and 12): an error's forward line and
gradients, observed or derived on a torch trace, a node and its state on one panel line, the
dependency counts scrolled to their last row; and markup in recorded names (issue 33 G8)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from test_replay_tmux import pytestmark as tmux_marks
from test_replay_tmux import start, terminal
from trace_builders import diamond, failing

from gradviz.trace import events as ev
from gradviz.trace.file import save
from tests.synth import backward_graph

pytestmark = tmux_marks


def _flat(screen: str) -> str:
    """The screen's text with panel borders and line breaks taken out."""
    return " ".join(line.strip("│╭╮╰╯─ ") for line in screen.splitlines())


def test_the_error_jump_shows_the_forward_line_and_gradients_at_80x24(tmp_path: Path) -> None:
    path = tmp_path / "failing.json"
    save(failing().events, path)
    with terminal(80, 24) as p:
        start(p, path)
        p.send("e")
        screen = p.wait_for(lambda s: "step 23/25" in s and "gradient in" in s and "q quit" in s)
        flat = _flat(screen)
        assert "ERROR in LogBackward0 (node 2)" in flat
        assert "LogBackward0 (node 2) created at fail.py:3" in flat
        assert "gradient in: slot 0: norm 1.75, min -1.75, max 1.75" in flat
        p.send("q")


def test_observed_or_derived_in_the_event_header(tmp_path: Path) -> None:
    events = list(diamond().events)
    end = events.pop()
    events.insert(1, ev.EngineInfo(0, 0, events[0].tid, "torch", "2.13.0"))
    events = [dataclasses.replace(e, seq=i) for i, e in enumerate(events)]
    deps = next(i for i, e in enumerate(events) if type(e) is ev.Dependencies)
    events.append(ev.Derived(len(events), end.ts, end.tid, (deps,)))
    events.append(dataclasses.replace(end, seq=len(events), events=len(events)))
    path = tmp_path / "torch.json"
    save(events, path)
    with terminal(80, 24) as p:
        start(p, path)
        p.send("g")
        p.type(str(deps + 1))
        p.send("Enter")
        assert "dependencies on MainThread (derived)" in p.wait_for(f"step {deps + 1}/")
        p.send("n")
        assert "(observed)" in p.wait_for(f"step {deps + 2}/")
        p.send("q")


def test_panel_lines_keep_a_node_and_its_state_together_at_80x24(tmp_path: Path) -> None:
    path = tmp_path / "diamond.json"
    save(diamond().events, path)
    with terminal(80, 24) as p:
        start(p, path)
        p.send("g")
        p.type("42")
        p.send("Enter")
        # the whole frame drawn (a capture can land between the header and the panels)
        screen = p.wait_for(lambda s: "step 42/56" in s and "go to step" not in s and "not_ready buffers" in s
                            and "q quit" in s)
        assert "AccumulateGrad a (node 1) [1/1]" in screen  # not_ready, on one line
        assert "MulBackward0 (node 2) queued" in screen  # the graph panel
        assert "* AccumulateGrad a (node 1) parked" in screen
        for line in screen.splitlines():
            for cell in line.split("│"):
                assert not re.match(r"\s*(\(node \d|\d\)|\[1/1\])", cell), line
        p.send("q")


def test_the_dependency_counts_scroll_to_every_row_at_120x30(tmp_path: Path) -> None:
    path = tmp_path / "wide.json"
    trace = backward_graph("wide", 60).trace()
    save(trace.events, path)
    with terminal(120, 30) as p:
        start(p, path)
        p.send(">", ">")
        screen = p.wait_for("[ and ] scroll")
        total = int(re.search(r"lines 1-\d+ of (\d+)", screen).group(1))  # type: ignore[union-attr]
        for _ in range(total // 5 + 1):
            p.send("]")
        screen = p.wait_for(f"-{total} of {total}")
        last = max(n for n in trace.nodes if f"(node {n}): " in screen)
        assert last >= 50, screen
        p.send("q")


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_markup_in_recorded_names_shows_as_written(tmp_path: Path, size: tuple[int, int]) -> None:
    events = []
    for e in failing().events:
        if type(e) is ev.ThreadStart:
            e = dataclasses.replace(e, name="loader[/]")
        if type(e) is ev.Error:
            e = dataclasses.replace(e, message="cannot read [/data/train.csv]")
        events.append(e)
    path = tmp_path / "markup.json"
    save(events, path)
    with terminal(*size) as p:
        start(p, path)
        p.send("e")
        screen = p.wait_for("step 23/25")
        assert "loader[/]" in screen and "[/data/train.csv]" in _flat(screen)
        p.send("q")
