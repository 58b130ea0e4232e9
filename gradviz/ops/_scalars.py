"""Python floats as numpy operands, converted once.

A ufunc given a Python float converts it on every call, as NEP 50's weak scalar: to the other
operand's dtype (float32 for a float32 array). A 0-d array of that dtype holding the converted
value is the same operand (the same dtype resolution, the same value, so the same result, bit
for bit), and a ufunc takes it in about half the time (430 against 190 ns for a 16-element
float32 multiply here): the difference is the conversion. The scalar ops of a training loop
and a long chain reuse a handful of constants (``x * 1.0001``, ``y + 0.0001``), so each is
converted once and kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_F32_MAX = float(np.finfo(np.float32).max)

# Per dtype, the converted constants: value -> read-only 0-d array. float32 and float64 only
# (a float16 or bfloat16 conversion is left to numpy), chosen by identity (numpy's native dtypes
# are singletons; a byte-swapped one is another object, and is left to numpy too).
_KEPT_F32: dict[float, np.ndarray] = {}
_KEPT_F64: dict[float, np.ndarray] = {}
_MAX_KEPT = 1024  # per dtype: a program that makes new constants in a loop stops adding here

def float_operand(b: float, dtype: Any) -> Any:
    """``b`` (a Python float) as the operand numpy would make of it beside an array of numpy
    dtype ``dtype``: a cached 0-d array where that is the same operand, else ``b`` itself.
    Left as they are: other dtypes; 0.0 (equal to -0.0 as a key, which must keep its sign);
    NaN (never equal to itself as a key); and float32's out-of-range values (numpy's conversion
    warns of the overflow, which is the user's to see)."""
    if dtype is _F32:
        kept = _KEPT_F32
    elif dtype is _F64:
        kept = _KEPT_F64
    else:
        return b
    v = kept.get(b)
    if v is None:
        if not b or b != b or (kept is _KEPT_F32 and not -_F32_MAX <= b <= _F32_MAX) or len(kept) >= _MAX_KEPT:
            return b
        v = np.array(b, dtype)
        v.flags.writeable = False
        kept[b] = v
    return v
