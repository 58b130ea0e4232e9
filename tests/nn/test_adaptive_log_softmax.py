"""nn.AdaptiveLogSoftmaxWithLoss against torch 2.13 from the same seed: parameters, repr, the
loss's graph (node names along it), outputs, loss, gradients, log_prob, predict, the unbatched
form and the error for a target out of range."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _walk(t: Any) -> list:
    seen, out, stack = set(), [], [t.grad_fn]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        out.append(f.name().split("::")[-1])
        stack.extend(g for g, _ in reversed(f.next_functions))
    return out


def _run(m: Any, cutoffs: list, head_bias: bool, targets: list) -> tuple:
    m.manual_seed(0)
    asm = m.nn.AdaptiveLogSoftmaxWithLoss(8, 12, cutoffs, div_value=2.0, head_bias=head_bias)
    x = m.tensor(np.random.default_rng(0).standard_normal((len(targets), 8)), dtype=m.float32, requires_grad=True)
    o = asm(x, m.tensor(targets))
    names = _walk(o.loss)
    o.loss.backward()
    grads = [p.grad.numpy().copy() if p.grad is not None else None for p in asm.parameters()]
    return ([n for n, _ in asm.named_parameters()], repr(asm), names, o.output.detach().numpy(), o.loss.item(),
            x.grad.numpy(), grads, asm.log_prob(x).detach().numpy(), asm.predict(x).tolist())


@pytest.mark.parametrize("cutoffs,head_bias,targets", [
    ([3, 7], True, [0, 4, 11, 2, 8, 5]),
    ([3, 7], False, [0, 1, 2, 2]),  # shortlist only: the clusters get no gradient
    ([5], False, [6, 7, 11]),  # one cluster, every target in it
    ([2, 4, 9], True, [1, 3, 5, 10, 0, 9, 4]),
])
def test_adaptive_log_softmax_matches_torch(cutoffs: list, head_bias: bool, targets: list) -> None:
    want, got = _run(torch, cutoffs, head_bias, targets), _run(gradviz, cutoffs, head_bias, targets)
    assert got[:3] == want[:3]
    np.testing.assert_allclose(got[3], want[3], rtol=1e-5, atol=1e-6)
    assert got[4] == pytest.approx(want[4], rel=1e-5)
    np.testing.assert_allclose(got[5], want[5], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[6], want[6], strict=True):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[7], want[7], rtol=1e-5, atol=1e-6)
    assert got[8] == want[8]


def test_unbatched_and_out_of_range_match_torch() -> None:
    outs, msgs = [], []
    for m in (torch, gradviz):
        m.manual_seed(0)
        asm = m.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2])
        o = asm(m.ones(4), m.tensor(5))
        outs.append((tuple(o.output.shape), round(o.loss.item(), 5)))
        with pytest.raises(RuntimeError) as e:
            asm(m.ones(2, 4), m.tensor([0, 6]))
        msgs.append(str(e.value))
    assert outs[0] == outs[1] and msgs[0] == msgs[1]
