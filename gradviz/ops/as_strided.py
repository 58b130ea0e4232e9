"""as_strided: a view of a tensor's memory (its outermost numpy base) with the given sizes,
strides and storage offset, as torch's (AsStridedBackward0). The gradient scatters the output's
gradient onto the memory positions it read and gathers the input's positions back (divided by
how often an input position repeats, where the input overlaps itself, as torch's formula does);
computed in numpy, so a second-order gradient through it is not recorded."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.ops._common import _new, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.tensor_info import storage_offset as _storage_offset
from gradviz.ops.tensor_info import stride as _stride
from gradviz.ops.views import _view_of
from gradviz.tensor import Tensor

__all__ = ["as_strided"]


def memory_of(a: Tensor) -> np.ndarray:
    """The outermost memory under a's array, through numpy's own stride-trick wrappers (whose
    array interface describes the memory they wrap), as tensor_info.storage_offset walks it."""
    root = a._data
    while getattr(root, "base", None) is not None and hasattr(root.base, "__array_interface__"):
        root = root.base
    return root if isinstance(root, np.ndarray) else np.asarray(root)


def _positions(size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> np.ndarray:
    pos = np.full(size, offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return pos


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"[{', '.join(map(str, stride))}]")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    offset = _storage_offset(input) if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    root = memory_of(input)
    item = input._data.itemsize
    if not root.flags.c_contiguous or root.dtype != input._data.dtype:
        raise RuntimeError("gradviz has no as_strided over this tensor's memory (not one contiguous buffer)")
    nelem = root.size
    need = 0 if 0 in size else offset + sum((n - 1) * st for n, st in zip(size, stride, strict=True)) + 1
    if need > nelem:
        raise RuntimeError(
            f"setStorage: sizes [{', '.join(map(str, size))}], strides [{', '.join(map(str, stride))}], storage offset "
            f"{offset}, and itemsize {item} requiring a storage size of {need * item} are out of bounds for storage "
            f"of size {nelem * item}"
        )
    flat = root.reshape(-1)
    data = np.lib.stride_tricks.as_strided(flat[offset:] if offset < nelem else flat[:0], size,
                                           tuple(st * item for st in stride))
    saved = {"in_geometry": (tuple(input.shape), _stride(input), _storage_offset(input)),
             "out_geometry": (size, stride, offset), "storage_size": nelem}
    return _view_of(input, data, "as_strided_call", saved)


def _as_strided_grad(n: Any, g: Tensor) -> Tensor:
    in_pos = _positions(*n["in_geometry"])
    out_pos = _positions(*n["out_geometry"])
    grad = np.asarray(g._data)
    buf = np.zeros(n["storage_size"], dtype=grad.dtype)
    np.add.at(buf, out_pos.reshape(-1), grad.reshape(-1))
    res = buf[in_pos]
    counts = np.bincount(in_pos.reshape(-1), minlength=n["storage_size"]) if in_pos.size else None
    if counts is not None and counts.max() > 1:
        res = res / counts[in_pos]
    return _new(np.ascontiguousarray(res.astype(grad.dtype, copy=False)), g.device)


# "as_strided" is the key of a view regenerated after an in-place change (ops/views.py): a key of its own
register({"as_strided_call": D("AsStridedBackward0", (_as_strided_grad,))})
