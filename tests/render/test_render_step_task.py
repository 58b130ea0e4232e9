"""render --step N draws the graph task running at step N (issue 29 item 4): a training loop of
several backward passes over shared leaves, recorded on gradviz's engine."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import gradviz
from gradviz.cli import main
from gradviz.render import dot_source, task_at
from gradviz.trace import events as ev


def _loop(path, passes: int = 3):
    """Several backward passes; the leaves w and b (and their AccumulateGrad nodes) are shared."""
    gradviz.manual_seed(0)
    w = gradviz.randn(3, 2, requires_grad=True)
    b = gradviz.zeros(2, requires_grad=True)
    losses = []  # kept: while a graph lives, its leaves' AccumulateGrad nodes are reused
    with gradviz.trace(str(path)):
        for _ in range(passes):
            losses.append(((gradviz.randn(4, 3) @ w + b).tanh() ** 2).sum())
            losses[-1].backward()
            w.grad = None
            b.grad = None
    trace = gradviz.load(str(path))
    leaves = [n for n in trace.nodes.values() if n.name == "AccumulateGrad"]
    assert len(leaves) == 2  # shared by every pass
    return trace


def _labels(dot: str) -> dict[str, str]:
    """Node name (as drawn) -> the label's text, for each AccumulateGrad's leaf name."""
    out = {}
    for m in re.finditer(r'^\s*n\d+ \[id="node-\d+".*label=<(.*)>\]$', dot, re.M):
        text = re.sub(r"<[^>]*>", " ", m.group(1))
        leaf = re.search(r"\b([wb]) \(", text)
        if "AccumulateGrad" in text and leaf:
            out[leaf.group(1)] = " ".join(text.split())
    return out


def _ids(trace) -> list[int]:
    """The trace's task ids in order (ids count on from earlier passes in this process)."""
    return list(trace.tasks)


def _middle(trace, task: int) -> int:
    """A step in the middle of ``task``: after its first node ran, before its leaves did."""
    t = trace.tasks[task]
    first = next(e.seq for e in trace.events if isinstance(e, ev.NodeBegin) and e.task == task)
    assert t.begin.seq < first < t.end.seq
    return first + 1


def test_step_in_the_middle_of_task_k_draws_task_k(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace = _loop(tmp_path / "loop.trace.json")
    ids = _ids(trace)
    assert len(ids) == 3
    for k in ids:
        step = _middle(trace, k)
        assert task_at(trace, step) == k
        r = CliRunner().invoke(main, ["render", "loop.trace.json", "--step", str(step), "--format", "dot"])
        assert r.exit_code == 0, r.output
        assert f"(task {k}," in r.output  # the "wrote" line
        assert f"drew task {k} of 3 (the one running at step {step})" in r.output
        dot = (tmp_path / f"loop.step{step}.dot").read_text()
        assert f"graph task {k} (" in dot


def test_step_after_a_task_shows_its_leaves_ran_not_unreached(tmp_path):
    trace = _loop(tmp_path / "loop.trace.json")
    # Between task 2's end and task 3's begin: task 2 is the last begun, and its leaves ran.
    _, t2, t3 = _ids(trace)
    step = trace.tasks[t2].end.seq + 1
    assert step <= trace.tasks[t3].begin.seq
    labels = _labels(dot_source(trace, step=step))
    assert set(labels) == {"w", "b"}
    for text in labels.values():
        assert "ran #" in text and "unreached" not in text, text


def test_task_overrides_step_and_shows_states_in_that_task(tmp_path):
    trace = _loop(tmp_path / "loop.trace.json")
    t1, _, t3 = _ids(trace)
    step = _middle(trace, t3)  # task 3 is running; its leaves have not run in it yet
    labels3 = _labels(dot_source(trace, step=step))
    assert set(labels3) == {"w", "b"}
    assert all("unreached" in t and "will run #" in t for t in labels3.values()), labels3
    labels1 = _labels(dot_source(trace, t1, step=step))  # --task of the first: the leaves ran in it
    assert set(labels1) == {"w", "b"}
    for text in labels1.values():
        assert "ran #" in text and "done" in text and f"ran in task {t1}" in text, text
        assert "unreached" not in text


@pytest.mark.parametrize("step", [0, 1])
def test_step_before_any_task_draws_the_first(tmp_path, monkeypatch, step):
    monkeypatch.chdir(tmp_path)
    trace = _loop(tmp_path / "loop.trace.json", passes=2)
    first = _ids(trace)[0]
    assert trace.tasks[first].begin.seq >= step
    assert task_at(trace, step) == first
    r = CliRunner().invoke(main, ["render", "loop.trace.json", "--step", str(step), "--format", "dot"])
    assert r.exit_code == 0, r.output
    assert f"drew task {first} of 2 (none had begun by step" in r.output
