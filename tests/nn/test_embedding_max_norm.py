"""F.embedding / nn.Embedding with max_norm against torch 2.13: the named rows renormed in place
(once each, by their norm_type-norm), the others untouched, weight's version bumped once, and the
gradient through the lookup."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _run(m: Any, idx: list, max_norm: float, norm_type: float, padding_idx: Any) -> tuple:
    r = np.random.default_rng(0)
    w = m.nn.Parameter(m.tensor(r.standard_normal((6, 4)) * 2, dtype=m.float32))
    v0 = w._version
    y = m.nn.functional.embedding(m.tensor(idx), w, padding_idx=padding_idx, max_norm=max_norm,
                                  norm_type=norm_type)
    bumps = w._version - v0
    (y * m.tensor(r.standard_normal(tuple(y.shape)), dtype=m.float32)).sum().backward()
    return y.grad_fn.name(), bumps, w.detach().numpy().copy(), y.detach().numpy().copy(), w.grad.numpy().copy()


@pytest.mark.parametrize("idx,max_norm,norm_type,padding_idx", [
    ([[1, 2], [1, 4]], 1.0, 2.0, None),
    ([0, 5, 5, 3], 2.5, 1.0, None),
    ([[2, 0, 2]], 0.5, 3.0, 0),
    ([3], 100.0, 2.0, None),  # no row over the bound
])
def test_embedding_max_norm_matches_torch(idx: list, max_norm: float, norm_type: float, padding_idx: Any) -> None:
    want, got = _run(torch, idx, max_norm, norm_type, padding_idx), _run(gradviz, idx, max_norm, norm_type, padding_idx)
    assert got[:2] == want[:2]
    for g, w in zip(got[2:], want[2:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_embedding_module_max_norm_matches_torch() -> None:
    outs = []
    for m in (torch, gradviz):
        m.manual_seed(0)
        e = m.nn.Embedding(7, 3, max_norm=1.0)
        e(m.tensor([[0, 1, 6]]))
        outs.append(e.weight.detach().numpy().copy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
