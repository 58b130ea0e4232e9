"""`why` answers name the op, not only its line: ``file:line:col`` and the op's own text, alike
on both engines (issue 35 item 11)."""

from __future__ import annotations

import _op_columns as oc


def test_the_nan_answer_points_at_the_op_on_its_line_on_both_engines(tmp_path):
    answers = [oc.record(engine, tmp_path).why(nan=True) for engine in ("gradviz", "torch")]
    for a in answers:
        assert a.reason == "non_finite_forward"
        assert f"`sqrt` at ops_line.py:{oc.NAN_LINE}:9 (`(h * 2).sqrt()`)" in a.text, a.text
        assert a.where == f"{tmp_path / 'ops_line.py'}:{oc.NAN_LINE}"  # the JSON contract: file:line
    assert answers[0].text == answers[1].text
