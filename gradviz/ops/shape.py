"""Joining and splitting: cat, stack, split, chunk, unbind."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import indexing as _indexing
from gradviz.ops import views as _views
from gradviz.ops._common import (
    NODES,
    _ascontiguous,
    _cast,
    _check_devices,
    _new,
    _wrap_dim,
    register,
    result_type,
)
from gradviz.ops.construction import (
    _zeros_filled,
)
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.tensor import Tensor

# -- joining and splitting -------------------------------------------------------------------


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    if isinstance(tensors, Tensor):  # iterating it would cat its rows
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t_ in enumerate(tensors):
        if t_.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = _wrap_dim(dim, tensors[0].ndim)
    first = tensors[0]
    for i, t_ in enumerate(tensors[1:], 1):
        _check_devices(first, t_)
        if t_.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {t_.ndim}")
        for j in range(first.ndim):
            if j != d and t_.shape[j] != first.shape[j]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {first.shape[j]} but got "
                    f"size {t_.shape[j]} for tensor number {i} in the list."
                )
    # torch's cat is always contiguous; numpy keeps the inputs' layout (F-order for broadcasts),
    # which would change later view/reshape decisions.
    dt = result_type(*tensors) if builtins.any(t_.dtype is not tensors[0].dtype for t_ in tensors) else tensors[0].dtype
    data = np.concatenate([t_._data for t_ in tensors], axis=d)
    out = _new(_ascontiguous(_cast(data, dt)), tensors[0].device)
    if _grad_state.enabled and builtins.any(t_.requires_grad for t_ in tensors):
        record(NODES["cat"], tuple(tensors), [out], {"sizes": [t_.shape[d] for t_ in tensors], "dim": d})
    return out


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    if isinstance(tensors, Tensor):  # iterating it would stack its rows
        raise TypeError("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = _wrap_dim(dim, tensors[0].ndim + 1)
    for i, t_ in enumerate(tensors[1:], 1):  # by position: list.index would compare tensors with ==
        _check_devices(tensors[0], t_)
        if t_.shape != tensors[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                f"entry 0 and {list(t_.shape)} at entry {i}"
            )
    dt = result_type(*tensors) if builtins.any(t_.dtype is not tensors[0].dtype for t_ in tensors) else tensors[0].dtype
    out = _new(_ascontiguous(_cast(np.stack([t_._data for t_ in tensors], axis=d), dt)), tensors[0].device)
    if _grad_state.enabled and builtins.any(t_.requires_grad for t_ in tensors):
        record(NODES["stack"], tuple(tensors), [out], {"dim": d})
    return out


def _split_outputs(key: str, a: Tensor, pieces: list[Any], d: int, saved: dict) -> tuple[Tensor, ...]:
    outs = [_new(p, a.device) for p in pieces]
    for o in outs:
        o._version_counter = a._version_counter
        o._view_version = a._version_counter[0]
        o._base = a if a._base is None else a._base
    if _grad_state.enabled and a.requires_grad:
        saved.update({"sizes": [o.shape for o in outs], "dim": d, "dtype": a.dtype, "device": a.device})
        record(NODES[key], (a,), outs, saved)
    return tuple(outs)


def split(a: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        bounds = list(range(step, size, step))
    else:
        if builtins.sum(split_size_or_sections) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
                f"at dimension {d}), but got split_sizes={list(split_size_or_sections)}"
            )
        bounds = list(np.cumsum(split_size_or_sections)[:-1])
        return _split_outputs("split_with_sizes", a, np.split(a._data, bounds, axis=d), d, {})
    return _split_outputs("split", a, np.split(a._data, bounds, axis=d), d, {})


def split_sizes(g: Tensor, sizes: Sequence[int], dim: int) -> list[Tensor]:
    """Pieces of g along dim with the given sizes (used by cat's backward)."""
    out, start = [], 0
    for s in sizes:
        idx = (slice(None),) * dim + (slice(start, start + s),)
        out.append(_views._view_of(g, g._data[idx], "slice", {"shape": g.shape, "key": idx}))
        start += s
    return out


def chunk(a: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = a.shape[_wrap_dim(dim, a.ndim)]
    step = -(-size // chunks)
    return split(a, step, dim)


def unbind(a: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, a.ndim)
    # Views of a (np.take would copy: a later in-place change of a would not show in them).
    pieces = [a._data[(slice(None),) * d + (i, Ellipsis)] for i in range(a.shape[d])]
    return _split_outputs("unbind", a, pieces, d, {})


# -- backward formulas ----------------------------------------------------------------------


def _split(n, grads):
    parts = _zeros_filled(grads, n["sizes"], n["dtype"], n["device"])
    return cat(parts, n["dim"])


def _unbind(n, grads):
    parts = _zeros_filled(grads, n["sizes"], n["dtype"], n["device"])
    return stack(parts, n["dim"])


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "cat": D("CatBackward0", (), all_inputs=lambda n, g: split_sizes(g, n["sizes"], n["dim"])),
    "stack": D("StackBackward0", (), all_inputs=lambda n, g: [
        _indexing.select(g, n["dim"], i) for i in range(g.shape[n["dim"]])]),
    "split": D("SplitBackward0", (_split,), multi_output=True),
    "split_with_sizes": D("SplitWithSizesBackward0", (_split,), multi_output=True),
    "unbind": D("UnbindBackward0", (_unbind,), multi_output=True),
}  # fmt: skip
register(ROWS)
