"""Ops torch builds from other ops (its CompositeImplicitAutograd kernels): here as there, they
record the nodes of the ops they are made of (torch.moveaxis records PermuteBackward0,
torch.hstack CatBackward0, torch.nanmean DivBackward0 over NansumBackward0)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from gradviz.ops import indexing as _indexing
from gradviz.ops import reductions as _reductions
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import _wrap_dim
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "broadcast_to", "column_stack", "dsplit", "dstack",
    "fliplr", "flipud", "hsplit", "hstack", "positive", "ravel", "row_stack", "take_along_dim",
    "tensor_split", "tile", "unflatten", "vsplit", "vstack",
]
# Tensor methods only (torch has no torch.sum_to_size)
METHOD_ONLY = ["sum_to_size"]


def positive(a: Tensor) -> Tensor:
    """a itself, as torch returns it (bool tensors refused as torch refuses them)."""
    if a.dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return a


def ravel(a: Tensor) -> Tensor:
    return _views.view(_views.contiguous(a), -1)  # torch's: contiguous().view(-1)


def unflatten(a: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = _wrap_dim(dim, a.ndim)
    shape = list(a.shape)
    sizes = list(sizes)
    if -1 in sizes:
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        sizes[sizes.index(-1)] = shape[d] // known if known else 0
    return _views.view(a, shape[:d] + sizes + shape[d + 1 :])


def broadcast_to(a: Tensor, size: Sequence[int]) -> Tensor:
    return _views.expand(a, tuple(size))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ndim = builtins.max(t.ndim for t in tensors)
    shape = [1] * ndim
    for t in tensors:
        for i, s in enumerate(t.shape, ndim - t.ndim):
            if s != 1:
                if shape[i] not in (1, s):
                    raise RuntimeError(f"The size of tensor a ({shape[i]}) must match the size of tensor b ({s}) at "
                                       f"non-singleton dimension {i}")
                shape[i] = s
    # as ATen's expand_outplace: a tensor that has the shape already is returned as it is (no ExpandBackward0)
    return tuple(t if tuple(t.shape) == tuple(shape) else _views.expand(t, tuple(shape)) for t in tensors)


def _atleast(a: Any, n: int) -> Any:
    if isinstance(a, (list, tuple)):
        return tuple(_atleast(t, n) for t in a)
    if a.ndim == 0:
        return _views.reshape(a, (1,) * n)  # torch's: reshape({1}) ... ViewBackward0
    if n >= 2 and a.ndim == 1:
        a = _views.unsqueeze(a, 0)
        return _views.unsqueeze(a, -1) if n == 3 else a
    if n == 3 and a.ndim == 2:
        return _views.unsqueeze(a, -1)
    return a


def atleast_1d(*tensors: Any) -> Any:
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 1)


def atleast_2d(*tensors: Any) -> Any:
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 2)


def atleast_3d(*tensors: Any) -> Any:
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 3)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    ts = atleast_1d(tuple(tensors))
    return _shape.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return _shape.cat(atleast_2d(tuple(tensors)), 0)


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    return _shape.cat(atleast_3d(tuple(tensors)), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    cols = tuple(_views.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors)
    return _shape.cat(cols, 1)


def tensor_split(a: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            stop = start + base + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        cuts = [0, *indices_or_sections, size]
        bounds = [(builtins.min(s, size), builtins.min(builtins.max(e, s), size)) for s, e in zip(cuts, cuts[1:])]
    key = (slice(None),) * d
    return tuple(_indexing.getitem(a, (*key, slice(s, e))) for s, e in bounds)


def _split_dims(a: Tensor, indices_or_sections: Any, dim: int, name: str, min_dims: int) -> tuple[Tensor, ...]:
    if a.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {a.ndim} dimensions!")
    if isinstance(indices_or_sections, int) and a.shape[dim] % indices_or_sections:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{a.shape[dim]} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(a, indices_or_sections, dim)


def hsplit(a: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    return _split_dims(a, indices_or_sections, 0 if a.ndim == 1 else 1, "hsplit", 1)


def vsplit(a: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    return _split_dims(a, indices_or_sections, 0, "vsplit", 2)


def dsplit(a: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    return _split_dims(a, indices_or_sections, 2, "dsplit", 3)


def fliplr(a: Tensor) -> Tensor:
    if a.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _shape.flip(a, 1)


def flipud(a: Tensor) -> Tensor:
    if a.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _shape.flip(a, 0)


def tile(a: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(dims)
    if len(dims) < a.ndim:
        dims = (1,) * (a.ndim - len(dims)) + dims
    return _shape.repeat(a, *dims)


def take_along_dim(a: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return _indexing.gather(_views.reshape(a, -1), 0, _views.reshape(indices, -1))
    d = _wrap_dim(dim, a.ndim)
    a_shape, i_shape = list(a.shape), list(indices.shape)
    a_shape[d] = i_shape[d] = 1
    common = [builtins.max(x, y) for x, y in zip(a_shape, i_shape, strict=True)]
    a_b, i_b = list(common), list(common)
    a_b[d], i_b[d] = a.shape[d], indices.shape[d]
    # torch broadcasts both with broadcast_to (an expand, ExpandBackward0, even to the same shape)
    return _indexing.gather(_views.expand(a, tuple(a_b)), d, _views.expand(indices, tuple(i_b)))


def sum_to_size(a: Tensor, *size: Any) -> Tensor:
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    if tuple(a.shape) == shape:
        return a
    lead = a.ndim - len(shape)
    dims = [*range(lead), *(lead + i for i, s in enumerate(shape) if s == 1 and a.shape[lead + i] != 1)]
    out = _reductions.sum(a, dims, keepdim=True)
    return _views.view(out, shape) if lead else out

