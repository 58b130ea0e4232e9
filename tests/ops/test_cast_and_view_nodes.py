"""Graph shapes that differed from torch 2.13 in small ways: softmax/log_softmax/softmin with a
dtype cast first (ToCopyBackward0 under the softmax), mean with a dtype on one node (no
ToCopyBackward0), repeat_interleave of a 1-d input without a ViewBackward0, kron's inputs
unsafe-viewed. Node names along the graph, values and gradients against torch."""

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


CASES = {
    "softmax_f64": lambda m, x: x.softmax(1, dtype=m.float64),
    "torch_softmax_f64": lambda m, x: m.softmax(x, -1, dtype=m.float64),
    "log_softmax_f64": lambda m, x: m.nn.functional.log_softmax(x, 1, dtype=m.float64),
    "log_softmax_same": lambda m, x: m.nn.functional.log_softmax(x, 1, dtype=m.float32),
    "softmin_f64": lambda m, x: m.nn.functional.softmin(x, 0, dtype=m.float64),
    "softmax_f64_to_f32": lambda m, x: m.nn.functional.softmax(x.double() * 2, 1, dtype=m.float32),
    "mean_f64": lambda m, x: x.mean(dtype=m.float64),
    "mean_dim_f64": lambda m, x: x.mean(1, keepdim=True, dtype=m.float64),
    "mean_dims_f64": lambda m, x: m.mean(x, (0, 1), dtype=m.float64),
    "mean_f64_to_f32": lambda m, x: x.double().mean(0, dtype=m.float32),
    "repeat_interleave_1d": lambda m, x: x[0].repeat_interleave(3),
    "repeat_interleave_2d": lambda m, x: x.repeat_interleave(2),
    "repeat_interleave_t": lambda m, x: x.t().repeat_interleave(2),
    "repeat_interleave_dim": lambda m, x: x.repeat_interleave(2, dim=1),
    "kron_2d": lambda m, x: m.kron(x, x[:2, :2]),
    "kron_1d": lambda m, x: m.kron(x[0], x[1]),
    "kron_mixed": lambda m, x: m.kron(x[None], x[0]),
}


def _run(m: Any, f: Any) -> tuple:
    r = np.random.default_rng(0)
    x = m.tensor(r.standard_normal((3, 4)), dtype=m.float32, requires_grad=True)
    y = f(m, x)
    w = m.tensor(r.standard_normal(tuple(y.shape)), dtype=y.dtype)
    (y * w).sum().backward()
    return _walk(y), str(y.dtype), y.detach().double().numpy(), str(x.grad.dtype), x.grad.numpy().copy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_matches_torch(name: str) -> None:
    want, got = _run(torch, CASES[name]), _run(gradviz, CASES[name])
    assert got[0] == want[0]
    assert got[1] == want[1] and got[3] == want[3]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[4], want[4], rtol=1e-5, atol=1e-6)


def test_mean_dtype_errors_match_torch() -> None:
    for m in (torch, gradviz):
        with pytest.raises(RuntimeError, match="Input dtype must be"):
            m.tensor([1, 2]).mean()
        with pytest.raises(RuntimeError, match="Optional dtype must be"):
            m.tensor([1.0, 2.0]).mean(dtype=m.int64)
