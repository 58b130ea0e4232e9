"""tanh's and sigmoid's double backward record torch 2.13's graphs: the output's gradient of
TanhBackwardBackward0 is grad * (-2 * output * grad_output) and SigmoidBackwardBackward0's is
grad * grad_output * (-2 * output + 1), the scalar products as MulBackward1 / AddBackward1 (a PINN's
second derivatives through tanh layers showed it)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


def _names(t) -> list[str]:
    out, seen, stack = [], set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n.name().rsplit("::", 1)[-1])
        stack.extend(f for f, _ in reversed(n.next_functions))
    return out


def _third(T, act: str):  # noqa: N803 - the engine's module
    x = T.tensor(np.linspace(-1.5, 1.5, 6), requires_grad=True)
    w = T.tensor(np.linspace(0.5, -0.7, 6), requires_grad=True)
    y = getattr(T, act)(x * w)
    (g1,) = T.autograd.grad(y.sum(), x, create_graph=True)
    (g2,) = T.autograd.grad((g1 * g1).sum(), x, create_graph=True)
    (g3,) = T.autograd.grad(g2.sum(), w, create_graph=True)
    return g2, g3


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_double_backward_graph_matches_torch(act: str) -> None:
    want, got = _third(torch, act), _third(gradviz, act)
    for w, g in zip(want, got):
        assert _names(g) == _names(w)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12)
