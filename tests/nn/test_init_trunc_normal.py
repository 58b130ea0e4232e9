"""nn.init.trunc_normal_ against torch 2.13 from the same seed: torch 2.13 samples by rejection
(normals redrawn outside [a, b], or uniform proposals accepted against the density for a thin
slice), so the numbers and the generator's state afterwards must both match."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


@pytest.mark.parametrize("shape,kw", [
    ((3, 4), {"std": 0.02}),  # ViT-style init: almost all mass inside [-2, 2]
    ((20,), {"mean": 0.1, "std": 1.0, "a": -1.0, "b": 1.5}),
    ((64,), {"std": 1.0, "a": -0.5, "b": 0.5}),
    ((7, 5), {"mean": 0.0, "std": 1.0, "a": 1.0, "b": 3.0}),  # a thin tail slice: the uniform branch
    ((50,), {"mean": 3.0, "std": 0.5, "a": -2.0, "b": 2.0}),
    ((4, 4), {"dtype": "float64", "std": 2.0}),
])
def test_trunc_normal_matches_torch(shape: tuple, kw: dict) -> None:
    kw = dict(kw)
    dtype = kw.pop("dtype", "float32")
    outs = []
    for m in (torch, gradviz):
        m.manual_seed(7)
        t = m.nn.init.trunc_normal_(m.empty(*shape, dtype=getattr(m, dtype)), **kw)
        outs.append((t.numpy().copy(), m.rand(3).numpy().copy()))
    (tw, after_w), (tg, after_g) = outs
    np.testing.assert_allclose(tg, tw, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(after_g, after_w)


def test_trunc_normal_with_a_generator_matches_torch() -> None:
    outs = []
    for m in (torch, gradviz):
        g = m.Generator().manual_seed(3)
        outs.append(m.nn.init.trunc_normal_(m.empty(30), std=0.5, a=-0.2, b=0.9, generator=g).numpy().copy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
