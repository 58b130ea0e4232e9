"""Views and copies: view, reshape, transpose, permute, (un)squeeze, expand; clone, to_copy."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import as_device, device_context, to_device_array
from gradviz.ops import indexing as _indexing
from gradviz.ops import reductions as _reductions
from gradviz.ops._common import (
    NODES,
    _ascontiguous,
    _dims,
    _new,
    _wrap_dim,
    register,
)
from gradviz.ops.construction import (
    _numel,
)
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "clone", "flatten", "movedim", "moveaxis", "numel", "permute", "reshape", "squeeze", "t", "transpose", "unsqueeze",
]


def unsqueeze_to(g: Tensor, shape: tuple[int, ...], dim: int | tuple[int, ...] | None = None) -> Tensor:
    """torch's unsqueeze_to: put back the size-1 dims a squeeze removed (all, only ``dim``, or
    those of the sorted dims ``dim`` that had size 1)."""
    if type(dim) is tuple:
        for d in dim:  # ascending: each goes back where it was
            if shape[d] == 1:
                g = unsqueeze(g, d)
        return g
    if dim is not None:
        return unsqueeze(g, dim) if shape and shape[dim] == 1 and g.ndim < len(shape) else g
    for d, size in enumerate(shape):
        if size == 1:
            g = unsqueeze(g, d)
    return g


# -- shapes and views ------------------------------------------------------------------------


def _infer_shape(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        if known == 0 and numel == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified dimension "
                "size -1 can be any value and is ambiguous"
            )
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if int(np.prod(shape)) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _view_of(a: Tensor, data: Any, key: str, saved: dict) -> Tensor:
    """A view: shares a's version counter; a node if a requires grad."""
    out = _new(data, a.device)
    out._version_counter = a._version_counter
    out._view_version = a._version_counter[0]
    out._base = a if a._base is None else a._base
    if _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [out], saved)
    if not _grad_state.grad and a.requires_grad:
        out._view_no_grad = True
    return out


def _view_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> list[int] | None:
    """torch's computeStride: strides (in elements) viewing ``shape``/``strides`` as ``new``, or
    None when that needs a copy. Follows torch rather than numpy, which refuses some views torch
    makes (all-zero strides of an expanded tensor)."""
    if not shape:
        return [1] * len(new)
    numel = int(np.prod(shape))
    if numel == 0:
        if tuple(shape) == tuple(new):
            return list(strides)
        out = [0] * len(new)
        for d in range(len(new) - 1, -1, -1):
            out[d] = 1 if d == len(new) - 1 else builtins.max(new[d + 1], 1) * out[d + 1]
        return out
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_base_stride
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    return out if view_d == -1 else None


def _try_view(x: Any, shape: tuple[int, ...]) -> Any | None:
    item = x.itemsize
    st = _view_strides(x.shape, tuple(s // item for s in x.strides), tuple(shape))
    if st is None:
        return None
    if hasattr(x, "__array_interface__"):
        return np.lib.stride_tricks.as_strided(x, shape, tuple(s * item for s in st), writeable=x.flags.writeable)
    return x.reshape(shape)  # cupy: its own no-copy reshape


def _keyword_only(op: str, kw: dict, name: str) -> Any:
    """The one keyword torch's schema names for an op that also takes its sizes or dims as
    varargs (``x.flip(dims=(1,))``); any other keyword is refused as Python would."""
    extra = [k for k in kw if k != name]
    if extra or name not in kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{(extra or list(kw))[0]}'")
    return kw[name]


def view(a: Tensor, *shape: Any, size: Any = None) -> Tensor:
    if size is not None:  # torch's keyword: view(size=(...))
        shape = (size,)
    shape = _infer_shape(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape,
                         a.numel())
    data = _try_view(a._data, shape)
    if data is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension "
            "spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return _view_of(a, data, "view", {"shape": a.shape})


def reshape(a: Tensor, *shape: Any, **kw: Any) -> Tensor:
    if kw:  # torch's keyword: reshape(shape=(...))
        shape = (_keyword_only("reshape", kw, "shape"),)
    shape = _infer_shape(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape,
                         a.numel())
    data = _try_view(a._data, shape)
    if data is not None:
        # torch views contiguous data; strided data that still allows a view is _reshape_alias.
        key = "view" if a._data.flags["C_CONTIGUOUS"] else "reshape_alias"
        return _view_of(a, data, key, {"shape": a.shape})
    # Not expressible as a view: torch copies (CloneBackward0) and views the copy unsafely.
    return _unsafe_view(clone(a, contiguous=True), shape)


def _unsafe_view(a: Tensor, shape: tuple[int, ...]) -> Tensor:
    out = _new(_ascontiguous(a._data).reshape(shape), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["unsafe_view"], (a,), [out], {"shape": a.shape})
    return out


def flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if a.ndim == 0:
        return reshape(a, (1,))
    s, e = _wrap_dim(start_dim, a.ndim), _wrap_dim(end_dim, a.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    shape = a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:]
    return reshape(a, shape)


def t(a: Tensor) -> Tensor:
    if a.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {a.ndim}D")
    return _view_of(a, a._data.T, "t", {})


def transpose(a: Tensor, dim0: int, dim1: int) -> Tensor:
    d0, d1 = _wrap_dim(dim0, a.ndim), _wrap_dim(dim1, a.ndim)
    return _view_of(a, np.swapaxes(a._data, d0, d1), "transpose", {"dim0": d0, "dim1": d1})


def permute(a: Tensor, *dims: Any, **kw: Any) -> Tensor:
    if kw:  # torch's keyword: permute(dims=(...))
        dims = (_keyword_only("permute", kw, "dims"),)
    dims = tuple(dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)
    if len(dims) != a.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {a.ndim} is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(_wrap_dim(d, a.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = tuple(int(i) for i in np.argsort(dims))
    return _view_of(a, np.transpose(a._data, dims), "permute", {"inverse": inverse})


def movedim(a: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """The dims in source moved to destination, the others kept in order: a permute, as ATen's
    movedim computes it (an alias of a 0-d tensor)."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same number of "
            f"dims as destination ({dst} dims)"
        )
    n = a.ndim
    src = [_wrap_dim(d, n) for d in src]
    dst = [_wrap_dim(d, n) for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if n == 0:
        return _view_of(a, a._data.view(), "alias", {})  # the row is indexing.py's alias
    order: list[int | None] = [None] * n
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    rest = iter(d for d in range(n) if d not in src)
    return permute(a, tuple(next(rest) if o is None else o for o in order))


def unsqueeze(a: Tensor, dim: int) -> Tensor:
    d = _wrap_dim(dim, a.ndim + 1)
    return _view_of(a, np.expand_dims(a._data, d), "unsqueeze", {"dim": d})


moveaxis = movedim


def unsqueeze_dims(g: Tensor, dims: Sequence[int], ndim: int) -> Tensor:
    """Re-insert reduced dims (sorted, non-negative) into g: a chain of unsqueezes."""
    for d in sorted(dims):
        g = unsqueeze(g, d)
    return g


def squeeze(a: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    if dim is None:
        return _view_of(a, np.squeeze(a._data), "squeeze", {"shape": a.shape})
    if isinstance(dim, (tuple, list)):
        # torch's squeeze.dims (SqueezeBackward2): of the dims listed, those of size 1 go
        dims = _dims(dim, a.ndim) if dim else ()
        gone = tuple(d for d in dims if a.shape[d] == 1)
        return _view_of(a, np.squeeze(a._data, gone) if gone else a._data, "squeeze_dims",
                        {"shape": a.shape, "dims": dims})
    if a.ndim == 0:
        return _view_of(a, a._data, "squeeze_dim", {"shape": a.shape, "dim": None})
    d = _wrap_dim(dim, a.ndim)
    data = np.squeeze(a._data, d) if a.shape[d] == 1 else a._data
    return _view_of(a, data, "squeeze_dim", {"shape": a.shape, "dim": d})


def expand(a: Tensor, *shape: Any, size: Any = None) -> Tensor:
    if size is not None:  # torch's keyword: expand(size=(...))
        shape = (size,)
    shape = tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)
    lead = len(shape) - a.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand(torch.{_dtype.scalar_type_name(a.dtype)}Tensor{{{list(a.shape)}}}, size={list(shape)}): the "
            f"number of sizes provided ({len(shape)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({a.ndim})"
        )
    # torch's checks, in its order: from the last dim to the first
    for i in range(len(shape) - 1, -1, -1):
        if i < lead:
            if shape[i] == -1:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                )
            continue
        have = a.shape[i - lead]
        if shape[i] != -1 and have != 1 and have != shape[i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[i]}) must match the existing size ({have}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: {list(a.shape)}"
            )
    full = tuple(a.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    return _view_of(a, _broadcast(a._data, full), "expand", {"shape": a.shape})


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    """np.broadcast_to(x, shape) (checked by the caller): a read-only view, stride 0 along the
    broadcast dims. For a contiguous numpy array it is made by one constructor call: numpy's own
    goes through an nditer, three to five times the cost, paid by every sum's backward."""
    if type(x) is np.ndarray and x.flags.c_contiguous and x.size and x.dtype.isbuiltin:
        lead = len(shape) - x.ndim
        strides = (0,) * lead + tuple(0 if n != s else st for n, s, st in zip(x.shape, shape[lead:], x.strides))
        v = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        v.setflags(write=False)
        return v
    return np.broadcast_to(x, shape)


def numel(a: Tensor) -> int:
    return a.numel()


def expand_as(a: Tensor, other: Tensor) -> Tensor:
    return expand(a, other.shape)


# -- copies ----------------------------------------------------------------------------------


def _dense_non_overlapping(x: Any) -> bool:
    """Whether x's elements fill its memory exactly, in some order of dims (torch's
    is_non_overlapping_and_dense): then a copy may keep the layout."""
    strides = getattr(x, "strides", None)
    if strides is None:  # a sparse tensor's data (gradviz/_sparse_coo.py): no strides to keep
        return True
    dims = sorted((st, n) for st, n in zip(strides, x.shape) if n != 1)
    expected = x.itemsize
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def clone(a: Tensor, contiguous: bool = False) -> Tensor:
    # torch's clone preserves a dense layout (a transposed tensor stays transposed), which decides
    # later view/reshape behaviour; numpy's order="K" does the same. Other layouts (expanded,
    # strided) copy to contiguous, as does reshape's copy.
    keep = not contiguous and _dense_non_overlapping(a._data)
    out = _new(a._data.copy(order="K" if keep else "C"), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["clone"], (a,), [out], {})
    return out


def contiguous(a: Tensor) -> Tensor:
    if a._data.flags["C_CONTIGUOUS"]:  # numpy and cupy arrays alike
        return a
    return clone(a, contiguous=True)


def to_copy(a: Tensor, dtype: _dtype.dtype | None = None, device: Any = None) -> Tensor:
    """A copy in another dtype and/or on another device (ToCopyBackward0)."""
    dev = as_device(device) if device is not None else a.device
    dt = dtype or a.dtype
    if dev == a.device and dt is a.dtype:
        return a
    src = a._data
    # The cast where the data is (astype: numpy's or cupy's, a new array, made under the source's
    # GPU), then the move: a gpu's data never goes through host memory for a cast or a copy to
    # another gpu (to_device_array copies between gpus under the target's device).
    if src.dtype == dt.np:
        data = src
    elif a.device.type == "cuda":
        with device_context(a.device):
            data = src.astype(dt.np)
    else:
        data = src.astype(dt.np)
    if dev != a.device:
        data = to_device_array(data, dev)
    if data is src:  # no cast, and a move between numpy devices, which share host memory
        data = src.copy()
    out = _new(data, dev)
    if _grad_state.enabled and a._tracked:
        if not dt.is_floating_point:
            return out
        record(NODES["to_copy"], (a,), [out], {"dtype": a.dtype, "device": a.device})
    return out


# -- derivative rows ----------------------------------------------------------------------


# -- forward formulas (forward AD): a view's tangent is the same view of its input's tangent


def _fw_shape(n, ts, outs):
    """The tangent viewed in the output's shape (view, reshape, squeeze, unsqueeze)."""
    return reshape(ts[0], tuple(outs[0]._data.shape))


def _fw_permute(n, ts, outs):
    inverse = n["inverse"]
    return permute(ts[0], tuple(sorted(range(len(inverse)), key=lambda i: inverse[i])))


def _fw_as_strided(n, ts, outs):
    flat = reshape(ts[0], (-1,))
    return _indexing.getitem_raw(flat, (n["index"],), "index")


ROWS: dict[str, D] = {
    "view": D("ViewBackward0", (lambda n, g: reshape(g, n["shape"]),), forward=_fw_shape),
    "unsafe_view": D("UnsafeViewBackward0", (lambda n, g: reshape(g, n["shape"]),), forward=_fw_shape),
    "reshape_alias": D("ReshapeAliasBackward0", (lambda n, g: reshape(g, n["shape"]),), forward=_fw_shape),
    "t": D("TBackward0", (lambda n, g: t(g),), forward=lambda n, ts, o: t(ts[0])),
    "transpose": D("TransposeBackward0", (lambda n, g: transpose(g, n["dim0"], n["dim1"]),),
        forward=lambda n, ts, o: transpose(ts[0], n["dim0"], n["dim1"])),
    "permute": D("PermuteBackward0", (lambda n, g: permute(g, n["inverse"]),), forward=_fw_permute),
    "unsqueeze": D("UnsqueezeBackward0", (lambda n, g: squeeze(g, n["dim"]),), forward=_fw_shape),
    "squeeze": D("SqueezeBackward0", (lambda n, g: unsqueeze_to(g, n["shape"]),), forward=_fw_shape),
    "squeeze_dim": D("SqueezeBackward1", (lambda n, g: unsqueeze_to(g, n["shape"], n["dim"]),), forward=_fw_shape),
    "squeeze_dims": D("SqueezeBackward2", (lambda n, g: unsqueeze_to(g, n["shape"], n["dims"]),), forward=_fw_shape),
    "squeeze_dim_": D("SqueezeBackward4", (lambda n, g: unsqueeze_to(g, n["shape"], n["dim"]),), forward=_fw_shape),
    "expand": D("ExpandBackward0", (lambda n, g: _reductions.sum_to(g, n["shape"]),),
        forward=lambda n, ts, o: expand(ts[0], tuple(o[0].shape))),
    # a view whose base was changed in place through it (or another view): its new history
    "as_strided": D("AsStridedBackward0", (
        lambda n, g: reshape(_indexing.index_backward(g, (_numel(n["base_shape"]),), (n["index"],), "index"),
                               n["base_shape"]),
    ), forward=_fw_as_strided),
    # copies
    "clone": D("CloneBackward0", (lambda n, g: g,), forward=lambda n, ts, o: clone(ts[0])),
    "to_copy": D("ToCopyBackward0", (lambda n, g: to_copy(g, n["dtype"], n["device"]),),
        forward=lambda n, ts, o: to_copy(ts[0], n["dtype"], n["device"])),
}
register(ROWS)
