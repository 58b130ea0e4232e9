"""torch's remaining constructors: ``scalar_tensor``, the deprecated ``range`` (end included),
``empty_strided`` and ``empty_permuted`` (a tensor with the asked-for strides over memory of its
own, as torch allocates it; gradviz's memory holds zeros where torch's is uninitialized)."""

from __future__ import annotations

import builtins
import math
import os
import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz._dtype import dtype as DType
from gradviz.device import CPU
from gradviz.ops._common import _wrap
from gradviz.ops.construction import empty, tensor
from gradviz.tensor import Tensor

__all__ = ["empty_permuted", "empty_strided", "from_file", "frombuffer", "range", "scalar_tensor"]

_warned_read_only: list[bool] = []


def scalar_tensor(s: Any, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
                  **_: Any) -> Tensor:
    """A 0-d tensor of the default dtype whatever the number's type (a bool or an int too)."""
    if isinstance(s, Tensor):
        s = s.item()
    return tensor(s, dtype=dtype or _dtype._default[0], device=device, requires_grad=requires_grad)


def range(start: Any, end: Any, step: Any = 1, *, dtype: DType | None = None,  # noqa: A001
          device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """torch.range: floor((end - start) / step) + 1 values, ``start + i * step`` (end included)."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).",
        UserWarning, stacklevel=2,
    )
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = math.floor((end - start) / step) + 1
    values = start + np.arange(n, dtype=np.float64) * step
    return tensor(values, dtype=dtype or _dtype._default[0], device=device, requires_grad=requires_grad)


def _sizes(size: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in size)


def empty_strided(size: Any, stride: Any, *, dtype: DType | None = None, device: Any = None,
                  requires_grad: bool = False, **_: Any) -> Tensor:
    shape, strides = _sizes(size), _sizes(stride)
    if len(shape) != len(strides):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(strides)})")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    n = 0 if 0 in shape else 1 + sum((sz - 1) * st for sz, st in zip(shape, strides, strict=True))
    storage = empty(n, dtype=dtype, device=device)
    arr = storage._data
    view = np.lib.stride_tricks.as_strided(arr, shape, tuple(st * arr.itemsize for st in strides))
    out = _wrap(view, storage.dtype, storage.device)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size: Any, physical_layout: Any, *, dtype: DType | None = None, device: Any = None,
                   requires_grad: bool = False, **_: Any) -> Tensor:
    """Memory laid out in ``physical_layout``'s order, seen in ``size``'s logical order."""
    shape, layout = _sizes(size), _sizes(physical_layout)
    if len(set(layout)) != len(layout):
        raise RuntimeError("Duplicate dim not allowed")
    if sorted(layout) != list(builtins.range(len(shape))):
        raise RuntimeError(f"Dimension out of range (expected to be in range of [{-len(shape)}, {len(shape) - 1}], "
                           f"but got {max(layout)})")
    strides = [0] * len(shape)
    acc = 1
    for d in reversed(layout):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return empty_strided(shape, strides, dtype=dtype, device=device, requires_grad=requires_grad)




def frombuffer(buffer: Any, *, dtype: DType, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over a Python buffer's memory (shared: writes show through both ways)."""
    view = memoryview(buffer)
    nbytes, item = view.nbytes, dtype.itemsize
    if dtype.np.itemsize != item:
        raise TypeError(f"gradviz has no frombuffer for {dtype}: it holds those values in a wider numpy type")
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if offset < 0 or offset >= nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({nbytes} bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % item:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({item})")
        count = (nbytes - offset) // item
    elif offset + count * item > nbytes:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({nbytes} bytes)")
    if view.readonly and not _warned_read_only:
        _warned_read_only.append(True)  # torch says it once per process
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable tensors. This means you can "
            "write to the underlying (supposedly non-writable) buffer using the tensor. You may want to copy the "
            "buffer to protect its data or make it writable before converting it to a tensor. This type of warning "
            "will be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    arr = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    if view.readonly:
        arr = arr.copy()  # numpy cannot write through a read-only buffer; the values are the same
    out = _wrap(arr, dtype, CPU)
    return out.requires_grad_(True) if requires_grad else out


def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype: DType | None = None,
              device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """``size`` elements read from a file's start; ``shared=True`` maps the file, so writes to the
    tensor reach it (torch's mmap), otherwise a private copy."""
    dt = dtype or _dtype._default[0]
    if dt.np.itemsize != dt.itemsize:
        raise TypeError(f"gradviz has no from_file for {dt}: it holds those values in a wider numpy type")
    mode = "read-write" if shared else "read-only"
    try:
        nbytes = os.path.getsize(filename)
        open(filename, "r+b" if shared else "rb").close()
    except OSError as e:
        raise RuntimeError(f"unable to open file <{filename}> in {mode} mode: {e.strerror} ({e.errno})") from None
    need = size * dt.itemsize
    if need > nbytes:
        raise RuntimeError(f"file <{filename}> size <{nbytes}> is smaller than the required mapping size <{need}>")
    if size == 0:
        arr = np.zeros(0, dtype=dt.np)
    elif shared:
        arr = np.memmap(filename, dtype=dt.np, mode="r+", shape=(size,))
    else:
        arr = np.fromfile(filename, dtype=dt.np, count=size)
    out = _wrap(arr, dt, CPU)
    return out.requires_grad_(True) if requires_grad else out
