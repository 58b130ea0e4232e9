"""The page's data (gradviz.view.steps): the per-node transitions taken from one pass of the fold
give, at every step, the fold's own state of every node; errors and NaN are stops for e/E."""

from __future__ import annotations

import pytest
from trace_builders import diamond, failing, pruned, reentrant, two_devices

from gradviz.replay.state import NODE_STATES, Replayer
from gradviz.view.steps import collect


def _states_from_transitions(transitions, step):
    out = {}
    for node, s, code, _extra in transitions:
        if s > step:
            break
        out[node] = NODE_STATES[code]
    return out


@pytest.mark.parametrize("make", [diamond, reentrant, pruned, two_devices, failing, lambda: failing(nan=True)],
                         ids=["diamond", "reentrant", "pruned", "two_devices", "failing", "nan"])
def test_transitions_give_the_fold_state_at_every_step(make):
    tr = make()
    steps = collect(tr)
    r = Replayer(tr)
    assert steps.total == len(tr.events) == len(steps.texts)
    for step in range(len(tr.events) + 1):
        st = r.state_at(step)
        got = _states_from_transitions(steps.transitions, step)
        assert got == {n: ns.state for n, ns in st.nodes.items()}, f"step {step}"


def test_task_spans_and_stops():
    tr = failing(nan=True)
    steps = collect(tr)
    for tid in tr.tasks:
        begin, end = steps.task_spans[tid]
        assert tr.events[begin - 1].kind == "task_begin" and tr.events[begin - 1].task == tid
        assert end is None or tr.events[end - 1].kind == "task_end"
    assert steps.problems, "a NaN gradient is a stop for e/E"
    assert all(tr.events[s - 1].kind in ("buffer_add", "captured_grad", "accumulate_grad", "error", "anomaly")
               for s in steps.problems)
    assert [tr.events[s - 1].kind for s in steps.runs] == ["node_begin"] * len(steps.runs)
    err = collect(failing())
    assert any(failing().events[s - 1].kind == "error" for s in err.problems)
