"""torch.finfo and torch.iinfo: a dtype's numeric limits, read from numpy's (ml_dtypes' for bfloat16),
with torch's attribute types (Python floats and ints, the dtype as its name), printing and errors."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype


def _dtype_arg(fn: str, d: Any) -> _dtype.dtype:
    if d is None:
        return _dtype.get_default_dtype()
    if not isinstance(d, _dtype.dtype):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be torch.dtype, not {type(d).__name__}")
    return d


class finfo:  # noqa: N801 - torch.finfo
    """Machine limits of a floating-point dtype (the default dtype without an argument)."""

    bits: int  # storage size
    eps: float  # the gap between 1.0 and the next number
    max: float  # the largest finite number
    min: float  # the most negative finite number (-max)
    tiny: float  # the smallest positive normal number
    smallest_normal: float  # tiny's other name
    resolution: float  # 10 ** -(decimal digits of precision)
    dtype: str  # the dtype's name

    __hash__ = None  # type: ignore[assignment] - torch's finfo is unhashable too

    def __init__(self, type: Any = None) -> None:  # noqa: A002 - torch's parameter name
        d = _dtype_arg("finfo", type)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = _dtype.ml_dtypes().finfo(d.np) if d is _dtype.bfloat16 else np.finfo(d.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # a Python float, not the dtype's rounding of it
        self.dtype = d.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch.iinfo
    """Machine limits of an integer dtype."""

    bits: int  # storage size
    max: int  # the largest value
    min: int  # the smallest value
    dtype: str  # the dtype's name

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, type: Any) -> None:  # noqa: A002
        d = _dtype_arg("iinfo", type)
        if d is _dtype.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = int(info.bits), int(info.max), int(info.min), d.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
