"""The in-place tensor ops torch's single-tensor optimizer loops use, over a tensor's array.

Each mirrors one ATen CPU kernel's arithmetic order (torch's scalar path: ``self + value * t1 * t2``
for addcmul, ``self + value * t1 / t2`` for addcdiv, lerp's two branches on |weight| < 0.5), with
Python numbers taking the tensor's dtype as torch's wrapped numbers do (numpy 2's weak scalars).
Results agree with torch to the float ulp (torch's vector path fuses some multiply-adds).
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


def add(a: Any, b: Any, alpha: float = 1) -> Any:
    return a + b if alpha == 1 else a + b * alpha


def addcmul(a: Any, t1: Any, t2: Any, value: float = 1) -> Any:
    return a + (t1 * value) * t2 if value != 1 else a + t1 * t2


def addcdiv(a: Any, t1: Any, t2: Any, value: float = 1) -> Any:
    return a + (t1 * value) / t2 if value != 1 else a + t1 / t2


def lerp(a: Any, end: Any, weight: float) -> Any:
    w = np.asarray(weight, dtype=a.dtype)
    if abs(float(w)) < 0.5:
        return a + w * (end - a)
    return end - (end - a) * (np.asarray(1, dtype=a.dtype) - w)


def sqrt(a: Any) -> Any:
    return np.sqrt(a)
