"""Concurrent recordings are truthful (issue 16, must-show 2).

Threads run backward passes over cpu -> virtual:0 -> virtual:1 graphs at once, plain, reentrant
and grad(create_graph=True) ones, with the interpreter switching threads as often as it can
(``sys.setswitchinterval(1e-5)``), while one recording hears all of them. Every trace must pass
``gradviz.trace.check.invariants`` (each pop takes what was pushed, the recorded queue sizes
agree with the pushes and pops, ...), and replay must end with every queue empty: no entry that
was never pushed, none pushed and left behind.
"""

from __future__ import annotations

import faulthandler
import sys
import threading
from collections.abc import Iterator

import pytest

import gradviz
from gradviz.replay.state import fold
from gradviz.trace.check import invariants

PASSES = 200
REPEATS = 20


@pytest.fixture(autouse=True)
def _fast_switching() -> Iterator[None]:
    faulthandler.dump_traceback_later(240, exit=True)  # a hang fails loudly
    prev = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(prev)
        faulthandler.cancel_dump_traceback_later()


class Nested(gradviz.autograd.Function):
    """Its backward runs a backward of its own (reentrant)."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 2.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        with gradviz.enable_grad():
            y = gradviz.tensor([1.0], requires_grad=True)
            (y * 3.0).backward(gradviz.ones(1))
        assert y.grad.tolist() == [3.0]
        return g * 2.0


def _one_pass(i: int) -> None:
    """A tiny graph whose gradient goes virtual:1 -> virtual:0 -> cpu: every third pass a plain
    backward, a reentrant one (from a node on virtual:0), or grad(create_graph=True)."""
    x = gradviz.tensor([0.5], requires_grad=True)
    kind = i % 3
    if kind == 0:
        x.to("virtual:0").to("virtual:1").backward(gradviz.ones(1, device="virtual:1"))
        assert x.grad.tolist() == [1.0]
    elif kind == 1:
        Nested.apply(x.to("virtual:0")).to("virtual:1").backward(gradviz.ones(1, device="virtual:1"))
        assert x.grad.tolist() == [2.0]
    else:
        v = x.to("virtual:0")
        (g,) = gradviz.autograd.grad((v * v).to("virtual:1"), x, gradviz.ones(1, device="virtual:1"), create_graph=True)
        assert g.tolist() == [1.0] and g.requires_grad


def _record(threads: int) -> gradviz.trace.Trace:  # type: ignore[name-defined]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(PASSES):
                _one_pass(i)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    with gradviz.record() as rec:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    assert errors == []
    return rec.trace


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("threads", (2, 8, pytest.param(16, marks=pytest.mark.slow)))
def test_a_concurrent_recording_only_says_what_happened(threads: int, repeat: int) -> None:
    trace = _record(threads)
    assert invariants(trace) == []
    state = fold(trace.events)
    for q in state.queues.values():
        assert q.entries == [] and q.pushes == q.pops, q
