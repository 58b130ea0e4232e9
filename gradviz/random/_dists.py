"""torch's CPU sampling algorithms over numpy arrays, draw for draw.

Each function takes a Generator and returns a new numpy array; it draws the same words from the
generator, in the same order, as torch's CPU kernel for the same call, and transforms them with
the same arithmetic. Where torch calls the C library's double-precision log, sin or cos, so does
this module (``math``: numpy's own vectorised versions can differ in the last bit).
"""

from __future__ import annotations

import math

import numpy as np

from gradviz.random import _avxmath
from gradviz.random._generator import Generator

_U64 = np.uint64
_TWO_PI = 2.0 * math.pi
# Mantissa digits torch's uniform_real keeps: float16 and bfloat16 draw as float (24 digits,
# then rounded to the dtype), checked against torch 2.13.
_FLOAT_MASK = {np.dtype(np.float32): 24, np.dtype(np.float64): 53, np.dtype(np.float16): 24}


def _digits(np_dtype: np.dtype) -> int:
    d = _FLOAT_MASK.get(np.dtype(np_dtype))
    if d is None:
        if np.dtype(np_dtype).name == "bfloat16":  # ml_dtypes' bfloat16
            return 24
        raise TypeError(f"no uniform sampler for dtype {np_dtype}")
    return d


def _map(fn, a: np.ndarray) -> np.ndarray:
    return np.fromiter(map(fn, a.tolist()), dtype=np.float64, count=a.size)


def unit_uniform(gen: Generator, n: int, np_dtype: np.dtype) -> np.ndarray:
    """n draws of uniform_real_distribution<T>(0, 1): the low ``digits`` bits of a 32-bit word
    (float, half) or a 64-bit one (double), times 2^-digits, in T's accumulate type."""
    np_dtype = np.dtype(np_dtype)
    digits = _digits(np_dtype)
    if np_dtype == np.float64:
        bits = gen.random64(n) & _U64((1 << 53) - 1)
        return bits.astype(np.float64) * np.float64(2.0 ** -53)
    bits = gen.random32(n) & _U64((1 << digits) - 1)
    return bits.astype(np.float32) * np.float32(2.0**-digits)


def uniform(gen: Generator, n: int, np_dtype: np.dtype, low: float, high: float) -> np.ndarray:
    """Tensor.uniform_(low, high): x * (to - from) + from, fused, in the dtype's accumulate type
    (float for float16 and bfloat16), rounded to the dtype; a result equal to ``to`` becomes
    ``from``, keeping the range half-open as torch does."""
    np_dtype = np.dtype(np_dtype)
    acc = np.float64 if np_dtype == np.float64 else np.float32
    reduced = np_dtype not in (np.dtype(np.float32), np.dtype(np.float64))
    cast = acc if reduced else np_dtype.type  # reduced types keep from and to in float
    lo, hi = acc(cast(low)), acc(cast(high))
    x = unit_uniform(gen, n, np_dtype).astype(acc, copy=False)
    out = _avxmath.fma64(x, hi - lo, lo) if acc is np.float64 else _avxmath._fma(x, hi - lo, lo)
    out = out.astype(np_dtype, copy=False)
    out[out == np_dtype.type(high)] = np_dtype.type(low)
    return out


def _normal_scalar(gen: Generator, n: int, mean: float, std: float) -> np.ndarray:
    """n draws of normal_distribution<double>: Box-Muller on two 53-bit uniforms, the sine half
    cached in the generator for the next draw."""
    out = np.empty(n, dtype=np.float64)
    i = 0
    if n and gen.next_double_normal is not None:
        out[0] = gen.next_double_normal
        gen.next_double_normal = None
        i = 1
    pairs = (n - i + 1) // 2
    if pairs:
        u = unit_uniform(gen, 2 * pairs, np.float64)
        u1, u2 = u[0::2], u[1::2]
        r = np.sqrt(-2.0 * _map(math.log1p, -u2))
        theta = _TWO_PI * u1
        cos, sin = r * _map(math.cos, theta), r * _map(math.sin, theta)
        z = np.empty(2 * pairs)
        z[0::2], z[1::2] = cos, sin
        out[i:] = z[: n - i]
        if (n - i) % 2:
            gen.next_double_normal = float(z[-1])
    return _avxmath.fma64(out, std, mean)


def _fill16_double(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill_16 over blocks of 16 doubles: u[:8] gives radii, u[8:] angles."""
    b = u.reshape(-1, 16)
    u1, u2 = 1.0 - b[:, :8].ravel(), b[:, 8:].ravel()
    radius = np.sqrt(-2.0 * _map(math.log, u1))
    theta = _TWO_PI * u2
    out = np.empty_like(b)
    out[:, :8] = _avxmath.fma64(radius * _map(math.cos, theta), std, mean).reshape(-1, 8)
    out[:, 8:] = _avxmath.fma64(radius * _map(math.sin, theta), std, mean).reshape(-1, 8)
    return out.ravel()


def _fill16_float(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """The AVX2 normal_fill_16 on float32 blocks: avx_mathfun log and sincos, a fused mean + std."""
    f = np.float32
    b = u.reshape(-1, 16)
    u1 = f(1.0) - b[:, :8].ravel()
    u2 = b[:, 8:].ravel()
    radius = np.sqrt(f(-2.0) * _avxmath.log_ps(u1))
    theta = f(_TWO_PI) * u2
    sin, cos = _avxmath.sincos_ps(theta)
    m, s = f(mean), f(std)
    out = np.empty_like(b)
    out[:, :8] = _avxmath._fma(radius * cos, s, m).reshape(-1, 8)
    out[:, 8:] = _avxmath._fma(radius * sin, s, m).reshape(-1, 8)
    return out.ravel()


def normal(gen: Generator, n: int, np_dtype: np.dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """Tensor.normal_(mean, std). 16 or more contiguous elements take the block fill: all n
    uniforms drawn first, turned into normals 16 at a time, and when n is not a multiple of 16,
    16 fresh uniforms redo the last 16 elements. Fewer take the cached scalar Box-Muller."""
    np_dtype = np.dtype(np_dtype)
    if n < 16 or not contiguous:
        return _normal_scalar(gen, n, mean, std).astype(np_dtype)
    is_float = np_dtype == np.float32
    fill = _fill16_float if is_float else _fill16_double
    u = unit_uniform(gen, n, np_dtype)
    full = n - n % 16
    out = np.empty(n, dtype=u.dtype)
    if full:
        out[:full] = fill(u[:full], mean, std)
    if n % 16:
        out[: n - 16] = out[: n - 16]  # elements before the last 16 keep their values
        out[n - 16:] = fill(unit_uniform(gen, 16, np_dtype), mean, std)
    return out.astype(np_dtype, copy=False)


def _round_int(v: int, digits: int) -> int:
    """An int rounded to the float type with ``digits`` mantissa digits, back as an int."""
    t = {53: np.float64, 24: np.float32, 11: np.float16}[digits]
    return int(t(v))


def float_bounds(low: int, high: int, digits: int) -> tuple[int, int]:
    """torch's update_from/update_to for floating dtypes: a bound the dtype cannot hold moves
    inward (to=2**40 in float32 becomes 2**40 - 2**16), so every result is representable."""
    up = _round_int(low + 1, digits)
    if up < low:
        n = abs(low + 1).bit_length() - 1
        low = up + (1 << (n - digits + 1))
    down = _round_int(high - 1, digits)
    if down >= high:
        n = abs(high - 1).bit_length() - 1
        high = down - (1 << (n - digits + 1))
    return low, high


def random_from_to(gen: Generator, n: int, low: int, high: int, np_dtype: np.dtype) -> np.ndarray:
    """random_(from, to) and randint: a draw modulo the range, plus from. Ranges of 2^28 or more
    take 64-bit draws, whatever the dtype (torch's public build); smaller ones 32-bit draws."""
    rng = high - low
    np_dtype = np.dtype(np_dtype)
    r = gen.random64(n) if rng >= 1 << 28 else gen.random32(n)
    v = (r % _U64(rng)).astype(np.int64) + np.int64(low) if rng < 1 << 63 else (r % _U64(rng)).view(np.int64) + low
    return v.astype(np_dtype)


def random_full(gen: Generator, n: int, np_dtype: np.dtype) -> np.ndarray:
    """random_() with no bounds: [0, 2^mantissa] for floating types, [0, max] for integers."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.bool_:
        return (gen.random32(n) & _U64(1)).astype(np.bool_)
    if np_dtype.kind == "f":
        digits = _digits(np_dtype)
        r = gen.random64(n) if np_dtype == np.float64 else gen.random32(n)
        return (r % _U64((1 << digits) + 1)).astype(np_dtype)
    r = gen.random64(n) if np_dtype == np.int64 else gen.random32(n)
    return (r % _U64(int(np.iinfo(np_dtype).max) + 1)).astype(np_dtype)


def randperm(gen: Generator, n: int) -> np.ndarray:
    """randperm(n): for n below 2^32/20, a Fisher-Yates pass from the front with one 32-bit draw
    per step; from there on, the inside-out variant with 64-bit draws."""
    if n < 0xFFFFFFFF // 20:
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        z = (gen.random32(n - 1) % np.arange(n, 1, -1, dtype=_U64)).astype(np.int64)
        z += np.arange(n - 1, dtype=np.int64)
        r = list(range(n))
        for i, j in enumerate(z.tolist()):  # sequential swaps: each depends on the last
            r[i], r[j] = r[j], r[i]
        return np.array(r, dtype=np.int64)
    r = [0] * n
    z = (gen.random64(n) % np.arange(1, n + 1, dtype=_U64)).tolist()
    for i, j in enumerate(z):
        r[i] = r[j]
        r[j] = i
    return np.array(r, dtype=np.int64)


def bernoulli_scalar(gen: Generator, n: int, p: float) -> np.ndarray:
    """bernoulli_(p) with a number p: a 53-bit uniform below p, as bool."""
    return unit_uniform(gen, n, np.float64) < p


def bernoulli_tensor(gen: Generator, p: np.ndarray) -> np.ndarray:
    """bernoulli_(p) with a tensor p (already broadcast to the output): double p compares a 53-bit
    uniform, any other floating p a 24-bit float one."""
    flat = np.ascontiguousarray(p).ravel()
    if flat.dtype == np.float64:
        u = unit_uniform(gen, flat.size, np.float64)
        return (u < flat).reshape(p.shape)
    u = unit_uniform(gen, flat.size, np.float32)
    return (u < flat.astype(np.float32)).reshape(p.shape)


def exponential(gen: Generator, n: int, lambd: float, np_dtype: np.dtype) -> np.ndarray:
    """exponential_(lambd): -1/lambd * log1p(-u) on a 53-bit uniform, whatever the dtype."""
    u = unit_uniform(gen, n, np.float64)
    return ((-1.0 / lambd) * _map(math.log1p, -u)).astype(np_dtype)


def multinomial_with_replacement(gen: Generator, rows: np.ndarray, n_sample: int) -> np.ndarray:
    """Per row: cumulative sums in the row's dtype, divided by their total, the last set to 1;
    each sample the first slot whose cumulative value is not below a 53-bit uniform."""
    out = np.empty((rows.shape[0], n_sample), dtype=np.int64)
    for i, row in enumerate(rows):
        if not bool((row >= 0).all()):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if not bool(np.isfinite(row).all()):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
        cum = np.cumsum(row, dtype=row.dtype)
        total = cum[-1]
        if not total > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cum = cum / total
        cum[-1] = 1
        u = unit_uniform(gen, n_sample, np.float64)
        out[i] = np.searchsorted(cum.astype(np.float64), u, side="left")
    return out


def cauchy(gen: Generator, n: int, median: float, sigma: float, np_dtype: np.dtype) -> np.ndarray:
    """cauchy_: median + sigma * tan(pi * (u - 0.5)) on a 53-bit uniform."""
    u = unit_uniform(gen, n, np.float64)
    return _avxmath.fma64(_map(math.tan, math.pi * (u - 0.5)), sigma, median).astype(np_dtype)


def log_normal(gen: Generator, n: int, mean: float, std: float, np_dtype: np.dtype) -> np.ndarray:
    """log_normal_: exp of the cached scalar normal draws."""
    return _map(math.exp, _normal_scalar(gen, n, mean, std)).astype(np_dtype)


def geometric(gen: Generator, n: int, p: float, np_dtype: np.dtype) -> np.ndarray:
    """geometric_: ceil(log(u) / log1p(-p)) on a 53-bit uniform."""
    u = unit_uniform(gen, n, np.float64)
    return np.ceil(_map(math.log, u) / math.log1p(-p)).astype(np_dtype)
