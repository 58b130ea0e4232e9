"""torch.div's rounding_mode (None, "trunc", "floor") against torch 2.13: values and dtypes
(integers stay integers when rounded), DivBackward2 and its edges (a number divisor has an empty
one), gradients (zero for a rounded quotient), the in-place form and the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz

MODES = [None, "trunc", "floor"]


def _graph(m: Any, mode: Any, other: str, inplace: bool) -> tuple:
    r = np.random.default_rng(3)
    x = m.tensor(r.standard_normal((3, 4)) * 5, requires_grad=True)
    b = {"number": -1.5, "tensor": m.tensor(r.standard_normal(4) + 2.0, requires_grad=True),
         "plain": m.tensor(r.standard_normal((3, 1)) - 2.0)}[other]
    if inplace:
        y = x * 1
        y.div_(b, rounding_mode=mode)
    else:
        y = m.div(x, b, rounding_mode=mode) if other != "plain" else x.div(b, rounding_mode=mode)
    edges = [None if f is None else type(f).__name__ for f, _ in y.grad_fn.next_functions]
    (y * m.arange(12.0).reshape(3, 4)).sum().backward()
    grads = [x.grad.numpy().copy()] + ([b.grad.numpy().copy()] if other == "tensor" else [])
    return y.grad_fn.name(), edges, y.detach().numpy().copy(), grads


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("other", ["number", "tensor", "plain"])
@pytest.mark.parametrize("mode", MODES)
def test_div_rounding_mode_graph_matches_torch(mode: Any, other: str, inplace: bool) -> None:
    want, got = _graph(torch, mode, other, inplace), _graph(gradviz, mode, other, inplace)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    for g, w in zip(got[3], want[3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("a,b", [
    ([7, -7, 6, -6, 0], 2), ([7, -7, 6, -6, 0], -4), ([7, -7], [2, -3]), ([7.5, -7.5, 0.0], 2),
    ([7, -7], 2.5), ([7.0, -7.0, 0.0], 0.0),
])
def test_div_rounding_mode_values_and_dtypes_match_torch(mode: Any, a: list, b: Any) -> None:
    def run(m: Any) -> Any:
        bb = m.tensor(b) if isinstance(b, list) else b
        return m.div(m.tensor(a), bb, rounding_mode=mode)

    want, got = run(torch), run(gradviz)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_div_rounding_mode_errors_match_torch() -> None:
    for m in (torch, gradviz):
        with pytest.raises(RuntimeError, match="one of None, 'trunc', or 'floor' but found 'round'"):
            m.div(m.ones(2), 2, rounding_mode="round")
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            m.div(m.tensor([3]), 0, rounding_mode="floor")
