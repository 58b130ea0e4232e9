"""Order statistics and counting ops (issue 34's coverage): values, indices, node names and
gradients against torch."""

from __future__ import annotations

import math

import pytest
import torch
from _fns_diff import check

import gradviz

X = [[0.5, -1.25, 2.0, 0.1], [1.5, 0.75, -0.5, 3.0], [0.25, 1.0, -2.0, -0.3]]
NAN = [[0.5, math.nan, 2.0, 0.1], [1.5, 0.75, -0.5, 3.0], [math.nan, 1.0, -2.0, -0.3]]
TIES = [[1.0, 3.0, 3.0, 1.0, 2.0], [2.0, 2.0, 5.0, 5.0, 0.0]]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "median": lambda T: T.median(_x(T)),
    "median ties share": lambda T: T.median(_x(T, TIES)),
    "median dim": lambda T: T.median(_x(T), 1),
    "Tensor.median dim keepdim": lambda T: _x(T).median(0, keepdim=True),
    "median nan": lambda T: T.median(T.tensor(NAN), 1),
    "nanmedian": lambda T: T.nanmedian(_x(T, NAN)),
    "nanmedian dim": lambda T: _x(T, NAN).nanmedian(1),
    "kthvalue": lambda T: T.kthvalue(_x(T), 2, 1),
    "kthvalue dim 0 keepdim": lambda T: _x(T).kthvalue(3, 0, True),
    "mode": lambda T: T.mode(_x(T, TIES), 1),
    "mode dim 0": lambda T: _x(T, [[1.0, 2.0], [1.0, 3.0], [2.0, 3.0]]).mode(0),
    "cummax": lambda T: T.cummax(_x(T), 1),
    "cummax ties": lambda T: _x(T, TIES).cummax(1),
    "cummin": lambda T: T.cummin(_x(T, TIES), 1),
    "cummin dim 0": lambda T: _x(T).cummin(0),
    "logcumsumexp": lambda T: T.logcumsumexp(_x(T), 1),
    "logcumsumexp dim 0": lambda T: _x(T).logcumsumexp(0),
    "aminmax": lambda T: T.aminmax(_x(T)),
    "aminmax ties": lambda T: T.aminmax(_x(T, TIES)),
    "aminmax dim": lambda T: _x(T).aminmax(dim=1),
    "aminmax dim keepdim": lambda T: T.aminmax(_x(T, TIES), dim=0, keepdim=True),
    "quantile": lambda T: T.quantile(_x(T), 0.3),
    "quantile dim": lambda T: T.quantile(_x(T), 0.6, dim=1),
    "quantile q tensor dim 0": lambda T: _x(T).quantile(T.tensor([0.25, 0.5, 0.9], dtype=T.float64), dim=0),
    "quantile keepdim": lambda T: T.quantile(_x(T), T.tensor([0.2, 0.7], dtype=T.float64), dim=1, keepdim=True),
    "quantile all keepdim": lambda T: T.quantile(_x(T), 0.5, keepdim=True),
    "quantile lower": lambda T: T.quantile(_x(T), 0.4, dim=1, interpolation="lower"),
    "quantile higher": lambda T: T.quantile(_x(T), 0.4, interpolation="higher"),
    "quantile midpoint": lambda T: T.quantile(_x(T), 0.4, dim=0, interpolation="midpoint"),
    "quantile nearest": lambda T: T.quantile(_x(T), 0.45, dim=1, interpolation="nearest"),
    "quantile nan": lambda T: T.quantile(_x(T, NAN), 0.3, dim=1),
    "nanquantile": lambda T: T.nanquantile(_x(T, NAN), 0.3),
    "nanquantile dim": lambda T: _x(T, NAN).nanquantile(T.tensor([0.1, 0.8], dtype=T.float64), dim=1),
    "histc": lambda T: T.histc(T.tensor([1.0, 2.0, 1.0, 4.0, 0.0]), bins=4, min=0, max=3),
    "histc auto range": lambda T: T.tensor(X).histc(5),
    "histogram": lambda T: T.histogram(T.tensor(X, dtype=T.float64), 4),
    "histogram edges weight": lambda T: T.tensor(X, dtype=T.float64).histogram(
        T.tensor([-2.0, 0.0, 1.0, 3.0], dtype=T.float64), weight=T.tensor(X, dtype=T.float64).abs()),
    "bincount": lambda T: T.bincount(T.tensor([1, 1, 3, 0])),
    "bincount weights minlength": lambda T: T.tensor([1, 1, 3]).bincount(T.tensor([0.5, 1.0, 2.0]), minlength=6),
    "bucketize": lambda T: T.bucketize(T.tensor([[1, 5], [9, 10]]), T.tensor([1, 3, 5, 7, 9])),
    "bucketize right int32": lambda T: T.bucketize(T.tensor([1.0, 5.5, 9.0]), T.tensor([1.0, 3.0, 5.0, 7.0, 9.0]),
                                                   right=True, out_int32=True),
    "searchsorted": lambda T: T.searchsorted(T.tensor([1, 3, 5, 7, 9]), T.tensor([3, 6, 9])),
    "searchsorted side batched": lambda T: T.searchsorted(T.tensor([[1, 3, 5], [2, 4, 6]]), T.tensor([[3, 6], [1, 4]]),
                                                          side="right"),
    "searchsorted scalar sorter": lambda T: T.searchsorted(T.tensor([5, 1, 3]), 4, sorter=T.tensor([1, 2, 0])),
    "isin": lambda T: T.isin(T.tensor([[1, 2], [3, 4]]), T.tensor([2, 3])),
    "isin invert scalar": lambda T: T.isin(T.tensor([1, 2, 3]), 2, invert=True),
    "unique_consecutive": lambda T: T.unique_consecutive(T.tensor([1, 1, 2, 2, 3, 1]), return_inverse=True,
                                                         return_counts=True),
    "unique_consecutive dim": lambda T: T.tensor([[1, 1], [1, 1], [2, 3]]).unique_consecutive(dim=0,
                                                                                              return_counts=True),
    "unique_consecutive node": lambda T: T.unique_consecutive(_x(T, TIES)).detach(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name])


def test_unique_consecutive_has_no_derivative():
    for T in (torch, gradviz):
        y = T.unique_consecutive(T.tensor([1.0, 1.0, 2.0], requires_grad=True))
        assert y.grad_fn.name().endswith("UniqueConsecutiveBackward0")
        with pytest.raises(RuntimeError, match="the derivative for 'unique_consecutive' is not implemented"):
            y.sum().backward()
