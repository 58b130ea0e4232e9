"""dtypes: torch's ten real ones, each tied to one numpy dtype (bfloat16 through ml_dtypes, as numpy
has none), with torch's type promotion and default dtype."""

from __future__ import annotations

import importlib
import sys

import numpy as np


class dtype:  # noqa: N801 - mirrors torch.dtype
    __slots__ = ("name", "np", "is_floating_point", "itemsize", "is_signed", "_rank")

    def __init__(self, name: str, np_dtype: type, is_floating_point: bool, rank: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = is_floating_point
        self.itemsize = self.np.itemsize
        self.is_signed = name not in ("bool", "uint8")
        self._rank = rank  # the order promotion picks the larger by, within a category

    is_complex = False

    def __repr__(self) -> str:
        # torch's spelling, so that a torch script's output is unchanged under gradviz (issue 35 item 10)
        return f"torch.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def to_real(self) -> dtype:
        return self

    def to_complex(self) -> dtype:
        raise RuntimeError(f"gradviz has no complex dtypes (asked for {self.name})")


bool_ = dtype("bool", np.bool_, False, 0)
uint8 = dtype("uint8", np.uint8, False, 1)
int8 = dtype("int8", np.int8, False, 1)
int16 = dtype("int16", np.int16, False, 2)
int32 = dtype("int32", np.int32, False, 3)
int64 = dtype("int64", np.int64, False, 4)
float16 = dtype("float16", np.float16, True, 5)


def ml_dtypes():  # noqa: ANN201 - the ml_dtypes module
    """ml_dtypes, imported at its first use: its import takes longer than the rest of gradviz's (its
    extension registers every dtype and ufunc loop it has), and only bfloat16 needs it."""
    return importlib.import_module("ml_dtypes")


class _Bfloat16(dtype):
    """torch.bfloat16, whose numpy dtype (ml_dtypes') is looked up at its first use."""

    __slots__ = ("_np",)

    def __init__(self) -> None:
        self.name, self.is_floating_point, self.itemsize, self.is_signed, self._rank = "bfloat16", True, 2, True, 5
        self._np: np.dtype | None = None

    @property
    def np(self) -> np.dtype:  # type: ignore[override]
        if self._np is None:
            self._np = np.dtype(ml_dtypes().bfloat16)
            _BY_NP[self._np] = _BY_NP_DTYPE[self._np] = self
        return self._np


bfloat16 = _Bfloat16()
float32 = dtype("float32", np.float32, True, 6)
float64 = dtype("float64", np.float64, True, 7)
# torch's other spellings
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)

# numpy dtype -> gradviz dtype; bfloat16's joins when ml_dtypes is first imported (bfloat16.np).
_BY_NP = {d.np: d for d in ALL if d is not bfloat16}
_BY_NP_DTYPE = dict(_BY_NP)


if "ml_dtypes" in sys.modules:  # imported already (by the program): bfloat16 arrays may come at once
    bfloat16.np  # noqa: B018 - registers it


def is_bfloat16(np_dtype: np.dtype) -> bool:
    """Whether an array's dtype is ml_dtypes' bfloat16, without importing ml_dtypes."""
    return np_dtype.name == "bfloat16"


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The gradviz dtype for an array's dtype; numpy types torch lacks fold into the nearest one."""
    d = _BY_NP_DTYPE.get(np_dtype)  # an array's dtype: no np.dtype() call
    if d is not None:
        return d
    npd = np.dtype(np_dtype)
    d = _BY_NP.get(npd)
    if d is not None:
        return d
    if is_bfloat16(npd) and npd == bfloat16.np:  # an array made with ml_dtypes before gradviz used it
        return bfloat16
    kind = npd.kind
    if kind == "f":
        return float32 if npd.itemsize <= 4 else float64
    if kind in "iu":
        return int64
    if kind == "b":
        return bool_
    raise TypeError(f"can't convert np.ndarray of type numpy.{npd.type.__name__}. {SUPPORTED_NUMPY}")


SUPPORTED_NUMPY = ("The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, "
                   "int16, int8, uint64, uint32, uint16, uint8, and bool.")


def promote(a: dtype, b: dtype) -> dtype:
    """torch's promoteTypes for two dtypes of tensors of the same tier: the higher category
    (bool < integer < floating) wins; within one, the wider. Two of one width that differ (uint8
    and int8, float16 and bfloat16) meet in the next wider signed one (int16, float32)."""
    if a is b:
        return a
    if a._rank == b._rank:
        return int16 if not a.is_floating_point else float32
    if a.is_floating_point != b.is_floating_point:
        return a if a.is_floating_point else b
    if (a is uint8 and b.is_signed) or (b is uint8 and a.is_signed):
        # uint8 with a signed integer: the signed one, at least int16
        other = b if a is uint8 else a
        return other if other._rank >= 2 else int16
    return a if a._rank >= b._rank else b


_default = [float32]


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


# The names torch's messages use for a dtype: c10's ScalarType names ("Got: Long") and the C++
# type names ("float != double", "mask with dtype long int").
_SCALAR_TYPE_NAMES = {
    "float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool", "int32": "Int", "int16": "Short",
    "int8": "Char", "uint8": "Byte", "float16": "Half", "bfloat16": "BFloat16",
}
_CPP_NAMES = {
    "float32": "float", "float64": "double", "int64": "long int", "bool": "bool", "int32": "int", "int16": "short int",
    "int8": "signed char", "uint8": "unsigned char", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
}


def scalar_type_name(d: dtype) -> str:
    return _SCALAR_TYPE_NAMES[d.name]


def cpp_type_name(d: dtype) -> str:
    return _CPP_NAMES[d.name]
