"""The stepper at 80x24 and 120x30 without a terminal: an error's forward line and gradients, observed
or derived events, panel lines that keep a node with its state, the dependency counts scrolling
(issue 35 items 1, 2, 12; the same in tmux: tests/replay/test_replay_tmux_newcomer.py)."""

from __future__ import annotations

import dataclasses
import os

import trace_builders as tb
from rich.console import Console

from gradviz.replay.stepper import Stepper, layout
from gradviz.trace import events as ev
from gradviz.trace.model import Trace
from tests.synth import backward_graph


def screen(s: Stepper, width: int = 80, height: int = 24) -> str:
    c = Console(width=width, height=height, color_system=None, record=True, markup=False,
                file=open(os.devnull, "w"))
    c.print(layout(s, width, height), height=height)
    return c.export_text()


def test_the_error_jump_shows_the_forward_line_and_the_gradient_in():
    s = Stepper(tb.failing())
    s.key("e")
    text = screen(s)
    assert "ERROR in LogBackward0 (node 2)" in text
    flat = " ".join(line.strip("│ ") for line in text.splitlines()[:8])
    assert "LogBackward0 (node 2) created at fail.py:3" in flat
    assert "gradient in: slot 0: norm 1.75, min -1.75, max 1.75" in flat


def test_the_nan_jump_shows_the_nan_gradient_and_where_its_producer_was_made():
    s = Stepper(tb.failing(nan=True))
    s.key("e")  # the anomaly
    s.key("e")  # the NaN gradient handed on
    assert type(s.state.last) is ev.BufferAdd
    flat = " ".join(line.strip("│ ") for line in screen(s).splitlines()[:8])
    assert "this gradient: norm nan, min nan, max nan, 1 NaN" in flat
    assert "LogBackward0 (node 2) created at fail.py:3" in flat


def test_the_event_header_says_observed_or_derived_on_a_torch_trace():
    events = list(tb.diamond().events)
    end = events.pop()
    events.insert(1, ev.EngineInfo(0, 0, events[0].tid, "torch", "2.13.0"))
    events = [dataclasses.replace(e, seq=i) for i, e in enumerate(events)]
    deps = next(i for i, e in enumerate(events) if type(e) is ev.Dependencies)  # the recorder derived it
    events.append(ev.Derived(len(events), end.ts, end.tid, (deps,)))
    events.append(dataclasses.replace(end, seq=len(events), events=len(events)))
    s = Stepper(Trace(events), start=deps + 1)
    assert "dependencies on MainThread (derived)" in screen(s)
    s.key("n")
    assert "(observed)" in screen(s)
    plain = Stepper(tb.diamond(), start=10)  # gradviz's own engine: nothing to say
    assert "(observed)" not in screen(plain) and "(derived)" not in screen(plain)


def test_panel_lines_at_80x24_keep_a_node_and_its_state_on_one_line():
    s = Stepper(tb.diamond(), start=42)  # AccumulateGrad a parked, MulBackward0 queued
    text = screen(s)
    assert "AccumulateGrad a (node 1) [1/1]" in text  # not_ready: node and slots on one line
    assert "MulBackward0 (node 2) queued" in text  # graph: node and state
    assert "* AccumulateGrad a (node 1) parked" in text
    for line in text.splitlines():
        # no panel line starts with the tail of a broken label
        assert not line.strip("│ ").startswith(("(node", "1)", "[1/1]", "ran)")), line


def test_the_dependency_counts_show_every_row_by_scrolling_at_120x30():
    t = backward_graph("wide", 60).trace()
    s = Stepper(t)
    s.key(">")
    s.key(">")
    waiting = s.state.tasks[1].waiting
    assert len(waiting) > 20
    seen: set[str] = set()
    for _ in range(30):
        text = screen(s, 120, 30)
        assert "[ and ] scroll" in text
        seen |= {n for n in (f"(node {k}): " for k in waiting) if n in text}
        s.key("]")
    assert seen == {f"(node {k}): " for k in waiting}
