"""The answers of `gradviz why` where people look: the stepper's `w` panel and `render --why`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

import gradviz
from gradviz.cli import main
from gradviz.replay.stepper import Stepper, _graph_panel
from tests._why_check import record

PROGRAMS = Path(__file__).resolve().parents[1] / "why_programs"


def _text(renderable) -> str:
    c = Console(width=80, color_system=None, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    c.print(renderable)
    return c.export_text()


@pytest.fixture
def inplace_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "inplace.json"
    record(PROGRAMS / "inplace.py", "gradviz", out)
    return out


def test_w_panel_answers_for_the_failing_node(inplace_trace: Path) -> None:
    t = gradviz.load(inplace_trace)
    err = next(e for e in t.events if e.kind == "error" and e.node is not None)
    s = Stepper(t, start=err.seq + 1)  # on the error: the failing node is in focus
    assert s.focus() == err.node
    s.key("w")
    text = _text(_graph_panel(s))
    assert "inplace at inplace.py:6" in text and "ExpBackward0" in text


def test_w_panel_without_a_node_shows_the_first_problem(inplace_trace: Path) -> None:
    t = gradviz.load(inplace_trace)
    s = Stepper(t, start=0)
    s.key("w")
    text = _text(_graph_panel(s))
    assert "why: the first problem" in text and "inplace at inplace.py:6" in text


def test_render_marks_the_culprit(inplace_trace: Path) -> None:
    r = CliRunner().invoke(main, ["render", str(inplace_trace), "--why", "-o", "g.dot"])
    assert r.exit_code == 0, r.output
    dot = Path("g.dot").read_text()
    node = next(line for line in dot.splitlines() if "ExpBackward0 (node" in line)
    assert "why: inplace at inplace.py:6" in node and "#dc2626" in node  # drawn as the error, the line in it
    assert "why: inplace at inplace.py:6: `add_`" in dot  # and the answer as a note
