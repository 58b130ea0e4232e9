"""The stepper's NaN jump names the op that made the node, not only its line: column and text,
alike on both engines (issue 35 item 11)."""

from __future__ import annotations

import os

import _op_columns as oc
from rich.console import Console

from gradviz.replay.stepper import Stepper, layout
from gradviz.trace.summary import summarize


def _screen(s: Stepper, width: int = 200, height: int = 50) -> str:
    c = Console(width=width, height=height, color_system=None, record=True, markup=False,
                file=open(os.devnull, "w"))
    c.print(layout(s, width, height), height=height)
    return " ".join(line.strip("│ ") for line in c.export_text().splitlines())


def test_the_nan_jump_shows_the_column_and_the_op_on_both_engines(tmp_path):
    for engine in ("gradviz", "torch"):
        s = Stepper(oc.record(engine, tmp_path))
        s.key("e")
        text = _screen(s)
        assert f"ops_line.py:{oc.NAN_LINE}:9 (`(h * 2).sqrt()`)" in text, (engine, text)


def test_info_errors_name_the_op(tmp_path):
    from gradviz.trace import events as ev
    from gradviz.trace.model import Trace

    trace = oc.record("gradviz", tmp_path)
    relu = oc.node(trace, "ReluBackward0")
    events = list(trace.events)
    end = events.pop()
    events.append(ev.Error(end.seq, end.ts, end.tid, None, relu.id, "RuntimeError", "boom", None))
    events.append(ev.TraceEnd(end.seq + 1, end.ts, end.tid, "error", end.seq + 1, "RuntimeError: boom"))
    err = summarize(Trace(events)).errors[0]
    assert err.context().startswith(f"created at {tmp_path / 'ops_line.py'}:{oc.FORWARD_LINE}:29 "
                                    "(`F.relu(self.fc1(x))`)"), err.context()


