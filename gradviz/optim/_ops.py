"""The in-place tensor ops torch's single-tensor optimizer loops use, over a tensor's array.

Each reproduces one ATen CPU kernel's arithmetic. torch's float kernels fuse the multiply-add of
``add(alpha=)``, ``addcmul`` and ``lerp`` (one rounding, vector and tail elements alike, on the
AVX2/AVX512 builds); for float32 the fused result is exact here too: the float32 product is exact
in float64, and the float64 sum rounded to float32 is the single rounding. ``addcdiv`` is not fused
(``self + (value * t1) / t2``). Python numbers take the tensor's dtype, as torch's wrapped numbers
do (numpy 2's weak scalars). float64 has no wider type: its fused multiply-add is built from exact
error terms (Dekker's product, Knuth's sum), correctly rounded but for rare double-rounding ties.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.tensor import Tensor


def write(t: Tensor, value: Any) -> Tensor:
    """``t``'s storage takes ``value`` in place: one version bump, as one torch in-place op."""
    t._data[...] = value
    t._version_counter[0] += 1
    return t


def fresh(a: Any) -> Any:
    """A new array holding ``a`` (numpy hands back scalars, not 0-dim arrays, from 0-dim arithmetic)."""
    return np.array(a) if isinstance(a, np.generic) else a.copy()


def _wide(v: Any) -> Any:
    return v.astype(np.float64) if hasattr(v, "astype") else np.float64(v)


def fma(x: Any, y: Any, z: Any) -> Any:
    """x * y + z with one rounding for float32 operands; plain for float64.

    Arrays may be numpy's or cupy's (``astype`` and numpy scalars work on both)."""
    dt = next(v.dtype for v in (x, y, z) if hasattr(v, "dtype"))
    if dt == np.float32:
        return (_wide(x) * _wide(y) + _wide(z)).astype(np.float32)
    return _fma64(_wide(x), _wide(y), _wide(z))


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves


def _fma64(a: Any, b: Any, c: Any) -> Any:
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # p + e == a * b exactly
    s = p + c
    v = s - p
    r = (p - (s - v)) + (c - v)  # s + r == p + c exactly
    return s + (r + e)


def _num(value: float, like: Any) -> Any:
    """A Python number as the array's dtype (torch casts a Scalar to the op's compute type)."""
    return like.dtype.type(value)


def add(a: Any, b: Any, alpha: float = 1) -> Any:
    return a + b if alpha == 1 else fma(b, _num(alpha, b), a)


def addcmul(a: Any, t1: Any, t2: Any, value: float = 1) -> Any:
    return fma(t1 * _num(value, t1), t2, a)


def addcdiv(a: Any, t1: Any, t2: Any, value: float = 1) -> Any:
    return a + (t1 * _num(value, t1)) / t2 if value != 1 else a + t1 / t2


def lerp(a: Any, end: Any, weight: float) -> Any:
    w = _num(weight, a)
    if abs(float(w)) < 0.5:
        return fma(w, end - a, a)
    return fma(w - _num(1, a), end - a, end)


def sqrt(a: Any) -> Any:
    return np.sqrt(a)
