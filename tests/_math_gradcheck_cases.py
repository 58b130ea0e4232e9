"""Finite-difference cases for the rows of gradviz/ops/math_ops.py and math_binary.py
(tests/engine/test_gradcheck.py runs them with its own cases)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv


def _uniform(lo: float, hi: float, *shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _inplace(name: str, *args: object) -> Callable:
    # an in-place op on a non-leaf copy: the same row, reached through a's rewritten history
    return lambda a, *rest: getattr(a * 1.0, name)(*rest, *args)


# acosh_, asinh_, atanh_: torch has no derivative for them (tests/ops/test_math_ops.py checks the error)
MATH_NO_DERIVATIVE = {"acosh_", "asinh_", "atanh_"}

MATH_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    ("atan", lambda a: gv.atan(a), [_randn(2, 3)]),
    ("atan", _inplace("atan_"), [_randn(3)]),
    ("asin", lambda a: a.asin(), [_uniform(-0.9, 0.9, 2, 3)]),
    ("acos", lambda a: a.acos(), [_uniform(-0.9, 0.9, 2, 3)]),
    ("sinh", lambda a: a.sinh(), [_randn(2, 3)]),
    ("cosh", lambda a: a.cosh(), [_randn(2, 3)]),
    ("cosh", _inplace("cosh_"), [_randn(3)]),
    ("asinh", lambda a: a.asinh(), [_randn(2, 3)]),
    ("acosh", lambda a: a.acosh(), [_uniform(1.2, 3.0, 2, 3)]),
    ("atanh", lambda a: a.atanh(), [_uniform(-0.9, 0.9, 2, 3)]),
    ("erf", lambda a: a.erf(), [_randn(2, 3)]),
    ("erfc", lambda a: a.erfc(), [_randn(2, 3)]),
    ("erfinv", lambda a: a.erfinv(), [_uniform(-0.9, 0.9, 2, 3)]),
    ("lgamma", lambda a: a.lgamma(), [_uniform(0.2, 5.0, 2, 3)]),
    ("lgamma", lambda a: a.lgamma(), [_uniform(-2.9, -2.1, 3)]),
    ("digamma", lambda a: a.digamma(), [_uniform(0.2, 15.0, 2, 3)]),
    ("digamma", lambda a: a.digamma(), [_uniform(-1.9, -1.1, 3)]),
    ("frac", lambda a: a.frac(), [_uniform(0.1, 0.9, 2, 3) + np.array([-2.0, 0.0, 3.0])]),
    ("logit", lambda a: a.logit(), [_uniform(0.1, 0.9, 2, 3)]),
    ("logit", lambda a: gv.logit(a, 0.2), [np.array([0.05, 0.3, 0.6, 0.95])]),
    ("logit", _inplace("logit_", 0.1), [_uniform(0.2, 0.8, 3)]),
    ("nan_to_num", lambda a: a.nan_to_num(), [_randn(2, 3)]),
    ("nan_to_num", _inplace("nan_to_num_", 1.0), [_randn(3)]),
    ("atan2", lambda a, b: gv.atan2(a, b), [_randn(2, 3), _randn(3, seed=1)]),
    ("atan2", lambda a, b: (a * 1.0).atan2_(b), [_randn(2, 3), _randn(2, 3, seed=1)]),
    ("hypot", lambda a, b: gv.hypot(a, b), [_randn(2, 3), _randn(2, 1, seed=1)]),
    ("hypot", lambda a, b: (a * 1.0).hypot_(b), [_randn(3), _randn(3, seed=1)]),
    ("xlogy", lambda a, b: gv.xlogy(a, b), [_randn(2, 3), _uniform(0.5, 2.0, 3, seed=1)]),
    ("xlogy", lambda a, b: (a * 1.0).xlogy_(b), [_randn(3), _uniform(0.5, 2.0, 3, seed=1)]),
    ("xlogy_self_scalar", lambda b: gv.xlogy(1.5, b), [_uniform(0.5, 2.0, 3)]),
    ("xlogy_other_scalar", lambda a: gv.xlogy(a, 2.5), [_randn(3)]),
    ("logaddexp", lambda a, b: gv.logaddexp(a, b), [_randn(2, 3), _randn(3, seed=1)]),
    ("lerp", lambda a, b: gv.lerp(a, b, 0.3), [_randn(2, 3), _randn(3, seed=1)]),
    ("lerp", lambda a, b: a.lerp(b, 0.8), [_randn(3), _randn(3, seed=1)]),
    ("lerp", lambda a, b: (a * 1.0).lerp_(b, 0.6), [_randn(3), _randn(3, seed=1)]),
    ("lerp_tensor", lambda a, b, w: gv.lerp(a, b, w), [_randn(2, 3), _randn(3, seed=1), _uniform(0, 1, 2, 1)]),
    ("lerp_tensor", lambda a, b, w: (a * 1.0).lerp_(b, w), [_randn(3), _randn(3, seed=1), _uniform(0, 1, 3)]),
    ("mul", lambda a, b: gv.outer(a, b), [_randn(3), _randn(4, seed=1)]),
]
