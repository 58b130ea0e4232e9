"""nn.MultiheadAttention with kdim/vdim against torch 2.13 from the same seed: the separate
q/k/v projection weights (names, initialisation order), the graph (node names along it),
outputs, attention weights and gradients, batch_first or not, with and without biases and
need_weights."""

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


def _run(m: Any, batch_first: bool, need_weights: bool, bias: bool, kdim: int, vdim: int) -> tuple:
    m.manual_seed(0)
    mha = m.nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=batch_first, bias=bias)
    r = np.random.default_rng(0)

    def shape(n: int, e: int) -> tuple:
        return (2, n, e) if batch_first else (n, 2, e)

    q = m.tensor(r.standard_normal(shape(3, 8)), dtype=m.float32, requires_grad=True)
    k = m.tensor(r.standard_normal(shape(4, kdim)), dtype=m.float32)
    v = m.tensor(r.standard_normal(shape(4, vdim)), dtype=m.float32, requires_grad=True)
    kpm = m.tensor([[False, False, True, False], [False, False, False, False]])
    out, w = mha(q, k, v, need_weights=need_weights, key_padding_mask=kpm)
    names = _walk(out)
    (out.pow(2).sum() + (w.sum() if w is not None else 0)).backward()
    grads = {n: p.grad.numpy().copy() for n, p in mha.named_parameters()}
    return ([n for n, _ in mha.named_parameters()], names, out.detach().numpy(),
            None if w is None else w.detach().numpy(), q.grad.numpy(), v.grad.numpy(), grads)


@pytest.mark.parametrize("kdim,vdim", [(5, 6), (8, 3)])
@pytest.mark.parametrize("batch_first,need_weights,bias", [
    (False, True, True), (True, False, True), (False, False, False), (True, True, False),
])
def test_mha_kdim_vdim_matches_torch(batch_first: bool, need_weights: bool, bias: bool, kdim: int, vdim: int) -> None:
    want = _run(torch, batch_first, need_weights, bias, kdim, vdim)
    got = _run(gradviz, batch_first, need_weights, bias, kdim, vdim)
    assert got[:2] == want[:2]
    for g, w in zip(got[2:6], want[2:6], strict=True):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    for n in want[6]:
        np.testing.assert_allclose(got[6][n], want[6][n], rtol=1e-4, atol=1e-5)
