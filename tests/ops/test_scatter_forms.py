"""torch.scatter's forms against torch 2.13: a number as src (or value=, in and out of place:
ScatterBackward1, one edge), and a src larger than the index (torch reads its corner)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _run(m: Any, form: str, dim: int, index: list, shape: tuple) -> tuple:
    r = np.random.default_rng(0)
    x = m.tensor(r.standard_normal(shape), requires_grad=True)
    idx = m.tensor(index)
    big = m.tensor(r.standard_normal(tuple(s + 1 for s in shape)))
    y = {
        "number": lambda: x.scatter(dim, idx, 2.5),
        "int": lambda: m.scatter(x, dim, idx, 3),
        "value_kw": lambda: x.scatter(dim, idx, value=-1.0),
        "inplace_number": lambda: (x * 1).scatter_(dim, idx, 1),
        "inplace_value_kw": lambda: (x * 1).scatter_(dim, idx, value=0.5),
        "big_src": lambda: x.scatter(dim, idx, big),
        "inplace_big_src": lambda: (x * 1).scatter_(dim, idx, big),
    }[form]()
    names = [y.grad_fn.name(), [type(f).__name__ for f, _ in y.grad_fn.next_functions]]
    w = m.tensor(r.standard_normal(shape))
    (y * w).sum().backward()
    return names, y.detach().numpy().copy(), x.grad.numpy().copy()


FORMS = ["number", "int", "value_kw", "inplace_number", "inplace_value_kw", "big_src", "inplace_big_src"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dim,index,shape", [
    (1, [[0], [2]], (2, 3)),
    (0, [[1, 0, 1]], (2, 3)),
    (-1, [[[1, 0]], [[0, 0]]], (2, 2, 3)),
])
def test_scatter_forms_match_torch(form: str, dim: int, index: list, shape: tuple) -> None:
    want, got = _run(torch, form, dim, index, shape), _run(gradviz, form, dim, index, shape)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_scatter_one_hot_idiom_matches_torch() -> None:
    # the common one-hot: zeros(...).scatter_(1, labels.unsqueeze(1), 1)
    for m in (torch, gradviz):
        out = m.zeros(4, 5).scatter_(1, m.tensor([3, 0, 4, 3]).unsqueeze(1), 1)
        np.testing.assert_array_equal(out.numpy(), np.eye(5, dtype=np.float32)[[3, 0, 4, 3]])
