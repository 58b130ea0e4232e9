"""Finite-difference cases for the rows of sparse tensors, diag and elu (tests/engine/test_gradcheck.py
runs them with its own cases). Sparse results are compared through to_dense()."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv

F = gv.nn.functional
IDX = np.array([[0, 1, 0, 2], [1, 2, 1, 0]])  # (0, 1) twice: uncoalesced
DENSE = np.array([[0.5, 0, 2.0, 0], [0, 0, -3.0, 1.25], [4.0, 0, 0, 0]])


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _away(v: np.ndarray, margin: float = 0.1) -> np.ndarray:
    v = v.copy()
    close = np.abs(v) < margin
    v[close] = np.where(v[close] >= 0, margin, -margin) * 2
    return v


def _coo(v: gv.Tensor) -> gv.Tensor:
    return gv.sparse_coo_tensor(IDX, v, (3, 4), check_invariants=False)


def _fixed() -> gv.Tensor:
    return gv.tensor(DENSE, dtype=gv.float64).to_sparse()


SPARSE_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    ("sparse_coo_tensor", lambda v: _coo(v).to_dense(), [_randn(4)]),
    ("to_dense", lambda v: _coo(v).to_dense() * 2, [_randn(4)]),
    ("coalesce", lambda v: _coo(v).coalesce().to_dense(), [_randn(4)]),
    ("values", lambda v: _coo(v).coalesce().values(), [_randn(4)]),
    ("to_sparse", lambda a: a.to_sparse().to_dense(), [_away(_randn(3, 4))]),
    ("sparse_mask", lambda a: a.sparse_mask(_fixed()).to_dense(), [_randn(3, 4)]),
    ("mm_sparse", lambda w: gv.mm(_fixed(), w), [_randn(4, 2)]),
    ("mm_sparse", lambda a: gv.mm(a, _fixed().t()), [_randn(2, 4)]),
    ("mm_sparse", lambda v, w: gv.spmm(_coo(v), w), [_randn(4), _randn(4, 2, seed=1)]),
    ("sparse_addmm", lambda v, w: gv.sparse.mm(_coo(v), w), [_randn(4), _randn(4, 2, seed=1)]),
    ("sparse_sum", lambda v: gv.sparse.sum(_coo(v), dim=1).to_dense(), [_randn(4)]),
    ("sparse_sum", lambda v: gv.sparse.sum(_coo(v), dim=(0, 1)), [_randn(4)]),
    ("diag_embed", lambda v: gv.diag(v, 1), [_randn(3)]),
    ("diag_embed", lambda a: gv.diag_embed(a, -1, 0, 2), [_randn(2, 3)]),
    ("diag_diagonal_copy", lambda a: gv.diag(a, -1), [_randn(3, 4)]),
    ("elu", lambda a: F.elu(a, 0.7), [_away(_randn(3, 4))]),
    ("elu_", lambda a: F.elu(a * 1, 0.7, inplace=True), [_away(_randn(3, 4))]),
]
