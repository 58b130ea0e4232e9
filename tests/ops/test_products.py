"""Products, distances and matrix builders (issue 34's coverage) against torch: values, the node
and its next nodes, gradients."""

from __future__ import annotations

import math

import pytest
from _fns_diff import check

X = [[0.5, -1.25, 2.0], [1.5, 0.75, -0.5], [0.25, 1.0, -2.0]]
Y = [[1.0, 2.0, -0.5], [0.25, -3.0, 1.0], [2.0, 0.5, 1.5]]
W = [[1.0, 2.0, -0.5], [0.25, -3.0, 1.0]]
V = [0.5, -1.0, 2.0]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "cross": lambda T: T.cross(_x(T), _x(T, Y), dim=1),
    "cross default dim": lambda T: T.cross(_x(T, W), _x(T, W[::-1])),
    "linalg.cross broadcast": lambda T: T.linalg.cross(_x(T), _x(T, [V])),
    "Tensor.cross": lambda T: _x(T).cross(_x(T, Y), 0),
    "kron": lambda T: T.kron(_x(T), _x(T, W)),
    "kron 1d 2d": lambda T: _x(T, V).kron(_x(T, W)),
    "inner": lambda T: T.inner(_x(T), _x(T, W)),
    "inner vectors": lambda T: T.inner(_x(T, V), _x(T, V)),
    "tensordot": lambda T: T.tensordot(_x(T), _x(T, Y), 1),
    "tensordot dims lists": lambda T: T.tensordot(_x(T, [X, Y]), _x(T, W), dims=([2], [1])),
    "tensordot dims 2": lambda T: T.tensordot(_x(T), _x(T, Y)),
    "chain_matmul": lambda T: T.chain_matmul(_x(T), _x(T, Y), _x(T)),
    "addbmm": lambda T: T.addbmm(_x(T), _x(T, [X, Y]), _x(T, [Y, X]), beta=0.5, alpha=2),
    "Tensor.addbmm_": lambda T: (_x(T) * 1).addbmm_(_x(T, [X, Y]), _x(T, [Y, X])),
    "addmv": lambda T: T.addmv(_x(T, V), _x(T), _x(T, V), alpha=3),
    "addmv_": lambda T: T.addmv_(_x(T, V) * 1, _x(T, W).t(), _x(T, V[:2])),
    "addr": lambda T: T.addr(_x(T), _x(T, V), _x(T, V), beta=2),
    "Tensor.addr_": lambda T: (_x(T) * 1).addr_(_x(T, V), _x(T, V)),
    "cdist": lambda T: T.cdist(_x(T), _x(T, W)),
    "cdist p=1": lambda T: T.cdist(_x(T), _x(T, W), p=1),
    "cdist p=3 batched": lambda T: T.cdist(_x(T, [X, Y]), _x(T, [W, W]), p=3),
    "cdist p=inf": lambda T: T.cdist(_x(T), _x(T, W), p=math.inf),
    "cdist many rows (matmul form)": lambda T: T.cdist(_x(T, [[i * 0.1, 1.0 - i * 0.05] for i in range(30)]),
                                                     _x(T, [[0.5, 0.25], [2.0, -1.0]])),
    "cdist forced mm": lambda T: T.cdist(_x(T), _x(T, W), compute_mode="use_mm_for_euclid_dist"),
    "pdist": lambda T: T.pdist(_x(T)),
    "pdist p=1.5": lambda T: T.pdist(_x(T, X + W), 1.5),
    "dist": lambda T: T.dist(_x(T), _x(T, Y)),
    "dist broadcast p=3": lambda T: _x(T).dist(_x(T, V), 3),
    "renorm": lambda T: T.renorm(_x(T), 2, 0, 1.5),
    "renorm p=1 dim 1": lambda T: _x(T).renorm(1, 1, 2.0),
    "renorm p=inf": lambda T: T.renorm(_x(T), math.inf, 0, 1.0),
    "Tensor.renorm_": lambda T: (_x(T) * 1).renorm_(3, 0, 1.0),
    "block_diag": lambda T: T.block_diag(_x(T), _x(T, V), _x(T, 2.5), _x(T, W)),
    "diagflat": lambda T: T.diagflat(_x(T, W)),
    "diagflat offset": lambda T: _x(T, V).diagflat(-1),
    "rot90": lambda T: T.rot90(_x(T, W)),
    "rot90 k=3 dims": lambda T: _x(T, [X, Y]).rot90(3, [2, 0]),
    "rot90 k=-2": lambda T: T.rot90(_x(T, W), -2),
    # (torch 2.13's vander cannot backward: its in-place cumprod invalidates what it saved)
    "vander": lambda T: (lambda v: (v.detach(), v.grad_fn.name()))(T.vander(_x(T, V))),
    "vander N increasing": lambda T: T.vander(T.tensor(V), N=4, increasing=True),
    "vander ints": lambda T: T.vander(T.tensor([1, 2, 3])),
    "linalg.vander": lambda T: T.linalg.vander(_x(T, V)),
    "linalg.vander batched N": lambda T: T.linalg.vander(_x(T, W), N=4),
    "trapezoid": lambda T: T.trapezoid(_x(T)),
    "trapezoid dx dim 0": lambda T: T.trapezoid(_x(T), dx=0.5, dim=0),
    "trapezoid x": lambda T: T.trapezoid(_x(T), _x(T, [0.0, 0.5, 2.0])),
    "trapz": lambda T: T.trapz(_x(T), dx=2.0),
    "cumulative_trapezoid": lambda T: T.cumulative_trapezoid(_x(T)),
    "cumulative_trapezoid x": lambda T: T.cumulative_trapezoid(_x(T), _x(T, [0.0, 0.5, 2.0]), dim=0),
    "cartesian_prod": lambda T: T.cartesian_prod(_x(T, V), _x(T, V[:2])),
    "cartesian_prod three": lambda T: T.cartesian_prod(T.tensor([1, 2]), T.tensor([3]), T.tensor([4, 5])),
    "combinations": lambda T: T.combinations(_x(T, V)),
    "combinations r=3 replacement": lambda T: T.combinations(_x(T, V), 3, with_replacement=True),
    "cov": lambda T: T.cov(_x(T, W)),
    "cov 1d correction 0": lambda T: T.cov(_x(T, V), correction=0),
    "cov weights": lambda T: _x(T).cov(fweights=T.tensor([1, 2, 1]), aweights=_x(T, [0.5, 1.0, 2.0])),
    "corrcoef": lambda T: T.corrcoef(_x(T)),
    "logdet": lambda T: T.logdet(_x(T)),
    "logdet positive": lambda T: _x(T, [[2.0, 0.5], [0.25, 1.0]]).logdet(),
}


@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim arg is deprecated")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name], rtol=1e-10, atol=1e-12)


def test_cross_without_dim_warns_as_torch():
    import gradviz

    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
        gradviz.cross(gradviz.ones(3), gradviz.ones(3))
