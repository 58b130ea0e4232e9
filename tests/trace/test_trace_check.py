"""check.invariants: silent on sound traces, and each rule catches the violation it is for."""

from __future__ import annotations

import dataclasses

import pytest
from trace_builders import diamond, failing, hostile, pruned, reentrant, two_devices, unbind_diamond

from gradviz.trace import events as ev
from gradviz.trace.check import invariants
from gradviz.trace.model import Trace
from tests.synth import backward_graph


def _renumber(events: list[ev.Event]) -> Trace:
    out = [dataclasses.replace(e, seq=i) for i, e in enumerate(events)]
    if isinstance(out[-1], ev.TraceEnd):
        out[-1] = dataclasses.replace(out[-1], events=len(out) - 1)
    return Trace(out)


def _index(events, cls, pred=lambda e: True) -> int:
    return next(i for i, e in enumerate(events) if isinstance(e, cls) and pred(e))


@pytest.mark.parametrize("make", [diamond, reentrant, pruned, failing, two_devices, hostile, unbind_diamond])
def test_sound_traces_have_no_problems(make):
    assert invariants(make()) == []


@pytest.mark.parametrize("kind", ["mlp", "chain", "wide"])
def test_large_synthetic_graphs_have_no_problems(kind):
    assert invariants(backward_graph(kind, 400).trace()) == []


def test_a_lost_pop_is_caught():
    events = list(diamond().events)
    del events[_index(events, ev.QueuePop)]
    problems = invariants(_renumber(events))
    assert any("is never popped" in p for p in problems)
    assert any("size after" in p for p in problems)


def test_a_pop_without_push_is_caught():
    events = list(diamond().events)
    del events[_index(events, ev.QueuePush)]
    assert any("which was not pushed there" in p for p in invariants(_renumber(events)))


def test_a_wrong_dependency_count_is_caught():
    events = list(diamond().events)
    i = _index(events, ev.Dependencies)
    counts = tuple((n, c + 1 if n == 1 else c) for n, c in events[i].counts)
    events[i] = dataclasses.replace(events[i], counts=counts)
    problems = invariants(_renumber(events))
    assert any("has dependency count 3, but 2 edges" in p for p in problems), problems


def test_a_node_running_before_its_buffer_is_complete_is_caught():
    events = list(diamond().events)
    # AccumulateGrad (node 1) gets two gradients; make it begin right after the first arrives
    first = _index(events, ev.BufferAdd, lambda e: e.node == 1)
    begin = _index(events, ev.NodeBegin, lambda e: e.node == 1)
    moved = events.pop(begin)
    events.insert(first + 1, moved)
    problems = invariants(_renumber(events))
    assert any("dependencies outstanding" in p for p in problems), problems
    assert any("1 of its 2 gradients" in p for p in problems), problems
    assert any("after it began" in p for p in problems), problems


def test_seq_order_thread_and_references_are_checked():
    events = list(diamond().events)
    events[5], events[6] = events[6], events[5]  # seq goes backwards, and an edge before its node
    t = Trace(events)
    problems = invariants(t)
    assert any("does not increase" in p for p in problems)
    events = list(diamond().events)
    events[20] = dataclasses.replace(events[20], tid=9)
    assert any("thread 9 has no thread_start" in p for p in invariants(Trace(events)))
    events = list(diamond().events)
    k = _index(events, ev.NodeCreated, lambda e: e.name == "AddBackward0")
    del events[k]
    assert any("has no node_created before it" in p for p in invariants(_renumber(events)))


def test_a_cut_trace_is_checked_as_a_prefix():
    events = diamond().events
    for n in range(1, len(events)):
        assert invariants(Trace(events[:n], truncated=True)) == [], n
    # the same prefix presented as finished misses its pops and ends
    problems = invariants(_renumber(list(events[:21]) + [events[-1]]))
    assert any("has no task_end" in p for p in problems)
