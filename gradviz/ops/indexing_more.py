"""Writing through indices: index_copy, index_fill, index_put (accumulating too), index_reduce,
scatter_reduce, masked_scatter, select_scatter, slice_scatter, diagonal_scatter, put, and their
in-place forms (index_copy_, ..., fill_diagonal_), each recording torch 2.13's node.

Each op here computes out of place and records its node; the in-place form runs it through
gradviz.ops.inplace_variants.apply_inplace, so the node's first edge is the tensor's old history,
as torch's generated in-place kernels do.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import inplace as _inplace
from gradviz.ops import math_more as _math_more
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _c_copy, _new, _wrap_dim, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_variants import apply_inplace, inplace_of
from gradviz.ops.inplace_write import named_inplace
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "diagonal_scatter", "index_copy", "index_fill", "index_put", "index_put_", "index_reduce", "masked_scatter",
    "put", "scatter_reduce", "select_scatter", "slice_scatter",
]


def _grad_needed(*ts: Any) -> bool:
    return _grad_state.enabled and any(isinstance(t, Tensor) and t._tracked for t in ts)


def _index_vector(op: str, index: Tensor) -> Any:
    if index.dtype is not _dtype.int64 and index.dtype is not _dtype.int32:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_dtype.scalar_type_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    return index._data.reshape(-1)


def _along(ndim: int, d: int, idx: Any) -> tuple:
    return (slice(None),) * d + (idx,)


def _check_dtypes(op: str, a: Tensor, src: Tensor) -> None:
    if src.dtype is not a.dtype:
        raise RuntimeError(f"{op}(): self ({_dtype.scalar_type_name(a.dtype)}) and source "
                           f"({_dtype.scalar_type_name(src.dtype)}) must have the same scalar type")


# -- index_copy / index_fill / index_put ----------------------------------------------------------
def index_copy(a: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """a with the slices along dim at ``index`` replaced by source's (IndexCopyBackward0)."""
    d = _wrap_dim(dim, a.ndim)
    idx = _index_vector("index_copy", index)
    _check_dtypes("index_copy", a, source)
    data = _c_copy(a._data)
    src = source._data if source.ndim == a.ndim else source._data.reshape(
        a.shape[:d] + (len(idx),) + a.shape[d + 1:])
    data[_along(a.ndim, d, idx)] = src
    out = _new(data, a.device)
    if _grad_needed(a, source):
        record(NODES["index_copy"], (a, source), [out], {"dim": d, "index": index, "source_shape": source.shape})
    return out


def index_fill(a: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """a with the slices along dim at ``index`` set to value (a number, or a 0-dim tensor)."""
    d = _wrap_dim(dim, a.ndim) if a.ndim else 0
    idx = _index_vector("index_fill", index)
    vt = value if isinstance(value, Tensor) else None
    if vt is not None and vt.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {vt.ndim} "
                           "dimension(s).")
    data = _c_copy(a._data)
    if a.ndim:
        data[_along(a.ndim, d, idx)] = vt._data if vt is not None else value
    elif idx.size:
        data[...] = vt._data if vt is not None else value
    out = _new(data, a.device)
    if _grad_needed(a, vt):
        if vt is None:
            record(NODES["index_fill"], (a,), [out], {"dim": d, "index": index})
        else:
            record(NODES["index_fill_tensor"], (a, vt), [out], {"dim": d, "index": index})
    return out


def index_put(a: Tensor, indices: Sequence[Any], values: Tensor, accumulate: bool = False) -> Tensor:
    """a with values written (or added, with accumulate) at the positions tensor indices select."""
    if not isinstance(values, Tensor):
        raise TypeError("index_put(): argument 'values' must be Tensor")
    if values.dtype is not a.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_dtype.scalar_type_name(a.dtype)} for the destination and "
                           f"{_dtype.scalar_type_name(values.dtype)} for the source.")
    keys = tuple(indices)
    _inplace._check_advanced_keys(a, keys)
    idx = _inplace._numpy_key(a, keys)
    data = _c_copy(a._data)
    target = data[idx].shape
    v = np.broadcast_to(values._data, target)
    if accumulate:
        np.add.at(data, idx, v)
    else:
        data[idx] = v
    out = _new(data, a.device)
    if _grad_needed(a, values):
        mask = np.zeros(a.shape, dtype=bool)
        mask[idx] = True
        record(NODES["index_put_accumulate" if accumulate else "index_put"], (a, values), [out],
               {"key": idx, "mask": Tensor(mask, a.device)})
    return out


def index_put_(a: Tensor, indices: Sequence[Any], values: Tensor, accumulate: bool = False) -> Tensor:
    return apply_inplace("index_put_", a, index_put, indices, values, accumulate)


# -- reductions into positions ----------------------------------------------------------------------
_REDUCE_INDEX = ("prod", "mean", "amax", "amin")
_REDUCE_SCATTER = ("sum", "prod", "mean", "amax", "amin")
_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}


def _reduce_into(data: Any, key: tuple, src: Any, reduce: str, include_self: bool) -> Any:
    """data with src reduced into the positions key names (repeats reduce too)."""
    out = data.copy()
    if not include_self:
        ident = _IDENTITY[reduce]
        if out.dtype.kind != "f" and not np.isfinite(ident):
            ident = np.iinfo(out.dtype).min if reduce == "amax" else np.iinfo(out.dtype).max
        out[key] = ident
    _UFUNC[reduce].at(out, key, src)
    if reduce == "mean":
        count = np.zeros(out.shape, dtype=np.int64) + (1 if include_self else 0)
        np.add.at(count, key, 1)
        count = np.maximum(count, 1)
        out = (out / count).astype(out.dtype) if out.dtype.kind == "f" else out // count
    return out


_BETA_WARNED: list[bool] = []


def index_reduce(a: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """source's slices reduced ("prod", "mean", "amax", "amin") into a's at ``index`` along dim."""
    if not _BETA_WARNED:
        _BETA_WARNED.append(True)  # torch warns once per process
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in _REDUCE_INDEX:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap_dim(dim, a.ndim)
    idx = _index_vector("index_reduce", index)
    _check_dtypes("index_reduce", a, source)
    data = _reduce_into(a._data, _along(a.ndim, d, idx), source._data, reduce, include_self)
    out = _new(data, a.device)
    if _grad_needed(a, source):
        record(NODES["index_reduce"], (a, source), [out], {
            "self": save(a), "source": save(source), "result": save(out, True), "dim": d, "index": index,
            "reduce": reduce, "include_self": include_self})
    return out


def scatter_reduce(a: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """src's elements reduced ("sum", "prod", "mean", "amax", "amin") into a at index along dim."""
    if reduce not in _REDUCE_SCATTER:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _wrap_dim(dim, a.ndim)
    _indexing._check_index_along("scatter_reduce", a, d, index)
    key = _scatter_key(index._data, d)
    data = _reduce_into(a._data, key, src._data[tuple(slice(0, n) for n in index.shape)], reduce, include_self)
    out = _new(data, a.device)
    if _grad_needed(a, src):
        record(NODES["scatter_reduce"], (a, src), [out], {
            "self": save(a), "src": save(src), "result": save(out, True), "dim": d, "index": index,
            "reduce": reduce, "include_self": include_self})
    return out


def _scatter_key(index: Any, d: int) -> tuple:
    grids = list(np.indices(index.shape, sparse=True))
    grids[d] = index
    return tuple(grids)


# -- scatters of a whole source ---------------------------------------------------------------------
def masked_scatter(a: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """a with source's first elements written, in order, where mask (broadcast to a) is True."""
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.scalar_type_name(mask.dtype)}")
    shape = np.broadcast_shapes(a.shape, mask.shape)
    m = np.broadcast_to(mask._data, shape)
    data = np.array(np.broadcast_to(a._data, shape))
    n = int(m.sum())
    if n > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as the ones selected "
                           "by the mask")
    data[m] = source._data.reshape(-1)[:n]
    out = _new(data, a.device)
    if _grad_needed(a, source):
        record(NODES["masked_scatter"], (a, source), [out], {"mask": mask, "source_shape": source.shape})
    return out


def _scatter_view(name: str, a: Tensor, src: Tensor, key: Any, saved: dict) -> Tensor:
    if src.dtype is not a.dtype:
        raise RuntimeError(f"{name}(): expected src and self to have the same dtype")
    data = _c_copy(a._data)
    target = data[key]
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(target.shape)}")
    data[key] = src._data
    out = _new(data, a.device)
    if _grad_needed(a, src):
        record(NODES[name], (a, src), [out], saved)
    return out


def select_scatter(a: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    d = _wrap_dim(dim, a.ndim)
    i = index + a.shape[d] if index < 0 else index
    return _scatter_view("select_scatter", a, src, _along(a.ndim, d, i), {"dim": d, "index": i})


def slice_scatter(a: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    d = _wrap_dim(dim, a.ndim)
    return _scatter_view("slice_scatter", a, src, _along(a.ndim, d, slice(start, end, step)),
                         {"dim": d, "start": start, "end": end, "step": step})


def _diagonal_key(shape: tuple[int, ...], offset: int, d1: int, d2: int) -> tuple:
    n = max(0, min(shape[d1] - max(-offset, 0), shape[d2] - max(offset, 0)))
    i = np.arange(n)
    key: list[Any] = [slice(None)] * len(shape)
    key[d1], key[d2] = i + max(-offset, 0), i + max(offset, 0)
    return tuple(key)


def _numpy_diag_pos(d1: int, d2: int) -> int:
    """Where numpy's indexing puts the diagonal's dim (torch's diagonal puts it last): in place
    of the two when they are adjacent, else first."""
    return min(d1, d2) if abs(d1 - d2) == 1 else 0


def diagonal_scatter(a: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    d1, d2 = _wrap_dim(dim1, a.ndim), _wrap_dim(dim2, a.ndim)
    key = _diagonal_key(a.shape, offset, d1, d2)
    if src.dtype is not a.dtype:
        raise RuntimeError("diagonal_scatter(): expected src and self to have the same dtype")
    data = _c_copy(a._data)
    data[key] = np.moveaxis(src._data, -1, _numpy_diag_pos(d1, d2))
    out = _new(data, a.device)
    if _grad_needed(a, src):
        record(NODES["diagonal_scatter"], (a, src), [out], {"offset": offset, "dim1": d1, "dim2": d2})
    return out


def put(a: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """a with source written (or added) at the flat positions ``index`` (PutBackward0)."""
    if source.dtype is not a.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_dtype.scalar_type_name(a.dtype)} and "
                           f"source.dtype = {_dtype.scalar_type_name(source.dtype)}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    flat = _c_copy(a._data).reshape(-1)
    idx = index._data.reshape(-1)
    n = flat.size
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError(f"out of range: tried to access index {int(idx.max())} on a tensor of {n} elements.")
    if accumulate:
        np.add.at(flat, idx, source._data.reshape(-1))
    else:
        flat[idx] = source._data.reshape(-1)
    out = _new(flat.reshape(a.shape), a.device)
    if _grad_needed(a, source):
        record(NODES["put"], (a, source), [out], {"index": index, "accumulate": accumulate,
                                                  "source_shape": source.shape})
    return out


def _fill_diagonal(a: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """The main diagonal set to fill_value in place, written through a strided view (CopySlices),
    as torch's; a tall matrix's diagonal restarts every columns + 1 rows with wrap."""
    if a.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(a.shape)
    if not a._data.flags["C_CONTIGUOUS"]:
        # (torch writes through an as_strided view of any layout; here the positions are indexed)
        i = _new(np.arange(n), a.device)
        _inplace.setitem(a, (i,) * a.ndim, fill_value)
        return a
    step = int(np.cumprod((1, *a.shape[::-1][:-1])).sum())
    flat = _views.view(a, -1)
    _inplace.fill_(_indexing.getitem(flat, slice(0, n * step, step)), fill_value)
    if wrap and a.ndim == 2 and a.shape[0] > a.shape[1] + 1:
        # torch fills the wrapped part through a second view, starting columns + 1 rows down
        start = a.shape[1] * (a.shape[1] + 1)
        _inplace.fill_(_indexing.getitem(_views.view(a, -1), slice(start, None, step)), fill_value)
    return a


# torch's one op, here fills through views: their writes are one version bump named fill_diagonal_
fill_diagonal_ = named_inplace("fill_diagonal_", _fill_diagonal)


# -- backward formulas ------------------------------------------------------------------------------
def _zeros(n, g):
    return _construction.zeros_like(g)


def _sum_to_shape(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    return t if tuple(t.shape) == tuple(shape) else _views.reshape(t, shape)


def _reduce_grads(n, g, select, add_into, fill_self, rerun):
    """torch's index_reduce_backward / scatter_reduce_backward, over ``select`` (index_select or
    gather), ``add_into`` (index_add or scatter_add), ``fill_self`` (zeros where self was left out)
    and ``rerun`` (the forward reduction on other self and source values)."""
    x, src, result, reduce = n["self"], n["src"], n["result"], n["reduce"]
    if reduce == "sum":
        gs, gsrc = g, select(g)
    elif reduce == "prod":
        # torch's: a zero's gradient is the product of the others (the reduction rerun with that
        # zero as 1); where two or more zeros meet, every gradient is zero
        masked_self = _indexing.masked_fill(x, _pointwise.eq(x, 0), 1.0)
        gs = _arith.div(_arith.mul(g, rerun(masked_self, src)), masked_self)
        src_zero = _pointwise.eq(src, 0)
        zeros_at = select(add_into(_construction.zeros_like(x), _views.to_copy(src_zero, x.dtype)))
        single = _pointwise.logical_and(src_zero, _pointwise.eq(zeros_at, 1))
        others = select(_arith.mul(g, rerun(x, _indexing.masked_fill(src, single, 1.0))))
        gsrc = _arith.where(single, others, _arith.div(select(_arith.mul(g, result)),
                                                        _indexing.masked_fill(src, src_zero, 1.0)))
    elif reduce == "mean":
        count = _construction.ones_like(g) if n["include_self"] else _construction.zeros_like(g)
        count = add_into(count, _construction.ones_like(src))
        count = _indexing.masked_fill(count, _pointwise.eq(count, 0), 1.0)
        gs = _arith.div(g, count)
        gsrc = _arith.div(select(g), select(count))
    else:  # amax, amin: ties share the gradient
        value = select(result)
        self_is = _views.to_copy(_pointwise.eq(x, result), x.dtype)
        src_is = _views.to_copy(_pointwise.eq(src, value), x.dtype)
        spread = _arith.div(g, add_into(self_is, src_is))
        gs = _arith.mul(self_is, spread)
        gsrc = _arith.mul(src_is, select(spread))
    if not n["include_self"]:
        gs = fill_self(gs)
    return gs, gsrc


def _index_reduce_grads(n, g):
    d, index = n["dim"], n["index"]
    saved = {"self": n["self"], "src": n["source"], "result": n["result"], "reduce": n["reduce"],
             "include_self": n["include_self"]}
    return _reduce_grads(saved, g, lambda t: _indexing.index_select(t, d, index),
                         lambda t, s: _indexing.index_add(t, d, index, s),
                         lambda t: index_fill(t, d, index, 0.0),
                         lambda t, s: index_reduce(t, d, index, s, "prod", include_self=n["include_self"]))


def _scatter_reduce_grads(n, g):
    d, index = n["dim"], n["index"]
    saved = {"self": n["self"], "src": n["src"], "result": n["result"], "reduce": n["reduce"],
             "include_self": n["include_self"]}
    gs, gsrc = _reduce_grads(saved, g, lambda t: _indexing.gather(t, d, index),
                             lambda t, s: _indexing.scatter_add(t, d, index, s),
                             lambda t: _indexing.scatter(t, d, index, _construction.zeros_like(
                                 index, dtype=t.dtype)),
                             lambda t, s: scatter_reduce(t, d, index, s, "prod", include_self=n["include_self"]))
    src = saved["src"]
    if tuple(gsrc.shape) != tuple(src.shape):  # src larger than index: the rest gets no gradient
        full = _construction.zeros_like(src)
        gsrc = _indexing.scatter(full, d, _views.contiguous(_positions(index, d)), gsrc)
    return gs, gsrc


def _positions(index: Tensor, d: int) -> Tensor:
    shape = [1] * index.ndim
    shape[d] = index.shape[d]
    pos = np.broadcast_to(np.arange(index.shape[d]).reshape(shape), index.shape)
    return _new(np.ascontiguousarray(pos, dtype=np.int64), index.device)


def _masked_scatter_source(n, g):
    shape = n["source_shape"]
    sel = _math_more.masked_select(g, n["mask"])
    total = int(np.prod(shape))
    if sel.numel() < total:
        sel = _shape.cat([sel, _construction.zeros(total - sel.numel(), dtype=sel.dtype)])
    return _views.reshape(sel, shape)


def _put_self(n, g):
    if n["accumulate"]:
        return g
    return put(g, n["index"], _construction.zeros(n["source_shape"], dtype=g.dtype), False)


def _put_source(n, g):
    return _views.reshape(_math_more.take(g, n["index"]), n["source_shape"])


ROWS: dict[str, D] = {
    "index_copy": D("IndexCopyBackward0", (
        lambda n, g: index_fill(g, n["dim"], n["index"], 0.0),
        lambda n, g: _sum_to_shape(_indexing.index_select(g, n["dim"], n["index"]), n["source_shape"]),
    )),
    "index_fill": D("IndexFillBackward0", (lambda n, g: index_fill(g, n["dim"], n["index"], 0.0),)),
    "index_fill_tensor": D("IndexFillBackward1", (
        lambda n, g: index_fill(g, n["dim"], n["index"], 0.0),
        lambda n, g: _reductions.sum(_indexing.index_select(g, n["dim"], n["index"])),
    )),
    "index_put_accumulate": D("IndexPutBackward0", (
        lambda n, g: g, lambda n, g: _indexing.getitem_raw(g, n["key"], "index"),
    ), reduce_broadcast=True),
    "index_reduce": D("IndexReduceBackward0", (), all_inputs=_index_reduce_grads),
    "scatter_reduce": D("ScatterReduceBackward0", (), all_inputs=_scatter_reduce_grads),
    "masked_scatter": D("MaskedScatterBackward0", (
        lambda n, g: _indexing.masked_fill(g, n["mask"], 0.0), _masked_scatter_source,
    ), reduce_broadcast=True),
    "select_scatter": D("SelectScatterBackward0", (
        lambda n, g: select_scatter(g, _construction.zeros_like(_indexing.select(g, n["dim"], n["index"])),
                                    n["dim"], n["index"]),
        lambda n, g: _indexing.select(g, n["dim"], n["index"]),
    )),
    "slice_scatter": D("SliceScatterBackward0", (
        lambda n, g: slice_scatter(g, _construction.zeros_like(_slice(g, n)), n["dim"], n["start"], n["end"],
                                   n["step"]),
        lambda n, g: _slice(g, n),
    )),
    "diagonal_scatter": D("DiagonalScatterBackward0", (
        lambda n, g: diagonal_scatter(g, _construction.zeros_like(_diag(g, n)), n["offset"], n["dim1"], n["dim2"]),
        lambda n, g: _diag(g, n),
    )),
    "put": D("PutBackward0", (_put_self, _put_source)),
}
register(ROWS)


def _slice(g: Tensor, n) -> Tensor:
    return _indexing.getitem(g, _along(g.ndim, n["dim"], slice(n["start"], n["end"], n["step"])))


def _diag(g: Tensor, n) -> Tensor:
    if n["offset"] == 0:
        return _math_more.diagonal(g, 0, n["dim1"], n["dim2"])
    key = _diagonal_key(g.shape, n["offset"], n["dim1"], n["dim2"])
    picked = _indexing.getitem(g, tuple(_new(k, g.device) if isinstance(k, np.ndarray) else k for k in key))
    return _views.movedim(picked, _numpy_diag_pos(n["dim1"], n["dim2"]), -1)


# Tensor methods: the ops and their in-place forms
METHODS: dict[str, Any] = {
    "index_copy": index_copy, "index_fill": index_fill, "index_put": index_put, "index_reduce": index_reduce,
    "scatter_reduce": scatter_reduce, "masked_scatter": masked_scatter, "select_scatter": select_scatter,
    "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter, "put": put,
    "index_copy_": inplace_of("index_copy_", index_copy), "index_fill_": inplace_of("index_fill_", index_fill),
    "index_put_": index_put_, "index_reduce_": inplace_of("index_reduce_", index_reduce),
    "scatter_reduce_": inplace_of("scatter_reduce_", scatter_reduce),
    "masked_scatter_": inplace_of("masked_scatter_", masked_scatter), "put_": inplace_of("put_", put),
    "fill_diagonal_": fill_diagonal_,
}
