"""Indexing: getitem, select, gather, scatter, scatter_add, masked_fill, index_select, index_add,
nonzero (one-argument where), one_hot, and the index nodes' backward kernels."""

from __future__ import annotations

import builtins
import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import CPU, add_at, array_module
from gradviz.ops import arith as _arith
from gradviz.ops import reductions as _reductions
from gradviz.ops import views as _views
from gradviz.ops._common import (
    NODES,
    Scalar,
    _broadcast_error,
    _c_copy,
    _new,
    _wrap_dim,
    register,
)
from gradviz.ops.construction import (
    _zero_scalar,
    zeros_for,
)
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "argwhere", "gather", "index_add", "index_select", "masked_fill", "nonzero", "scatter", "scatter_add",
    "select",
]


def masked_fill(a: Tensor, mask: Tensor, value: Tensor | Scalar) -> Tensor:
    """a with ``value`` where mask is true (MaskedFillBackward0 for a number, MaskedFillBackward1
    for a 0-dim tensor, whose gradient is the sum of the masked gradient)."""
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {_dtype.cpp_type_name(mask.dtype)}"
        )
    vt = value if isinstance(value, Tensor) else None
    if vt is not None and vt.ndim != 0:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {vt.ndim} dimension(s)."
        )
    err = _broadcast_error(mask._data.shape, a._data.shape)
    if err is not None:
        raise err
    data = np.where(mask._data, vt._data if vt is not None else value, a._data).astype(a._data.dtype, copy=False)
    out = _new(data, a.device)
    if vt is None:
        if _grad_state.enabled and a._tracked:
            record(NODES["masked_fill"], (a,), [out], {"mask": mask.detach()})
    elif _grad_state.enabled and (a._tracked or vt._tracked):
        record(NODES["masked_fill_tensor"], (a, vt), [out], {"mask": mask.detach()})
    return out


def _check_index_along(op: str, a: Tensor, dim: int, index: Tensor) -> int:
    """gather/scatter's checks, torch's messages: the dim in range, an int64 index of a's rank,
    every index value within the dim (numpy would wrap a negative one, or name an axis)."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    d = _wrap_dim(dim, a.ndim)
    if index.ndim != a.ndim and not (index.ndim <= 1 and a.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    idx = index._data
    if idx.size:
        size = a.shape[d] if a.ndim else 1
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise RuntimeError(f"index {int(idx[bad].ravel()[0])} is out of bounds for dimension {d} with size {size}")
    return d


def _along_key(a: Tensor, dim: int, index: Tensor) -> tuple:
    """The positions index names along dim, over index's own shape (torch writes only there;
    numpy's put_along_axis would broadcast a size-1 dim of index over the whole of a's)."""
    xp = array_module(a.device)
    lead = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (index.ndim - d - 1)) for d, n in enumerate(index.shape)]
    return tuple(index._data if d == dim else lead[d] for d in range(a.ndim))


def scatter(a: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None) -> Tensor:
    """a with src written at index along dim (torch.scatter, ScatterBackward0), or one number
    (``value``, or a number as src: ScatterBackward1, whose only input is a). src may be larger
    than index: torch reads only its corner of index's shape."""
    if src is None:
        if value is None:
            raise TypeError("scatter() missing 1 required positional argument: \"src\" or \"value\"")
        src = value
    dim = _check_index_along("scatter", a, dim, index)
    data = a._data.copy()
    key = _along_key(a, dim, index)
    if not isinstance(src, Tensor):
        data[key] = np.asarray(src, dtype=data.dtype)
        out = _new(data, a.device)
        if _grad_state.enabled and a._tracked:
            record(NODES["scatter_value"], (a,), [out], {"dim": dim, "index": index.detach()})
        return out
    data[key] = src._data[tuple(slice(0, n) for n in index.shape)]
    out = _new(data, a.device)
    if _grad_state.enabled and (a._tracked or src._tracked):
        record(NODES["scatter"], (a, src), [out], {"dim": dim, "index": index.detach()})
    return out


def scatter_add(a: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """a with src added at index along dim (repeated indices accumulate; ScatterAddBackward0)."""
    dim = _check_index_along("scatter_add", a, dim, index)
    data = a._data.copy()
    # np.indices(index.shape, sparse=True), made where the data is (numpy's would be host arrays)
    xp = array_module(a.device)
    lead = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (index.ndim - d - 1)) for d, n in enumerate(index.shape)]
    key = tuple(index._data if d == _wrap_dim(dim, a.ndim) else lead[d] for d in range(a.ndim))
    add_at(data, key, src._data[tuple(slice(0, n) for n in index.shape)])
    out = _new(data, a.device)
    if _grad_state.enabled and (a._tracked or src._tracked):
        record(NODES["scatter_add"], (a, src), [out], {"dim": dim, "index": index.detach()})
    return out


def gather(a: Tensor, dim: int, index: Tensor) -> Tensor:
    dim = _check_index_along("gather", a, dim, index)
    out = _new(np.take_along_axis(a._data, index._data, axis=dim), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["gather"], (a,), [out], {"dim": dim, "index": index.detach(), "shape": a.shape})
    return out

# -- indexing --------------------------------------------------------------------------------


def _normalize_key(key: Any) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    return key


def select(a: Tensor, dim: int, index: int) -> Tensor:
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(a.shape)} at dimension {d}")
    idx = (slice(None),) * d + (index % size,)
    return _views._view_of(a, a._data[idx + (Ellipsis,)], "select", {"shape": a.shape, "key": idx})


_SEQUENCE_KEY_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use "
    "x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
    "x[torch.tensor(seq)], which will result either in an error or a different result"
)


def _numpy_index(k: Any) -> Any:
    if isinstance(k, np.ndarray):
        return Tensor(k, CPU) if k.dtype.kind in "biu" else k  # a float array: getitem's own error
    if isinstance(k, np.bool_):
        return bool(k)
    if isinstance(k, np.integer):
        return int(k)
    return k


def numpy_keys(key: Any) -> Any:
    """numpy integers and index arrays in a key as torch reads them: ``np.int64(k)`` is the int k
    (a select), an integer or bool array a tensor index."""
    if isinstance(key, tuple):
        if not builtins.any(isinstance(k, (np.ndarray, np.generic)) for k in key):
            return key
        return tuple(_numpy_index(k) for k in key)
    return _numpy_index(key) if isinstance(key, (np.ndarray, np.generic)) else key


def legacy_sequence_key(key: Any) -> Any:
    """torch's legacy rule: a short list holding a slice, None, Ellipsis, a tensor or a sequence
    indexes like the tuple of its items (with torch's deprecation warning), not like a tensor."""
    if type(key) is list and len(key) < 32:
        for k in key:
            if k is None or k is Ellipsis or isinstance(k, (slice, Tensor, list, tuple)):
                warnings.warn(_SEQUENCE_KEY_WARNING, UserWarning, stacklevel=3)
                return tuple(key)
    return key


def getitem(a: Tensor, key: Any) -> Tensor:
    """Indexing as torch decomposes it: select per int, slice per non-trivial slice, unsqueeze per
    None, then one IndexBackward0 for all tensor/list indices together."""
    if type(key) is list:
        key = legacy_sequence_key(key)
    key = numpy_keys(key)
    # torch's single-index fast paths: a lone slice is always sliced (even a full one), a lone
    # Ellipsis is an alias.
    if isinstance(key, slice):
        start, stop, step = key.indices(a.shape[0]) if a.ndim else (0, 0, 1)
        if a.ndim == 0:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        if step <= 0:
            raise ValueError("step must be greater than zero")
        idx = (slice(start, stop, step),)
        return _views._view_of(a, a._data[idx], "slice", {"shape": a.shape, "key": idx})
    if key is Ellipsis:
        return alias(a)
    if a.ndim == 0 and isinstance(key, int) and not isinstance(key, bool):
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert "
            "a 0-dim tensor to a number"
        )
    key = _normalize_key(key)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis
                          and not (isinstance(k, Tensor) and k.dtype is _dtype.bool_))
    n_real += builtins.sum(k.ndim for k in key if isinstance(k, Tensor) and k.dtype is _dtype.bool_)
    if n_real > a.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a.ndim}")
    out = a
    dim = 0
    advanced: list[tuple[int, Any]] = []
    for k in key:
        if k is Ellipsis:
            dim += a.ndim - n_real
        elif k is None:
            out = _views.unsqueeze(out, dim)
            dim += 1
        elif isinstance(k, bool):
            raise IndexError("gradviz does not support bool scalars as indices")
        elif isinstance(k, float):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                "(got float)"
            )
        elif isinstance(k, int) or (isinstance(k, Tensor) and k.ndim == 0 and k.dtype is _dtype.int64):
            k = int(k)
            size = out.shape[dim]
            if not -size <= k < size:
                raise IndexError(
                    f"index {k} is out of bounds for dimension {dim} with size {size}"
                )
            idx = (slice(None),) * dim + (k % size,)
            out = _views._view_of(out, out._data[idx + (Ellipsis,)], "select", {"shape": out.shape, "key": idx})
        elif isinstance(k, slice):
            start, stop, step = k.indices(out.shape[dim])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if (start, stop, step) != (0, out.shape[dim], 1):
                idx = (slice(None),) * dim + (slice(start, stop, step),)
                out = _views._view_of(out, out._data[idx], "slice", {"shape": out.shape, "key": idx})
            dim += 1
        else:
            # a list index goes where the data is (a host array would meet device data)
            arr = k._data if isinstance(k, Tensor) else array_module(a.device).asarray(k)
            _check_index_array(arr, out.shape, dim)
            advanced.append((dim, arr))
            dim += arr.ndim if arr.dtype == np.bool_ else 1
    if advanced:
        idx_list: list[Any] = [slice(None)] * out.ndim
        for d, arr in advanced:
            if arr.dtype == np.bool_:
                for j, part in enumerate(np.nonzero(arr)):
                    idx_list[d + j] = part
            else:
                idx_list[d] = arr
        idx = tuple(idx_list)
        data = out._data[idx]
        # torch's index output is contiguous; numpy's puts the indexed dims' layout first.
        res = _new(_c_copy(data), out.device)
        if _grad_state.enabled and out._tracked:
            record(NODES["index"], (out,), [res], {"shape": out.shape, "key": idx})
        out = res
    if out is a:
        # Nothing applied (x[:, :], x[..., :]): torch returns an alias, not x itself.
        out = alias(a)
    return out


def _check_index_array(arr: Any, shape: tuple[int, ...], dim: int) -> None:
    """torch's IndexErrors for a tensor (or list) index at ``dim`` (numpy's would name axes, or
    take a bool mask of the wrong shape)."""
    if arr.dtype == np.bool_:
        for j, n in enumerate(arr.shape):
            if dim + j >= len(shape) or shape[dim + j] != n:
                raise IndexError(
                    f"The shape of the mask {list(arr.shape)} at index {j} does not match the shape of the indexed "
                    f"tensor {list(shape)} at index {dim + j}"
                )
        return
    if arr.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    size = shape[dim]
    bad = (arr >= size) | (arr < -size)
    if bad.any():
        # torch names the first bad value, and dimension 0 whichever dim it indexes
        v = int(arr[bad].ravel()[0])
        raise IndexError(f"index {v} is out of bounds for dimension 0 with size {size}")


def alias(a: Tensor) -> Tensor:
    return _views._view_of(a, a._data.view(), "alias", {})


def fw_primal(a: Tensor) -> Tensor:
    """torch's _fw_primal: a view of ``a`` whose node is torch::autograd::Identity (torch makes
    it by hand, not from a derivatives.yaml row), what forward AD's unpack_dual returns."""
    return _views._view_of(a, a._data.view(), "fw_primal", {})


def getitem_raw(g: Tensor, key: tuple, kind: str) -> Tensor:
    """g[key] with a normalized numpy key: a select or slice view, or an index copy (the double
    backward of the indexing nodes)."""
    if kind != "index":
        return _views._view_of(g, g._data[key + (Ellipsis,)], kind, {"shape": g.shape, "key": key})
    res = _new(_c_copy(g._data[key]), g.device)
    if _grad_state.enabled and g._tracked:
        record(NODES["index"], (g,), [res], {"shape": g.shape, "key": key})
    return res


def index_backward(g: Tensor, shape: tuple[int, ...], key: tuple, kind: str) -> Tensor:
    """Zeros of ``shape`` with g added at ``key`` (repeated indices accumulate).

    Recorded as torch's kernels are: select_backward / slice_backward, or for tensor indices an
    in-place _index_put_impl_ into new zeros (whose first input, the zeros, needs no gradient)."""
    xp = array_module(g.device)
    data = xp.zeros(shape, dtype=g._data.dtype)
    if kind == "index":
        add_at(data, key, g._data)
    else:
        data[key] = g._data
    out = _new(data, g.device)
    if _grad_state.enabled and g._tracked:
        inputs = (None, g) if kind == "index" else (g,)
        record(NODES[kind + "_backward"], inputs, [out], {"key": key})
    return out


# -- index_select, index_add, nonzero, one_hot ----------------------------------------------


def _check_index_vector(op: str, a: Tensor, index: Tensor) -> Any:
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    return index._data.reshape(-1)


def index_select(a: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of a at ``index`` along dim (IndexSelectBackward0)."""
    idx = _check_index_vector("index_select", a, index)
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d] if a.ndim else 1
    if idx.size and ((idx < 0) | (idx >= size)).any():
        bad = int(idx[(idx < 0) | (idx >= size)][0])
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
    data = np.take(a._data, idx, axis=d) if a.ndim else a._data.copy()
    out = _new(_c_copy(data), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["index_select"], (a,), [out], {"dim": d, "index": index.detach(), "self_sym_sizes": a.shape})
    return out


def index_add(a: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor:
    """a with ``alpha * source`` added at ``index`` along dim (IndexAddBackward0)."""
    idx = _check_index_vector("index_add", a, index)
    d = _wrap_dim(dim, a.ndim)
    if a.dtype is not source.dtype:
        raise RuntimeError(f"index_add_(): self ({_dtype.scalar_type_name(a.dtype)}) and source "
                           f"({_dtype.scalar_type_name(source.dtype)}) must have the same scalar type")
    data = a._data.copy()
    src = source._data if alpha == 1 else source._data * alpha
    key = (slice(None),) * d + (idx,)
    add_at(data, key, src)
    out = _new(data, a.device)
    if _grad_state.enabled and (a._tracked or source._tracked):
        record(NODES["index_add"], (a, source), [out], {"dim": d, "index": index.detach(), "alpha": alpha})
    return out


def nonzero(a: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the nonzero entries: one int64 tensor per dim (as_tuple), or their stack."""
    data = a._data if a.ndim else a._data.reshape(1)
    idx = np.nonzero(data)
    if as_tuple:
        return tuple(_new(i.astype(np.int64), a.device) for i in idx)
    return _new(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64), a.device)


def argwhere(a: Tensor) -> Tensor:
    return nonzero(a)


def one_hot(t: Tensor, num_classes: int = -1) -> Tensor:
    """torch.nn.functional.one_hot: int64 rows with a 1 at each class (no gradient)."""
    if t.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    x = t._data
    if num_classes == -1:
        if x.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max()) + 1
    if x.size and x.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if x.size and x.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return _new((x[..., None] == np.arange(num_classes)).astype(np.int64), t.device)

# -- backward formulas ----------------------------------------------------------------------


def _index_select(n, g):
    # torch's index_select_backward: zeros of self's shape, g added at the indices (index_add)
    return index_add(zeros_for(n["self_sym_sizes"], g.dtype, g.device), n["dim"], n["index"], g)


def _index_add_source(n, g):
    out = index_select(g, n["dim"], n["index"])
    return out if n["alpha"] == 1 else _arith.mul(out, n["alpha"])


# -- derivative rows ----------------------------------------------------------------------


# -- forward formulas (forward AD)


def fw_tangents(n, ts) -> list:
    """Every input's tangent, zeros where an input has none (for formulas that need them all)."""
    return [t if t is not None or x is None else zeros_for(x.shape, x.dtype, x.device)
            for t, x in zip(ts, n._fw_inputs)]


def _fw_masked_fill_tensor(n, ts, outs):
    t_self, t_value = fw_tangents(n, ts)
    return _arith.where(n["mask"], t_value, t_self)


def _fw_scatter(n, ts, outs):
    t_self, t_src = fw_tangents(n, ts)
    return scatter(t_self, n["dim"], n["index"], t_src)


def _fw_scatter_add(n, ts, outs):
    t_self, t_src = fw_tangents(n, ts)
    return scatter_add(t_self, n["dim"], n["index"], t_src)


def _fw_index_add(n, ts, outs):
    t_self, t_src = fw_tangents(n, ts)
    return index_add(t_self, n["dim"], n["index"], t_src, alpha=n["alpha"])


ROWS: dict[str, D] = {
    "masked_fill": D("MaskedFillBackward0", (lambda n, g: masked_fill(g, n["mask"], 0.0),), forward=EW),
    "masked_fill_tensor": D("MaskedFillBackward1", (
        lambda n, g: masked_fill(g, n["mask"], 0.0),
        lambda n, g: _reductions.sum(_arith.where(n["mask"], g, _zero_scalar(g))),
    ), reduce_broadcast=True, forward=_fw_masked_fill_tensor),
    "scatter": D("ScatterBackward0", (
        lambda n, g: scatter(g, n["dim"], n["index"], zeros_for(n["index"].shape, g.dtype, g.device)),
        lambda n, g: gather(g, n["dim"], n["index"]),
    ), forward=_fw_scatter),
    "scatter_value": D("ScatterBackward1", (lambda n, g: scatter(g, n["dim"], n["index"], 0.0),),
        forward=lambda n, ts, o: scatter(fw_tangents(n, ts)[0], n["dim"], n["index"], 0.0)),
    "scatter_add": D("ScatterAddBackward0", (lambda n, g: g, lambda n, g: gather(g, n["dim"], n["index"])),
        forward=_fw_scatter_add),
    "gather": D("GatherBackward0", (
        lambda n, g: scatter_add(zeros_for(n["shape"], g.dtype, g.device), n["dim"], n["index"], g),
    ), forward=lambda n, ts, o: gather(ts[0], n["dim"], n["index"])),
    "select": D("SelectBackward0", (lambda n, g: index_backward(g, n["shape"], n["key"], "select"),),
        forward=lambda n, ts, o: getitem_raw(ts[0], n["key"], "select")),
    "slice": D("SliceBackward0", (lambda n, g: index_backward(g, n["shape"], n["key"], "slice"),),
        forward=lambda n, ts, o: getitem_raw(ts[0], n["key"], "slice")),
    "index": D("IndexBackward0", (lambda n, g: index_backward(g, n["shape"], n["key"], "index"),),
        forward=lambda n, ts, o: getitem_raw(ts[0], n["key"], "index")),
    "alias": D("AliasBackward0", (lambda n, g: g,), forward=lambda n, ts, o: alias(ts[0])),
    # no forward rule: the primal is the tensor without its tangent
    "fw_primal": D("Identity", (lambda n, g: g,)),
    # the index nodes' backward kernels, as nodes of a graph built by create_graph=True
    "select_backward": D("SelectBackwardBackward0", (lambda n, g: getitem_raw(g, n["key"], "select"),),
        forward=lambda n, ts, o: index_backward(ts[0], tuple(o[0].shape), n["key"], "select")),
    "slice_backward": D("SliceBackwardBackward0", (lambda n, g: getitem_raw(g, n["key"], "slice"),),
        forward=lambda n, ts, o: index_backward(ts[0], tuple(o[0].shape), n["key"], "slice")),
    "index_backward": D("IndexPutImplBackward0", (None, lambda n, g: getitem_raw(g, n["key"], "index")), forward=TR),
    "index_select": D("IndexSelectBackward0", (_index_select,),
        forward=lambda n, ts, o: index_select(ts[0], n["dim"], n["index"])),
    "index_add": D("IndexAddBackward0", (lambda n, g: g, _index_add_source), forward=_fw_index_add),
}
register(ROWS)
