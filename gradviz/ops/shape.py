"""Shape: joining and splitting (cat, stack, split, chunk, unbind), repeating (repeat,
repeat_interleave), reordering (flip, roll), narrow, and the triangles (tril, triu)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import indexing as _indexing
from gradviz.ops import reductions as _reductions
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
    zeros,
)
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "cat", "chunk", "concat", "flip", "narrow", "repeat_interleave", "roll", "split", "stack", "tril", "triu",
    "unbind",
]

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
    if _grad_state.enabled and builtins.any(t_._tracked for t_ in tensors):
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
    if _grad_state.enabled and builtins.any(t_._tracked for t_ in tensors):
        record(NODES["stack"], tuple(tensors), [out], {"dim": d})
    return out


def _split_outputs(key: str, a: Tensor, pieces: list[Any], d: int, saved: dict) -> tuple[Tensor, ...]:
    outs = [_new(p, a.device) for p in pieces]
    for o in outs:
        o._version_counter = a._version_counter
        o._view_version = a._version_counter[0]
        o._base = a if a._base is None else a._base
    if _grad_state.enabled and a._tracked:
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


# -- repeating, reordering, narrowing, triangles ---------------------------------------------


def repeat(a: Tensor, *sizes: Any, **kw: Any) -> Tensor:
    """a tiled ``sizes`` times along each dim (new leading dims for extra sizes): RepeatBackward0."""
    if kw:  # torch's keyword: repeat(repeats=(...))
        sizes = (_views._keyword_only("repeat", kw, "repeats"),)
    sizes = tuple(sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes)
    if len(sizes) < a.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    padded = (1,) * (len(sizes) - a.ndim) + tuple(a.shape)
    target = [p * r for p, r in zip(padded, sizes, strict=True)]
    for t in target:
        if t < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {t}: {target}")
    out = _new(np.tile(a._data.reshape(padded), sizes), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["repeat"], (a,), [out], {"self_sym_sizes": a.shape, "repeats": sizes})
    return out


def repeat_interleave(a: Tensor, repeats: Any, dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Each element repeated: an int count is torch's unsqueeze, expand, clone and view (so
    those nodes); a tensor of counts is an index_select of the repeated positions."""
    if dim is None:
        a = _views.flatten(a)  # torch's: a 1-d input as it is (no ViewBackward0)
        dim = 0
    d = _wrap_dim(dim, a.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        counts = repeats._data
        if counts.ndim != 1 or counts.shape[0] != a.shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{counts.shape[0] if counts.ndim else 1} and input.size({d}) = {a.shape[d]}")
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        index = _new(np.repeat(np.arange(a.shape[d]), counts), a.device)
        return _indexing.index_select(a, d, index)
    r = int(repeats.item() if isinstance(repeats, Tensor) else repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    u = _views.unsqueeze(a, d + 1)
    shape = list(u.shape)
    shape[d + 1] = r
    e = _views.clone(_views.expand(u, shape), contiguous=True)
    new = list(a.shape)
    new[d] *= r
    return _views.view(e, new)


def narrow(a: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The slice start:start + length along dim, a view (SliceBackward0)."""
    if a.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d]
    start = int(start)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    idx = (slice(None),) * d + (slice(start, start + length, 1),)
    return _views._view_of(a, a._data[idx], "slice", {"shape": a.shape, "key": idx})


def _dims_list(dims: Any, ndim: int) -> tuple[int, ...]:
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(_wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(dims)}, but unique flip dims "
                           f"size={len(set(out))}")
    return out


def flip(a: Tensor, *dims: Any, **kw: Any) -> Tensor:
    """A copy reversed along ``dims`` (FlipBackward0)."""
    if kw:  # torch's keyword: flip(dims=(...)), as torch's docs write it
        dims = (_views._keyword_only("flip", kw, "dims"),)
    dims = _dims_list(dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims, a.ndim)
    out = _new(_ascontiguous(np.flip(a._data, dims)).copy() if dims else a._data.copy(), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["flip"], (a,), [out], {"dims": dims})
    return out


def roll(a: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Elements shifted along dims, wrapping around (RollBackward0); without dims, over the
    flattened tensor."""
    shifts_t = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts_t) != 1:
            raise RuntimeError(
                f"`shifts` required to be of size 1 when `dims` is not provided, but got {len(shifts_t)}"
            )
        data = np.roll(a._data, shifts_t[0])
        dims_t: tuple[int, ...] = ()
    else:
        dims_t = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts_t) != len(dims_t):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts_t)}, dims:{len(dims_t)}")
        dims_t = tuple(_wrap_dim(d, a.ndim) for d in dims_t)
        data = np.roll(a._data, shifts_t, dims_t)
    out = _new(_ascontiguous(data), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["roll"], (a,), [out], {"shifts": shifts_t, "dims": dims_t})
    return out


def _triangle(key: str, a: Tensor, diagonal: int) -> Tensor:
    if a.ndim < 2:
        raise RuntimeError(f"{key}: input tensor must have at least 2 dimensions")
    fn = np.tril if key == "tril" else np.triu
    out = _new(_ascontiguous(fn(a._data, diagonal)), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [out], {"diagonal": diagonal})
    return out


def tril(a: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle("tril", a, diagonal)


def triu(a: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle("triu", a, diagonal)


# -- backward formulas ----------------------------------------------------------------------


def _split(n, grads):
    parts = _zeros_filled(grads, n["sizes"], n["dtype"], n["device"])
    return cat(parts, n["dim"])


def _repeat(n, g):
    # torch's repeat_backward: the new leading dims summed away one by one, then the gradient
    # reshaped to (repeat, size) pairs where a dim was repeated and summed over the repeats
    sizes, reps = n["self_sym_sizes"], n["repeats"]
    if 0 in reps:
        return zeros(tuple(sizes), dtype=g.dtype, device=g.device)
    lead = len(reps) - len(sizes)
    for _ in range(lead):
        g = _reductions.sum(g, 0)
    shape, axes = [], []
    for r, size in zip(reps[lead:], sizes):
        if r != 1:
            shape.append(r)
            axes.append(len(shape) - 1)
        shape.append(size)
    return _reductions.sum(_views.reshape(g, shape), axes) if axes else g


def _roll(n, g):
    shifts, dims = n["shifts"], n["dims"]
    return roll(g, tuple(-s for s in shifts), dims if dims else None)


def _unbind(n, grads):
    parts = _zeros_filled(grads, n["sizes"], n["dtype"], n["device"])
    return stack(parts, n["dim"])


# -- derivative rows ----------------------------------------------------------------------


# -- forward formulas (forward AD)


def _fw_split(n, ts, outs):
    """The tangent split as the input was (each piece a view of it)."""
    d, start, pieces = n["dim"], 0, []
    for o in outs:
        pieces.append(narrow(ts[0], d, start, o.shape[d]))
        start += o.shape[d]
    return pieces


def _fw_repeat(n, ts, outs):
    return repeat(ts[0], *n["repeats"])


def _fw_roll(n, ts, outs):
    return roll(ts[0], n["shifts"], n["dims"] if n["dims"] else None)


ROWS: dict[str, D] = {
    "cat": D("CatBackward0", (), all_inputs=lambda n, g: split_sizes(g, n["sizes"], n["dim"]),
        forward=lambda n, ts, o: cat(_indexing.fw_tangents(n, ts), n["dim"])),
    "stack": D("StackBackward0", (), all_inputs=lambda n, g: [
        _indexing.select(g, n["dim"], i) for i in range(g.shape[n["dim"]])],
            forward=lambda n, ts, o: stack(_indexing.fw_tangents(n, ts), n["dim"])),
    "split": D("SplitBackward0", (_split,), multi_output=True, forward=_fw_split),
    "split_with_sizes": D("SplitWithSizesBackward0", (_split,), multi_output=True, forward=_fw_split),
    "unbind": D("UnbindBackward0", (_unbind,), multi_output=True, forward=lambda n, ts, o: unbind(ts[0], n["dim"])),
    "repeat": D("RepeatBackward0", (_repeat,), forward=_fw_repeat),
    "flip": D("FlipBackward0", (lambda n, g: flip(g, n["dims"]),), forward=lambda n, ts, o: flip(ts[0], n["dims"])),
    "roll": D("RollBackward0", (_roll,), forward=_fw_roll),
    "tril": D("TrilBackward0", (lambda n, g: tril(g, n["diagonal"]),),
        forward=lambda n, ts, o: tril(ts[0], n["diagonal"])),
    "triu": D("TriuBackward0", (lambda n, g: triu(g, n["diagonal"]),),
        forward=lambda n, ts, o: triu(ts[0], n["diagonal"])),
}
register(ROWS)
