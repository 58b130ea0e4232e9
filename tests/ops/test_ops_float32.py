"""float32 kernels that are numpy's own rather than float64 rounded once: how far from torch.

gradviz computes float32 ``tanh`` with numpy's float32 kernel (6x faster than going through
float64, which was most of the W3 MLP's gap to hand-written numpy). Neither way matches torch
bit for bit: over every 13th float32 (329M finite values) numpy's float32 tanh is at most 1 ulp
from torch 2.13's (1.5% of values differ), and float64 rounded to float32 was also up to 1 ulp
away (1.5% of a normal sample). The tolerance these tests hold gradviz to is that 1 ulp, with
the special values (signed zeros, infinities, NaN, tiny and saturating inputs) exact.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in float32 ulps (the distance between their positions on the float32 line)."""
    ai = a.view(np.int32).astype(np.int64)
    bi = b.view(np.int32).astype(np.int64)
    # Sign-magnitude to a monotonic integer line (-0.0 and +0.0 one apart is fine: both exact
    # below, where signed zeros are compared bit for bit).
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    bi = np.where(bi < 0, -(bi & 0x7FFFFFFF), bi)
    return np.abs(ai - bi)


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    normal = rng.standard_normal(1_000_000).astype(np.float32)
    # Log-uniform magnitudes from denormals to beyond saturation, both signs.
    mags = np.exp(rng.uniform(np.log(1e-44), np.log(50.0), 1_000_000)).astype(np.float32)
    signed = mags * rng.choice(np.array([-1.0, 1.0], np.float32), mags.size)
    # A contiguous run of bit patterns around 0.5 and around the saturation point of tanh.
    run = np.concatenate([
        np.arange(0x3F000000, 0x3F000000 + 200_000, dtype=np.uint32),
        np.arange(0x41000000, 0x41000000 + 200_000, dtype=np.uint32),
    ]).view(np.float32)
    return np.concatenate([normal, signed, run, -run])


def test_float32_tanh_within_one_ulp_of_torch():
    x = _inputs()
    mine = gradviz.tensor(x).tanh().numpy()
    ref = torch.tanh(torch.from_numpy(x)).numpy()
    assert mine.dtype == np.float32
    d = _ulp_distance(mine, ref)
    assert d.max() <= 1, f"max {d.max()} ulp at x={x[d.argmax()]!r}"


@pytest.mark.parametrize("v", [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-30, -1e-30, 9.0, 10.0, -20.0])
def test_float32_tanh_special_values_exact(v):
    x = np.array([v], np.float32)
    mine = gradviz.tensor(x).tanh().numpy()
    ref = torch.tanh(torch.from_numpy(x)).numpy()
    assert mine.tobytes() == ref.tobytes() or (np.isnan(mine).all() and np.isnan(ref).all()), (mine, ref)


def test_float32_tanh_gradient_close_to_torch():
    # The backward formula is the same (g * (1 - y * y)); y may differ by an ulp, which moves
    # 1 - y * y by up to 2 |y| ulp(y) <= 2**-23 (cancellation near saturation: an absolute bound,
    # not a relative one), and torch's kernel rounds 1 - y * y once (a fused multiply-add) where
    # numpy rounds y * y first. Measured on these inputs: 1.25 * 2**-23 at most (float64-rounded
    # tanh: 1.19 * 2**-23; torch's own y through numpy's formula: 0.5 * 2**-23).
    x = _inputs()[::10].copy()
    gx = gradviz.tensor(x, requires_grad=True)
    gx.tanh().sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    tx.tanh().sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=2.0**-22)


def test_tanh_dtypes_as_torch():
    for make in (lambda T: T.tensor([0.5, -2.0]), lambda T: T.tensor([0.5, -2.0], dtype=T.float64),
                 lambda T: T.tensor([1, -2]), lambda T: T.tensor(0.25)):
        a, b = make(torch).tanh(), make(gradviz).tanh()
        assert str(b.dtype).split(".")[1] == str(a.dtype).split(".")[1]
        assert tuple(b.shape) == tuple(a.shape)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-7)
