"""float32 log, sin and cos as torch's AVX2 normal fill computes them.

On an x86 machine with AVX2 (or AVX-512, whose build routes the normal kernel to the AVX2 one),
torch turns 16 uniforms into 16 normals with Cephes-style single-precision polynomials (the
"avx_mathfun" log and sincos). Bit-identical normals need the same float32 operations in the same
order; each step below is one float32 operation, and ``_fma`` stands for the fused multiply-adds
the compiler forms from a multiply followed by an add.
"""

from __future__ import annotations

import numpy as np

_F = np.float32
_I = np.int32


def _c(v: float) -> np.float32:
    return _F(v)


def _fma(a: np.ndarray, b: np.ndarray | np.float32, c: np.ndarray | np.float32) -> np.ndarray:
    # The product of two float32 values is exact in float64; the sum rounds once there and once
    # more to float32, which equals a true fused rounding except in ties too rare to matter here.
    return (a.astype(np.float64) * np.float64(b) + np.float64(c) if np.ndim(c) == 0 else
            a.astype(np.float64) * np.float64(b) + c.astype(np.float64)).astype(_F)


_SQRTHF = _c(0.707106781186547524)
_LOG_P = [_c(v) for v in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
                          -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)]
_LOG_Q1 = _c(-2.12194440e-4)
_LOG_Q2 = _c(0.693359375)
_ONE = _c(1.0)
_HALF = _c(0.5)


def log_ps(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float32 values; NaN for x <= 0."""
    invalid = x <= 0
    x = np.maximum(x, np.array(0x00800000, dtype=_I).view(_F))
    bits = x.view(_I)
    imm0 = (bits.view(np.uint32) >> np.uint32(23)).astype(_I)
    x = ((bits & _I(~0x7F800000)) | np.array(_HALF).view(_I)).view(_F)
    e = (imm0 - _I(0x7F)).astype(_F) + _ONE
    mask = x < _SQRTHF
    tmp = np.where(mask, x, _F(0))
    x = x - _ONE
    e = e - np.where(mask, _ONE, _F(0))
    x = x + tmp
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = _fma(y, x, p)
    y = y * x
    y = _fma(y, z, e * _LOG_Q1)  # the second product fuses with the add that follows it
    y = _fma(-z, _HALF, y)
    x = x + y
    x = _fma(e, _LOG_Q2, x)
    return np.where(invalid, _F(np.nan), x)


_DP = [_c(v) for v in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)]
_SINCOF = [_c(v) for v in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]
_COSCOF = [_c(v) for v in (2.443315711809948e-005, -1.388731625493765e-003, 4.166664568298827e-002)]
_FOPI = _c(1.27323954473516)


def sincos_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x) of float32 values, by octant reduction and two minimax polynomials."""
    sign_sin = x.view(_I) & _I(-0x80000000)
    x = np.abs(x)
    j = (x * _FOPI).astype(_I)  # truncation, as cvttps
    j = (j + _I(1)) & _I(~1)
    y = j.astype(_F)
    swap_sin = (j & _I(4)) << _I(29)
    poly = (j & _I(2)) == 0
    for dp in _DP:
        x = _fma(y, dp, x)
    sign_cos = (~(j - _I(2)) & _I(4)) << _I(29)
    sign_sin = sign_sin ^ swap_sin
    z = x * x
    yc = np.full_like(x, _COSCOF[0])
    yc = _fma(yc, z, _COSCOF[1])
    yc = _fma(yc, z, _COSCOF[2])
    yc = yc * z
    yc = _fma(yc, z, -(z * _HALF))
    yc = yc + _ONE
    ys = np.full_like(x, _SINCOF[0])
    ys = _fma(ys, z, _SINCOF[1])
    ys = _fma(ys, z, _SINCOF[2])
    ys = _fma(ys * z, x, x)
    s = np.where(poly, ys, yc)
    c = np.where(poly, yc, ys)
    return (s.view(_I) ^ sign_sin).view(_F), (c.view(_I) ^ sign_cos).view(_F)


def fma64(a: np.ndarray, b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """a * b + c with one rounding, for float64 arrays: the exact product as a sum of two doubles
    (Veltkamp's split), the exact sum with c likewise, then one final add. torch's compiled
    kernels fuse these multiply-adds; numpy has no fused operation."""
    a = np.asarray(a, dtype=np.float64)
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), a.shape)
    c = np.broadcast_to(np.asarray(c, dtype=np.float64), a.shape)
    p = a * b
    split = 134217729.0  # 2**27 + 1
    t = split * a
    ah = t - (t - a)
    al = a - ah
    t = split * b
    bh = t - (t - b)
    bl = b - bh
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    es = (p - (s - bb)) + (c - bb)
    return s + (ep + es)
