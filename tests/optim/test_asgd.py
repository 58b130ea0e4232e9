"""torch.optim.ASGD against torch 2.13's single-tensor code (the one it runs on CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


@pytest.mark.parametrize("kw", [{}, {"t0": 2, "weight_decay": 0.1}, {"maximize": True, "lambd": 0.01, "t0": 1}])
def test_asgd_matches_torch(kw):
    def run(mod):
        mod.manual_seed(0)
        lin = mod.nn.Linear(4, 3)
        opt = mod.optim.ASGD(lin.parameters(), lr=0.1, **kw)
        x = mod.ones(5, 4) * 0.3
        for _ in range(6):
            opt.zero_grad()
            (lin(x) ** 2).sum().backward()
            opt.step()
        st = opt.state[lin.weight]
        return (lin.weight.detach().numpy().copy(), st["ax"].numpy().copy(),
                [float(st[k]) for k in ("eta", "mu", "step")], sorted(st))

    a, b = run(gradviz), run(torch)
    # float32 rounding: the parameters agree to a few units in the last place, the counters exactly
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-5, atol=1e-6)
    assert a[2] == b[2] and a[3] == b[3]
