"""torch.binomial on the CPU stream: ATen's sampler, element by element in memory order, over the
generator's double uniforms: inversion by geometric waiting times when count * min(p, 1 - p) < 10,
else the BTRS transformed rejection (Hormann), with torch's float32 arithmetic where torch keeps
the input's type, so that a seed draws torch's numbers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.random import _dists as D
from gradviz.random._generator import Generator, resolve
from gradviz.tensor import Tensor, make_tensor

__all__ = ["binomial"]

_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k < len(_TAIL):
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _uniform(gen: Generator) -> float:
    return float(D.unit_uniform(gen, 1, np.float64)[0])


def _inversion(gen: Generator, count: Any, prob: Any, f: Any) -> float:
    logprob = float(np.log1p(f(-prob)))  # log1p in the input's type, as torch's compat_log1p
    geom_sum, num_geom = 0.0, 0.0
    while True:
        geom = math.ceil(math.log(_uniform(gen)) / logprob)
        geom_sum += geom
        if geom_sum > count:
            return num_geom
        num_geom += 1


def _btrs(gen: Generator, count: Any, prob: Any, f: Any) -> float:
    stddev = float(np.sqrt(f(count * prob * (f(1) - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(f(count * prob)) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(f(prob / (f(1) - prob)))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(float(f((count + f(1)) * prob)))
    n = float(count)
    while True:
        u = _uniform(gen) - 0.5
        v = _uniform(gen)
        us = 0.5 - abs(u)
        k = float(f(math.floor((2 * a / us + b) * u + c)))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * math.log((m + 1) / (r * (n - m + 1)))
                      + (n + 1) * math.log((n - m + 1) / (n - k + 1))
                      + (k + 0.5) * math.log(r * (n - k + 1) / (k + 1))
                      + _stirling_tail(m) + _stirling_tail(n - m) - _stirling_tail(k) - _stirling_tail(n - k))
        if v <= upperbound:
            return k


def _binomial_one(gen: Generator, count: Any, prob: Any, f: Any) -> float:
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return float(count)
    if prob <= 0.5:
        if count * prob >= 10.0:
            return _btrs(gen, count, prob, f)
        return _inversion(gen, count, prob, f)
    if prob > 0.5:
        q = f(f(1) - prob)
        if count * q >= 10.0:
            return float(count) - _btrs(gen, count, q, f)
        return float(count) - _inversion(gen, count, q, f)
    return math.nan


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """torch.binomial: one Binomial(count, prob) draw per element (count and prob broadcast)."""
    if not prob.dtype.is_floating_point:
        raise RuntimeError(f"\"binomial_cpu\" not implemented for '{_dtype.scalar_type_name(prob.dtype)}'")
    gen = resolve(generator)
    c = np.asarray(count._data if isinstance(count._data, np.ndarray) else count._data.get())
    p = np.asarray(prob._data if isinstance(prob._data, np.ndarray) else prob._data.get())
    shape = np.broadcast_shapes(c.shape, p.shape)
    f = np.float64 if p.dtype == np.float64 else np.float32
    c, p = np.broadcast_to(c.astype(f), shape), np.broadcast_to(p.astype(f), shape)
    out = np.array([_binomial_one(gen, f(ci), f(pi), f) for ci, pi in zip(c.ravel().tolist(), p.ravel().tolist())],
                   dtype=p.dtype).reshape(shape)
    return make_tensor(out, prob.device, False)
