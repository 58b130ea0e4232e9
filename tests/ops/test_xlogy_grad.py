"""xlogy's gradient for self against torch 2.13: xlogy(grad, other), zero only where self is 0
and other <= 0, so a zero self still gets log(other) (Dirichlet/Beta log_prob at a
concentration of 1 relies on it); the double-backward graph is torch's (MaskedFill over Xlogy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz

SELF = [0.0, 1.0, 0.0, 0.0, 1.0, 2.0]
OTHER = [0.6, 0.1, 0.0, -1.0, 0.0, -1.0]


@pytest.mark.parametrize("other", [OTHER, -1.0, 2.0], ids=["tensor", "negative scalar", "positive scalar"])
def test_xlogy_self_gradient_matches_torch(other) -> None:
    out = []
    for T in (torch, gradviz):
        s = T.tensor(SELF, dtype=T.float64, requires_grad=True)
        o = T.tensor(other, dtype=T.float64, requires_grad=True) if isinstance(other, list) else other
        y = T.xlogy(s, o)
        (g,) = T.autograd.grad(y, s, T.full((6,), 2.0, dtype=T.float64, requires_grad=True), create_graph=True)
        out.append((g.detach().numpy(), g.grad_fn.name(), [f.name() for f, _ in g.grad_fn.next_functions if f]))
    (tv, tn, tnext), (gv, gn, gnext) = out
    np.testing.assert_array_equal(gv, tv)
    assert (gn, gnext) == (tn, tnext)
