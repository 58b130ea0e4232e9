"""Finite-difference cases for the rows of gradviz/ops/math_more.py and linalg_solvers.py
(tests/engine/test_gradcheck.py runs them with its own cases)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _uniform(lo: float, hi: float, *shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def _well_conditioned(n: int, seed: int = 0) -> np.ndarray:
    return _randn(n, n, seed=seed) + 3.0 * np.eye(n)


def _spd(b: gv.Tensor) -> gv.Tensor:
    return b @ b.T + gv.eye(b.shape[0], dtype=b.dtype)


MORE_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    ("addcdiv", lambda a, t1, t2: gv.addcdiv(a, t1, t2, value=0.5),
     [_randn(2, 3), _randn(2, 3, seed=1), _uniform(0.5, 2.0, 2, 3, seed=2)]),
    ("addcmul", lambda a, t1, t2: gv.addcmul(a, t1, t2, value=2.0),
     [_randn(2, 3), _randn(2, 3, seed=1), _randn(2, 3, seed=2)]),
    ("copysign", lambda a, b: gv.copysign(a, b), [_uniform(0.5, 2.0, 2, 3), _randn(2, 3, seed=1)]),
    ("copysign_scalar", lambda a: gv.copysign(a, -1.0), [_uniform(0.5, 2.0, 2, 3)]),
    ("deg2rad", lambda a: gv.deg2rad(a), [_randn(2, 3)]),
    ("rad2deg", lambda a: gv.rad2deg(a), [_randn(2, 3)]),
    ("exp2", lambda a: gv.exp2(a), [_randn(2, 3)]),
    ("tan", lambda a: gv.tan(a), [_uniform(-1.0, 1.0, 2, 3)]),
    ("logaddexp2", lambda a, b: gv.logaddexp2(a, b), [_randn(2, 3), _randn(2, 3, seed=1)]),
    ("fmax", lambda a, b: gv.fmax(a, b), [_randn(2, 3), _randn(2, 3, seed=1)]),
    ("fmin", lambda a, b: gv.fmin(a, b), [_randn(2, 3), _randn(2, 3, seed=1)]),
    ("nansum", lambda a: gv.nansum(a, 1), [_randn(2, 3)]),
    ("masked_select", lambda a: gv.masked_select(a, gv.tensor([[True, False, True], [False, True, True]])),
     [_randn(2, 3)]),
    ("take", lambda a: gv.take(a, gv.tensor([0, 5, 2, 2])), [_randn(2, 3)]),
    ("trace", lambda a: a.trace(), [_randn(3, 3)]),
    ("vdot", lambda a, b: gv.vdot(a, b), [_randn(4), _randn(4, seed=1)]),
    ("det", lambda a: gv.linalg.det(a), [_well_conditioned(3)]),
    ("slogdet", lambda a: gv.linalg.slogdet(a)[1], [_well_conditioned(3)]),
    ("inv", lambda a: gv.linalg.inv(a), [_well_conditioned(3)]),
    ("solve", lambda a, b: gv.linalg.solve(a, b), [_well_conditioned(3), _randn(3, 2, seed=1)]),
    ("cholesky", lambda b: gv.linalg.cholesky(_spd(b)), [_randn(3, 3)]),
    ("solve_triangular", lambda a, b: gv.linalg.solve_triangular(a, b, upper=False),
     [_well_conditioned(3), _randn(3, 2, seed=1)]),
    ("solve_triangular", lambda a, b: gv.linalg.solve_triangular(a, b, upper=True, left=False, unitriangular=True),
     [_well_conditioned(3), _randn(2, 3, seed=1)]),
]
