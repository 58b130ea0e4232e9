"""The stepper's controller and layout, without a terminal."""

from __future__ import annotations

from rich.console import Console
from trace_builders import diamond, failing

from gradviz.replay.stepper import Stepper, layout, parse_keys


def screen(s: Stepper, width: int = 160, height: int = 50) -> str:
    c = Console(width=width, height=height, color_system=None, record=True, file=open("/dev/null", "w"))
    c.print(layout(s), height=height)
    return c.export_text()


def test_moves() -> None:
    s = Stepper(diamond())
    for k, step in [("right", 1), ("n", 2), ("down", 12), ("left", 11), ("up", 1), ("up", 0), ("end", 56),
                    ("right", 56), ("home", 0)]:
        s.key(k)
        assert s.step == step, k
    s.key(">")
    assert s.step == 22  # the first node_begin
    s.key(">")
    assert s.step == 28
    s.key("<")
    assert s.step == 22
    for k in "g42":
        s.key(k)
    assert s.step == 22 and s.prompt == "g"
    s.key("enter")
    assert s.step == 42 and s.prompt is None


def test_jump_to_error_and_back() -> None:
    s = Stepper(failing())
    s.key("e")
    assert s.step == 23 and s.state.last.kind == "error"
    s.key("e")
    assert s.step == 23 and "no next error" in s.message
    s.key("end")
    s.key("E")
    assert s.step == 23


def test_find_and_why() -> None:
    s = Stepper(diamond(), start=42)
    for k in "/AccumulateGrad":
        s.key(k)
    s.key("enter")
    assert s.selected == 1 and "parked" in s.message
    s.key("w")
    text = screen(s)
    assert "why: AccumulateGrad a (node 1)" in text
    assert "waiting for MulBackward0 (node 2) -> slot 0: queued" in text
    s.key("a")
    assert s.step == 52  # where AccumulateGrad starts running
    for k in "/Mul":
        s.key(k)
    s.key("enter")
    for k in "/Mul":
        s.key(k)
    s.key("enter")
    assert s.selected == 3  # a repeated search cycles through the matches


def test_layout_has_named_regions() -> None:
    s = Stepper(diamond(), start=42)
    root = layout(s)
    for name in ("event", "threads", "queues", "not_ready", "dependencies", "graph", "footer"):
        assert root.get(name) is not None, name
    text = screen(s)
    assert "AccumulateGrad a (node 1) parked in not_ready of task 1" in text
    assert "1. MulBackward0 (seq 0) task 1, priority (0, 0)" in text
    s.key("?")
    assert "next / previous node execution" in screen(s)


def test_quit() -> None:
    s = Stepper(diamond())
    s.key("q")
    assert not s.running


def test_parse_keys() -> None:
    assert parse_keys("\x1b[C\x1b[Dn\r\x7f\x1b") == ["right", "left", "n", "enter", "backspace", "esc"]
    assert parse_keys("\x1b[5~\x1b[6~\x1b[Hx") == ["pgup", "pgdn", "home", "x"]
    assert parse_keys("\x1b[1;5Cq") == ["unknown", "q"]
