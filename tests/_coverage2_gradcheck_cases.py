"""Finite-difference cases for the rows of gradviz/ops/as_strided.py, split_variants.py,
channel_shuffle.py, fill.py and native_dropout.py (tests/engine/test_gradcheck.py runs them with its own cases)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


COVERAGE2_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    # overlapping windows: a memory position read by several outputs sums their gradients
    ("as_strided_call", lambda x: gv.as_strided(x * 1, (4, 3), (2, 1), 1), [_randn(12)]),
    ("channel_shuffle", lambda x: gv.channel_shuffle(x * 1, 2), [_randn(2, 4, 3)]),
    ("fill_out_of_place", lambda x: gv.fill(x * 1, 2.5) * x, [_randn(2, 3)]),
    ("fill_tensor_out_of_place", lambda x, v: gv.fill(x * 1, v) * x, [_randn(2, 3), np.array(0.7)]),
    ("native_dropout", lambda x: gv.native_dropout(x * 1, 0.0, True)[0] * x, [_randn(2, 3)]),
    ("unsafe_split_with_sizes", lambda x: gv.unsafe_split_with_sizes(x * 1, [1, 3], 1)[1], [_randn(2, 4)]),
]
