"""Real torch recorded while several threads call backward() (issue 33 G1, must-show 3): every
pass recorded, the trace's invariants hold, the program's results unchanged."""

from __future__ import annotations

import threading

import pytest
import torch

import gradviz
from gradviz.trace import events as ev
from gradviz.trace.check import invariants

PASSES = 12


def _program(n_threads: int) -> dict[int, list[torch.Tensor]]:
    """Each thread: its own small MLP over a shared input, PASSES backward passes; plus one
    parameter every thread shares (its .grad gathers every pass of every thread)."""
    torch.manual_seed(0)
    shared = torch.randn(8, requires_grad=True)
    models = [torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
              for _ in range(n_threads)]
    x = torch.randn(4, 8)
    start = threading.Barrier(n_threads)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            start.wait()
            for _ in range(PASSES):
                loss = models[i](x * shared).pow(2).mean()
                loss.backward()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    out = {i: [p.grad.clone() for p in m.parameters()] for i, m in enumerate(models)}
    out[-1] = [shared.grad.clone()]
    return out


@pytest.mark.parametrize("n_threads", [2, 8, 16])
def test_threads_calling_backward_are_all_recorded(n_threads):
    plain = _program(n_threads)
    with gradviz.record(engine="torch") as rec:
        recorded = _program(n_threads)
    for i, grads in plain.items():
        for a, b in zip(grads, recorded[i]):
            if i >= 0:
                assert torch.equal(a, b)
            else:  # the shared leaf sums the threads' passes in whatever order they ran
                torch.testing.assert_close(a, b)
    t = rec.trace
    ends = [e for e in t.events if type(e) is ev.TaskEnd]
    assert len(ends) == n_threads * PASSES and all(e.status == "ok" for e in ends)
    assert invariants(t) == []
    callers = {e.tid for e in t.events if type(e) is ev.TaskBegin}
    assert len(callers) == n_threads
    # each pass ran its 7 nodes (3 AccumulateGrad of its Linear... + the shared leaf's), each once
    for b in (e for e in t.events if type(e) is ev.TaskBegin):
        ran = [e.node for e in t.events if type(e) is ev.NodeBegin and e.task == b.task]
        assert len(ran) == len(set(ran)) > 5
