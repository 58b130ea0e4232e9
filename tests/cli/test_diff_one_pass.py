"""diff reads each trace in one pass as the load checks its lines (``gradviz.load(then=Lines())``:
decoded once, nothing kept) and finds what it found from the events (issue 33 must-show 5)."""

from __future__ import annotations

import pytest
from diff_programs import record

import gradviz
from gradviz.diff import SKIP, Lines, Runs, compare
from gradviz.trace import events as ev


def _record(path, **kw) -> str:
    record(path, **kw)
    return str(path)


def _runs(path: str, how: str) -> Runs:
    if how == "events":
        return Runs(gradviz.load(path))
    if how == "lazy":
        return Runs(gradviz.load(path, lazy=True))
    lines = Lines()
    trace = gradviz.load(path, lazy=True, then=lines, skip=SKIP)
    assert trace._lazy is not None  # the one-pass way was taken
    return Runs(trace, lines)


def _found(c):
    return [(str(d), d.seq_a, d.seq_b) for d in c.divergences], c.compared, c.not_compared


@pytest.mark.parametrize("b_kw", [{}, {"hook": True}, {"seed": 1}, {"fail": True}, {"sin": True}, {"grad": True}])
def test_one_pass_finds_what_the_events_find(tmp_path, b_kw):
    a = _record(tmp_path / "a.json")
    b = _record(tmp_path / "b.json", **b_kw)
    want = _found(compare(_runs(a, "events"), _runs(b, "events")))
    assert _found(compare(_runs(a, "lines"), _runs(b, "lines"))) == want
    assert _found(compare(_runs(a, "lazy"), _runs(b, "lines"))) == want


def test_lines_of_a_load_that_went_the_general_way_are_not_used(tmp_path):
    a = _record(tmp_path / "a.json", hook=True)
    cut = tmp_path / "cut.json"
    data = open(a, "rb").read()
    cut.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 10)])  # no footer: the general reader's
    lines = Lines()
    with pytest.warns(gradviz.trace.TraceWarning):
        trace = gradviz.load(str(cut), lazy=True, then=lines, skip=SKIP)
    assert trace._lazy is None
    with pytest.warns(gradviz.trace.TraceWarning):
        events = [Runs(gradviz.load(str(cut))) for _ in range(3)]  # (a Runs is compared once)
    assert _found(compare(Runs(trace, lines), events[0])) == _found(compare(events[1], events[2]))


def test_skipped_kinds_are_counted_and_made_again_when_asked(tmp_path):
    path = _record(tmp_path / "a.json")
    full = gradviz.load(path, lazy=True)
    lean = gradviz.load(path, lazy=True, skip=SKIP)
    assert lean._lazy.rare.get(ev.ForwardOp) is None
    assert lean.kinds == full.kinds and full.kinds.get("forward_op")
    assert lean.of_kind(ev.ForwardOp) == full.of_kind(ev.ForwardOp) == gradviz.load(path).of_kind(ev.ForwardOp)
