"""torch.cuda's typed tensor classes (torch.cuda.FloatTensor, ...): programs pick them with
``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` and test tensors with
``isinstance(x, torch.cuda.FloatTensor)``. An instance is a cuda tensor of the class's dtype;
calling one builds a tensor on cuda, and without a GPU raises torch's TypeError for a build
without CUDA."""

from __future__ import annotations

from typing import Any

from gradviz import _dtype
from gradviz.cuda import is_available  # defined before gradviz.cuda imports this module
from gradviz.tensor import Tensor, _legacy_init

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
           "IntTensor", "LongTensor", "ShortTensor"]


class _CudaLegacyType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cuda"

    def __call__(cls, *args: Any) -> Tensor:
        if not is_available():
            raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled with CUDA enabled.")
        t = object.__new__(Tensor)
        _legacy_init(t, cls.dtype, args, "cuda")
        return t


def _typed(name: str, dtype: Any) -> type:
    return _CudaLegacyType(name, (), {"dtype": dtype, "is_cuda": True, "__module__": "torch.cuda"})


FloatTensor = _typed("FloatTensor", _dtype.float32)
DoubleTensor = _typed("DoubleTensor", _dtype.float64)
HalfTensor = _typed("HalfTensor", _dtype.float16)
BFloat16Tensor = _typed("BFloat16Tensor", _dtype.bfloat16)
LongTensor = _typed("LongTensor", _dtype.int64)
IntTensor = _typed("IntTensor", _dtype.int32)
ShortTensor = _typed("ShortTensor", _dtype.int16)
CharTensor = _typed("CharTensor", _dtype.int8)
ByteTensor = _typed("ByteTensor", _dtype.uint8)
BoolTensor = _typed("BoolTensor", _dtype.bool_)
