"""gradviz.ops._scalars: a Python float converted once is the operand numpy makes of it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradviz
from gradviz.ops._scalars import float_operand

VALUES = [1.0001, 0.0001, -3.7, 1e-30, 1e-45, 2.5e-39, 7.0, 1e300, -0.0, 0.0, float("nan"), float("inf"), 3.5e38]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_converted_float_gives_the_bits_of_the_python_float(dtype: type) -> None:
    x = np.random.default_rng(0).standard_normal(257).astype(dtype)
    for b in VALUES:
        with warnings.catch_warnings(record=True) as want_warned:
            warnings.simplefilter("always")
            want = [x * b, x + b, b - x]
        with warnings.catch_warnings(record=True) as got_warned:
            warnings.simplefilter("always")
            c = float_operand(b, x.dtype)
            got = [x * c, x + c, c - x]
        for w, g in zip(want, got, strict=True):
            assert w.dtype == g.dtype and np.array_equal(w.view(np.uint8), g.view(np.uint8)), (dtype, b)
        assert [str(w.message) for w in want_warned] == [str(w.message) for w in got_warned], (dtype, b)


def test_what_is_left_to_numpy() -> None:
    f32 = np.dtype(np.float32)
    for b in (0.0, -0.0, float("nan"), 1e300):
        assert float_operand(b, f32) is b  # a sign, a NaN, an overflow warning: numpy's own
    assert float_operand(1.5, np.dtype(np.float16)) == 1.5 and type(float_operand(1.5, np.dtype(np.float16))) is float
    kept = float_operand(1.5, f32)
    assert kept is float_operand(1.5, f32) and kept.dtype == f32 and not kept.flags.writeable


def test_scalar_ops_and_their_gradients_through_the_cache() -> None:
    # a chain of scalar ops and tanh's backward: the numbers of the uncached computation
    x = gradviz.tensor(np.linspace(-1, 1, 16, dtype=np.float32), requires_grad=True)
    y = x
    for _ in range(5):
        y = (y * 1.0001 + 0.0001).tanh()
    y.sum().backward()
    xa, g = np.linspace(-1, 1, 16, dtype=np.float32), None
    outs = []
    for _ in range(5):
        xa = np.tanh(xa * np.float32(1.0001) + np.float32(0.0001))
        outs.append(xa)
    g = np.ones(16, np.float32)
    for out in reversed(outs):
        g = g * (np.float32(1) - out * out) * np.float32(1.0001)
    assert np.array_equal(x.grad.numpy(), g)
