"""Ops that take sizes or dims as varargs also take them by torch's keyword (``x.flip(dims=(1,))``,
as torch's docs write it; ``reshape(shape=)``, ``view(size=)``, ``expand(size=)``, ``permute(dims=)``,
``repeat(repeats=)``), and all/any reduce over a tuple of dims: values, nodes and gradients against
torch 2.13."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz

CASES = {
    "flip": lambda m, x: x.flip(dims=(1,)),
    "flip_list": lambda m, x: m.flip(x, dims=[0, 2]),
    "flip_neg": lambda m, x: x.flip(dims=(-1,)),
    "permute": lambda m, x: x.permute(dims=(2, 0, 1)),
    "torch_permute": lambda m, x: m.permute(x, dims=[1, 2, 0]),
    "reshape": lambda m, x: x.reshape(shape=(3, -1)),
    "torch_reshape": lambda m, x: m.reshape(x, shape=(-1,)),
    "view": lambda m, x: x.view(size=(6, 2)),
    "expand": lambda m, x: x[:, :1].expand(size=(2, 4, 2)),
    "expand_lead": lambda m, x: x.expand(size=[3, -1, -1, -1]),
    "repeat": lambda m, x: x.repeat(repeats=(1, 2, 1, 2)),
}


def _run(m: Any, f: Any) -> tuple:
    r = np.random.default_rng(0)
    x = m.tensor(r.standard_normal((2, 3, 2)), requires_grad=True)
    y = f(m, x)
    w = m.tensor(r.standard_normal(tuple(y.shape)))
    (y * w).sum().backward()
    return y.grad_fn.name(), y.detach().numpy().copy(), x.grad.numpy().copy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_keyword_form_matches_torch(name: str) -> None:
    want, got = _run(torch, CASES[name]), _run(gradviz, CASES[name])
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2])


@pytest.mark.parametrize("call", [
    lambda x: x.flip(dim=1), lambda x: x.reshape(size=(6,)), lambda x: x.permute(dim=(1, 0)),
])
def test_other_keywords_are_refused_as_torch(call: Any) -> None:
    for m in (torch, gradviz):
        with pytest.raises(TypeError):
            call(m.zeros(2, 3))


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dim,keepdim", [((0, 1), False), ([0, -1], False), ((1, 2), True), ((), False), (1, False)])
def test_bool_reductions_over_dims_match_torch(op: str, dim: Any, keepdim: bool) -> None:
    data = np.random.default_rng(1).standard_normal((3, 2, 4)) > 0
    want = getattr(torch.tensor(data), op)(dim=dim, keepdim=keepdim).numpy()
    got = getattr(gradviz.tensor(data), op)(dim=dim, keepdim=keepdim).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
