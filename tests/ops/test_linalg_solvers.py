"""torch.linalg's inverses, determinants, solves, Cholesky and the ops composed of them (issue 34
item 1's coverage), compared with torch: values, the node and its next nodes, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


def _mats(T):
    T.manual_seed(0)
    a = (T.randn(3, 3, dtype=T.float64) + 3 * T.eye(3, dtype=T.float64)).requires_grad_()
    b = T.randn(3, 2, dtype=T.float64, requires_grad=True)
    v = T.randn(3, dtype=T.float64, requires_grad=True)
    return a, b, v


CASES = {
    "det": lambda T, a, b, v: T.linalg.det(a),
    "torch.det": lambda T, a, b, v: T.det(a),
    "batched det": lambda T, a, b, v: T.linalg.det(T.stack([a, a * 2])),
    "slogdet logabsdet": lambda T, a, b, v: T.linalg.slogdet(a)[1],
    "slogdet sign": lambda T, a, b, v: T.linalg.slogdet(a).sign,
    "inv": lambda T, a, b, v: T.linalg.inv(a),
    "inv_ex": lambda T, a, b, v: T.linalg.inv_ex(a)[0],
    "torch.inverse": lambda T, a, b, v: T.inverse(a),
    "solve": lambda T, a, b, v: T.linalg.solve(a, b),
    "solve vector": lambda T, a, b, v: T.linalg.solve(a, v),
    "solve_ex": lambda T, a, b, v: T.linalg.solve_ex(a, b)[0],
    "cholesky": lambda T, a, b, v: T.linalg.cholesky(a @ a.t()),
    "cholesky upper": lambda T, a, b, v: T.linalg.cholesky(a @ a.t(), upper=True),
    "cholesky_ex": lambda T, a, b, v: T.linalg.cholesky_ex(a @ a.t())[0],
    "matrix_power 0": lambda T, a, b, v: T.linalg.matrix_power(a, 0),
    "matrix_power 2": lambda T, a, b, v: T.linalg.matrix_power(a, 2),
    "matrix_power 3": lambda T, a, b, v: T.matrix_power(a, 3),
    "matrix_power 5": lambda T, a, b, v: T.linalg.matrix_power(a, 5),
    "matrix_power -1": lambda T, a, b, v: T.linalg.matrix_power(a, -1),
    "matrix_power -2": lambda T, a, b, v: T.linalg.matrix_power(a, -2),
    "multi_dot": lambda T, a, b, v: T.linalg.multi_dot([a, a, b]),
    "multi_dot vectors": lambda T, a, b, v: T.linalg.multi_dot([v, a, v]),
    "vecdot": lambda T, a, b, v: T.linalg.vecdot(a, a * 2),
    "matmul": lambda T, a, b, v: T.linalg.matmul(a, b),
    "diagonal": lambda T, a, b, v: T.linalg.diagonal(a),
}


def _names(fn):
    return fn.name().split("::")[-1], [f.name().split("::")[-1] if f else None for f, _ in fn.next_functions]


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    runs = []
    for T in (torch, gradviz):
        a, b, v = _mats(T)
        out = CASES[name](T, a, b, v)
        names = _names(out.grad_fn)
        out.sum().backward()
        runs.append((out.tolist(), names, [None if t.grad is None else t.grad.tolist() for t in (a, b, v)]))
    (want, want_names, want_grads), (got, got_names, got_grads) = runs
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert got_names == want_names
    for g, w in zip(got_grads, want_grads, strict=True):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_slogdet_prints_as_torchs_return_type():
    a = [[2.0, 0.0], [0.0, 3.0]]
    assert repr(gradviz.linalg.slogdet(gradviz.tensor(a))) == repr(torch.linalg.slogdet(torch.tensor(a)))


def test_a_create_graph_backward_through_them_is_refused_naming_the_node():
    a = gradviz.eye(2, dtype=gradviz.float64).requires_grad_()
    (g,) = gradviz.autograd.grad(gradviz.linalg.det(a * 2), a, create_graph=False)
    assert g.tolist() == [[4.0, 0.0], [0.0, 4.0]]
    with pytest.raises(NotImplementedError, match="LinalgDetBackward0"):
        gradviz.autograd.grad(gradviz.linalg.det(a * 2), a, create_graph=True)
