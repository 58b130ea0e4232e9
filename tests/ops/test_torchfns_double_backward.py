"""Double backward through the new ops whose formulas are differentiable (issue 34's coverage):
the gradient taken with create_graph=True, its graph's root node, and the second derivative,
against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz

X = [[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]]

PROGRAMS = {
    "i0": lambda T, x: T.i0(x),
    "special.i1e": lambda T, x: T.special.i1e(x),
    "sinc": lambda T, x: T.sinc(x),
    "erfcx": lambda T, x: T.special.erfcx(x),
    "log_ndtr": lambda T, x: T.special.log_ndtr(x),
    "xlog1py": lambda T, x: T.special.xlog1py(x, x.abs() + 0.5),
    "logcumsumexp": lambda T, x: T.logcumsumexp(x, 1),
    "cummax": lambda T, x: T.cummax(x, 1)[0] * x,
    "median dim": lambda T, x: T.median(x * x, 1)[0],
    "aminmax": lambda T, x: T.aminmax(x * x, dim=0)[1],
    "index_copy": lambda T, x: T.index_copy(x * x, 1, T.tensor([2, 0]), x[:, :2] ** 3),
    "scatter_reduce prod": lambda T, x: T.scatter_reduce(x, 1, T.tensor([[0, 0], [1, 1]]), x[:, 1:] ** 2, "prod"),
    "kron": lambda T, x: T.kron(x, x),
    "renorm": lambda T, x: T.renorm(x, 2, 0, 1.0),
    "cross": lambda T, x: T.linalg.cross(x, x * x),
    "tan_": lambda T, x: (x * 1).tan_(),
    "quantile": lambda T, x: T.quantile(x * x, 0.3, dim=1),
}


def _second(T, program):
    x = T.tensor(X, dtype=T.float64, requires_grad=True)
    y = program(T, x)
    (g,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
    name = g.grad_fn.name().split("::")[-1] if g.grad_fn is not None else None
    (g2,) = T.autograd.grad((g * g).sum(), x)
    return np.asarray(g.tolist()), name, np.asarray(g2.tolist())


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_double_backward_matches_torch(name):
    want = _second(torch, PROGRAMS[name])
    got = _second(gradviz, PROGRAMS[name])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-11)
    assert got[1] == want[1]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-8, atol=1e-10)


def test_cdist_double_backward_refused_as_torch():
    for T in (torch, gradviz):
        x = T.tensor(X, dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(T.cdist(x, x.flip(0) * 2).sum(), x, create_graph=True)
        assert [f.name().split("::")[-1] for f, _ in g.grad_fn.next_functions][0] == "CdistBackwardBackward0"
        with pytest.raises((RuntimeError, NotImplementedError), match="the derivative for '_cdist_backward' is not"):
            g.sum().backward()
