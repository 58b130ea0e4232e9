"""dtypes: the four gradviz supports, each tied to one numpy dtype."""

from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801 - mirrors torch.dtype
    __slots__ = ("name", "np", "is_floating_point", "itemsize")

    def __init__(self, name: str, np_dtype: type, is_floating_point: bool):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = is_floating_point
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"gradviz.{self.name}"

    def __reduce__(self) -> str:
        return self.name


float32 = dtype("float32", np.float32, True)
float64 = dtype("float64", np.float64, True)
int64 = dtype("int64", np.int64, False)
bool_ = dtype("bool", np.bool_, False)
float = float32  # noqa: A001 - torch spells them this way
double = float64
long = int64

_BY_NP = {d.np: d for d in (float32, float64, int64, bool_)}
_BY_NP_DTYPE = {np.dtype(d.np): d for d in (float32, float64, int64, bool_)}


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The gradviz dtype for an array's dtype; other numpy types fold into the nearest one."""
    d = _BY_NP_DTYPE.get(np_dtype)  # an array's dtype: no np.dtype() call
    if d is not None:
        return d
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is not None:
        return d
    kind = np.dtype(np_dtype).kind
    if kind == "f":
        return float32 if np.dtype(np_dtype).itemsize <= 4 else float64
    if kind in "iu":
        return int64
    if kind == "b":
        return bool_
    raise TypeError(f"gradviz does not support arrays of dtype {np_dtype}")


def promote(a: dtype, b: dtype) -> dtype:
    """Result dtype of a binary op between two tensors (torch's category-first promotion)."""
    if a is b:
        return a
    order = {bool_: 0, int64: 1, float32: 2, float64: 3}
    return a if order[a] >= order[b] else b


# The names torch's messages use for a dtype: c10's ScalarType names ("Got: Long") and the C++
# type names ("float != double", "mask with dtype long int").
_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
_CPP_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


def scalar_type_name(d: dtype) -> str:
    return _SCALAR_TYPE_NAMES[d.name]


def cpp_type_name(d: dtype) -> str:
    return _CPP_NAMES[d.name]
