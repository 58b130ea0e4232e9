"""torch.memory_format and its four values, and the Tensor methods that take one: ``contiguous``,
``clone`` and ``is_contiguous``. channels_last (4-D) and channels_last_3d (5-D) lay the channel
dim innermost (NHWC / NDHWC strides), as torch's; the copy records CloneBackward0 as torch's does.
contiguous_format is the row-major layout; preserve_format (clone's default) keeps a dense layout."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.ops import views as _views
from gradviz.ops.tensor_info import stride as _stride
from gradviz.tensor import Tensor

__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]


class memory_format:  # noqa: N801 - torch.memory_format
    __slots__ = ("_name",)

    def __new__(cls, *args: Any, **kwargs: Any) -> memory_format:
        raise TypeError("cannot create 'torch.memory_format' instances")

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> tuple:
        return _by_name, (self._name,)


memory_format.__module__ = "torch"


def _make(name: str) -> memory_format:
    m = object.__new__(memory_format)
    m._name = name
    return m


contiguous_format = _make("contiguous_format")
channels_last = _make("channels_last")
channels_last_3d = _make("channels_last_3d")
preserve_format = _make("preserve_format")

def _by_name(name: str) -> memory_format:
    return globals()[name]


_FORMAT = memory_format  # (the methods' parameter of that name hides the class)
# the dims from outermost to innermost in memory
_ORDER = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def _check(t: Tensor, fmt: Any, fn: str, rank: bool = True) -> None:
    if not isinstance(fmt, _FORMAT):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")
    if rank and fmt in _ORDER and t.dim() != _ORDER[fmt][0]:
        raise RuntimeError(f"required rank {_ORDER[fmt][0]} tensor to use {fmt._name} format")


def _strides_for(shape: tuple[int, ...], order: tuple[int, ...]) -> list[int]:
    out, acc = [0] * len(shape), 1
    for d in reversed(order):
        out[d] = acc
        acc *= max(shape[d], 1)
    return out


def _is_laid_out(t: Tensor, fmt: memory_format) -> bool:
    if fmt is contiguous_format or fmt is preserve_format:
        return bool(t._data.flags["C_CONTIGUOUS"])
    rank, order = _ORDER[fmt]
    if t.dim() != rank:
        return False
    want, have = _strides_for(tuple(t.shape), order), _stride(t)
    return all(n == 1 or w == h for n, w, h in zip(t.shape, want, have, strict=True))


def _laid_out_copy(t: Tensor, fmt: memory_format) -> Tensor:
    out = _views.clone(t, contiguous=True)  # CloneBackward0, as torch records
    order = _ORDER[fmt][1]
    inverse = tuple(int(i) for i in np.argsort(order))
    out._data = np.ascontiguousarray(out._data.transpose(order)).transpose(inverse)
    return out


def contiguous(self: Tensor, memory_format: memory_format = contiguous_format) -> Tensor:
    _check(self, memory_format, "contiguous")
    if memory_format in _ORDER:
        return self if _is_laid_out(self, memory_format) else _laid_out_copy(self, memory_format)
    return _views.contiguous(self)


def clone(self: Tensor, *, memory_format: memory_format = preserve_format) -> Tensor:
    _check(self, memory_format, "clone")
    if memory_format in _ORDER:
        return _laid_out_copy(self, memory_format)
    return _views.clone(self, contiguous=memory_format is contiguous_format)


def is_contiguous(self: Tensor, memory_format: memory_format = contiguous_format) -> bool:
    _check(self, memory_format, "is_contiguous", rank=False)
    return _is_laid_out(self, memory_format)


def install() -> None:
    Tensor.contiguous = contiguous  # type: ignore[method-assign]
    Tensor.clone = clone  # type: ignore[method-assign]
    Tensor.is_contiguous = is_contiguous  # type: ignore[method-assign]
