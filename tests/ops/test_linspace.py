"""linspace (and logspace) against torch 2.13, bit for bit: torch's CPU kernel steps up from start for the first
half and down from end for the rest, each value rounded once (a fused multiply-add) in float32 and
float64, in the dtype's own arithmetic for float16 and bfloat16, and from truncated ends for
integer dtypes. A value that differs in its last bit fails."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import gradviz

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "uint8"]
RANGES = [(0, 1), (-1, 1), (0.3, 7.1), (-5, 2.5), (1, 0), (-math.pi, math.pi), (0, 100), (2, 250)]
SIZES = [*range(0, 70), 97, 128, 257, 1000, 2001, 40000]  # 40000: past torch's parallel grain


def _values(t):
    return t.float().numpy() if "bfloat16" in str(t.dtype) else t.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
def test_linspace_bit_for_bit(dtype):
    bad = []
    for n in SIZES:
        for a, b in RANGES:
            if dtype == "uint8" and min(a, b) < 0:
                continue
            want = _values(torch.linspace(a, b, n, dtype=getattr(torch, dtype)))
            got = _values(gradviz.linspace(a, b, n, dtype=getattr(gradviz, dtype)))
            if got.dtype != want.dtype or not np.array_equal(got, want):
                bad.append((n, a, b))
    assert not bad, f"{len(bad)} (steps, start, end) differ from torch, first {bad[:5]}"


def test_linspace_default_dtype_and_tensor_ends():
    want = torch.linspace(torch.tensor(0.25), torch.tensor(3.0), 37)
    got = gradviz.linspace(gradviz.tensor(0.25), gradviz.tensor(3.0), 37)
    assert got.dtype == gradviz.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())



LOG_SIZES = [*range(0, 40), 97, 257, 1000]
LOG_RANGES = [(0, 1), (-2, 3), (0.3, 7.1), (-5, 2.5), (1, -1), (-math.pi, math.pi), (0, 10), (2, 2)]


@pytest.mark.parametrize("base", [10.0, 2.0, 3.7, 0.5])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32"])
def test_logspace_bit_for_bit(dtype, base):
    """torch's kernel: the ends in the output dtype, the exponent in double from start (first half)
    or end (second half), C's pow per element; steps == 1 is pow(base, start) in double."""
    bad = []
    for n in LOG_SIZES:
        for a, b in LOG_RANGES:
            want = _values(torch.logspace(a, b, n, base, dtype=getattr(torch, dtype)))
            got = _values(gradviz.logspace(a, b, n, base, dtype=getattr(gradviz, dtype)))
            if got.dtype != want.dtype or not np.array_equal(got, want, equal_nan=True):
                bad.append((n, a, b))
    assert not bad, f"{len(bad)} (steps, start, end) differ from torch, first {bad[:5]}"
