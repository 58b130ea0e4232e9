"""Reductions: sum, mean, max/min, amax/amin, all/any, argmax/argmin, var/std, and sum_to."""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import core as _core
from gradviz.ops import indexing as _indexing
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import views as _views
from gradviz.ops._common import (
    NODES,
    _as_array,
    _dims,
    _new,
    _wrap,
    _wrap_dim,
    register,
)
from gradviz.ops.construction import (
    zeros_for,
)
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

# -- reductions ------------------------------------------------------------------------------


def sum(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,  # noqa: A001
        dtype: _dtype.dtype | None = None) -> Tensor:  # fmt: skip
    x = a._data
    if dim is None:
        data = _as_array(x.sum(dtype=np.int64 if x.dtype == np.bool_ else None))
        out = _new(data if dtype is None else data.astype(dtype.np), a.device)
        if _grad_state.enabled and a.requires_grad:
            record(NODES["sum"], (a,), [out], {"shape": a.shape})
        return out
    dims = _dims(dim, a.ndim)
    data = _as_array(x.sum(axis=dims, keepdims=keepdim, dtype=np.int64 if x.dtype == np.bool_ else None))
    out = _new(data if dtype is None else data.astype(dtype.np), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["sum_dim"], (a,), [out], {"shape": a.shape, "dim": dims, "keepdim": keepdim})
    return out


def mean(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    if not a.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_dtype.scalar_type_name(a.dtype)}"
        )
    if a._data.size == 0:
        # nan, as torch's, without numpy's "Mean of empty slice" RuntimeWarnings
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return _mean(a, dim, keepdim)
    return _mean(a, dim, keepdim)


def _mean(a: Tensor, dim: int | Sequence[int] | None, keepdim: bool) -> Tensor:
    if dim is None:
        out = _new(_as_array(a._data.mean()), a.device)
        if _grad_state.enabled and a.requires_grad:
            record(NODES["mean"], (a,), [out], {"shape": a.shape, "count": a.numel()})
        return out
    dims = _dims(dim, a.ndim)
    out = _new(_as_array(a._data.mean(axis=dims, keepdims=keepdim)), a.device)
    if _grad_state.enabled and a.requires_grad:
        count = int(np.prod([a.shape[d] for d in dims])) if dims else 1
        record(NODES["mean_dim"], (a,), [out], {"shape": a.shape, "dim": dims, "keepdim": keepdim,
                                                "count": count})
    return out


class _ValuesIndices(tuple):
    """(values, indices) of max/min over a dim, as torch's namedtuple."""

    _op = "max"

    def __repr__(self) -> str:
        return f"gradviz.return_types.{self._op}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    __str__ = __repr__

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]


def _reduce_select(key: str, a: Tensor, dim: int | Tensor | None, keepdim: bool, fn, argfn):
    if isinstance(dim, Tensor):  # torch.max(a, b) is maximum
        return _arith.maximum(a, dim) if key == "max" else _arith.minimum(a, dim)
    if dim is None:
        if a.numel() == 0:
            raise RuntimeError(
                f"{key}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        out = _new(_as_array(fn(a._data)), a.device)
        if _grad_state.enabled and a.requires_grad:
            record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True)})
        return out
    d = _wrap_dim(dim, a.ndim)
    idx = _as_array(argfn(a._data, axis=d))
    vals = np.take_along_axis(a._data, np.expand_dims(idx, d), axis=d)
    if not keepdim:
        vals = np.squeeze(vals, d)
    else:
        idx = np.expand_dims(idx, d)
    values, indices = _new(vals, a.device), _new(idx.astype(np.int64), a.device)
    if _grad_state.enabled and a.requires_grad:
        # Only the values output is differentiable; its node has 2 inputs (values, indices).
        record(NODES[key + "_dim"], (a,), [values], {
            "dim": d, "keepdim": keepdim, "indices": indices, "shape": a.shape,
        })
        fn = values.grad_fn
        meta = fn.input_metadata[0]
        fn.input_metadata = (meta, (indices.shape, _dtype.int64, meta[2]))  # plain tuples: see graph.Edge
    result = _ValuesIndices((values, indices))
    result._op = key
    return result


def max(a: Tensor, dim: int | Tensor | None = None, keepdim: bool = False):  # noqa: A001
    return _reduce_select("max", a, dim, keepdim, np.max, np.argmax)


def min(a: Tensor, dim: int | Tensor | None = None, keepdim: bool = False):  # noqa: A001
    return _reduce_select("min", a, dim, keepdim, np.min, np.argmin)


def amax(a: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False) -> Tensor:
    return _amaxmin("amax", a, dim, keepdim, np.max)


def amin(a: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False) -> Tensor:
    return _amaxmin("amin", a, dim, keepdim, np.min)


def _amaxmin(key: str, a: Tensor, dim: Any, keepdim: bool, fn) -> Tensor:
    # An empty dim list (the default) reduces over every dim, as torch.
    dims = tuple(range(a.ndim)) if dim is None or (not isinstance(dim, int) and len(dim) == 0) else _dims(dim, a.ndim)
    out = _new(_as_array(fn(a._data, axis=dims, keepdims=keepdim)), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True), "dim": dims,
                                         "keepdim": keepdim})
    return out


def all(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    dim = None if dim is None else _wrap_dim(dim, a.ndim)
    return _new(_as_array(np.all(a._data, axis=dim, keepdims=keepdim)), a.device)


def any(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    dim = None if dim is None else _wrap_dim(dim, a.ndim)
    return _new(_as_array(np.any(a._data, axis=dim, keepdims=keepdim)), a.device)


def argmax(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    if dim is None:
        return _new(_as_array(np.argmax(a._data)), a.device)
    return max(a, dim, keepdim)[1]


def argmin(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    if dim is None:
        return _new(_as_array(np.argmin(a._data)), a.device)
    return min(a, dim, keepdim)[1]


def _var_std(key: str, a: Tensor, dim, unbiased: bool | None, keepdim: bool, correction) -> Tensor:
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not a.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(dim, a.ndim)
    n = a.numel() if dims is None else int(np.prod([a.shape[d] for d in dims]))
    denom = builtins.max(n - correction, 0)
    if denom <= 0:
        # torch's one warning (the result is nan or inf), not numpy's RuntimeWarnings
        warnings.warn(
            f"{key}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
            "(input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            data = _as_array(a._data.var(axis=dims, ddof=correction, keepdims=keepdim))
    else:
        data = _as_array(a._data.var(axis=dims, ddof=correction, keepdims=keepdim))
    if key == "std":
        data = np.sqrt(data)
    out = _new(data.astype(a._data.dtype, copy=False), a.device)
    if _grad_state.enabled and a.requires_grad:
        saved = {"self": save(a), "dim": dims, "keepdim": keepdim, "denom": denom}
        if key == "std":
            saved["result"] = save(out, True)
        record(NODES[key], (a,), [out], saved)
    return out


def var(a: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    return _var_std("var", a, dim, unbiased, keepdim, correction)


def std(a: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    return _var_std("std", a, dim, unbiased, keepdim, correction)


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum g over the dims that broadcasting added or stretched, back to ``shape``."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    x = g._data
    xs = x.shape
    if xs == shape:
        return g
    if not (_grad_state.enabled and g.requires_grad) and g.dtype.is_floating_point:
        # No graph to record: the same numpy reduction as below, without the ops around it.
        lead = len(xs) - len(shape)
        if shape and lead > 0 and xs[lead:] == shape and type(x) is np.ndarray:
            # Only leading dims summed (a bias): the result has the shape already, and owns its
            # memory (so AccumulateGrad can take it without a copy).
            return _wrap(np.add.reduce(x, 0 if lead == 1 else tuple(range(lead))), g.dtype, g.device)
        if not shape:
            return _new(_as_array(x.sum()), g.device)
        lead = x.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
        if not dims and not lead:
            return g
        if lead and dims == tuple(range(lead)):
            # Only leading dims summed (a bias): the result has the shape already, and owns its
            # memory (so AccumulateGrad can take it without a copy).
            return _new(x.sum(axis=dims), g.device)
        data = x.sum(axis=dims, keepdims=True) if dims else x
        return _new(data.reshape(shape) if lead else data, g.device)
    if not shape:
        return sum(g)
    lead = g.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if dims:
        g = sum(g, dims, keepdim=True)
    if lead:
        g = _views.view(g, shape) if g.numel() == int(np.prod(shape)) else _views.reshape(g, shape)
    return g


_core._sum_to = sum_to  # what OpNode's backward sums broadcast gradients with


# -- backward formulas ----------------------------------------------------------------------


def _max_all(n, g):
    # torch's evenly_distribute_backward (CPU): ties share the gradient evenly.
    mask = _pointwise.eq(n["self"], n["result"])
    zeros = zeros_for(n["self"].shape, g.dtype, g.device)
    return _indexing.masked_fill(zeros, mask, _arith.div(g, sum(mask)))


def _amaxmin_grad(n, g):
    # torch's scale_grad_by_count: ties share the gradient evenly.
    dims, x, r = n["dim"], n["self"], n["result"]
    if not n["keepdim"]:
        g = _views.unsqueeze_dims(g, dims, x.ndim)
        r = _views.unsqueeze_dims(r, dims, x.ndim)
    mask = _pointwise.eq(r, x)
    return _arith.mul(_arith.div(g, sum(mask, dims, True)), mask)


def _select_dim(n, grads):
    # torch's value_selecting_reduction_backward: scatter the gradient into zeros at the indices.
    g = grads[0]
    if g is None:
        return None
    dim, idx = n["dim"], n["indices"]
    if not n["keepdim"]:
        g = _views.unsqueeze(g, dim)
        idx = _views.unsqueeze(idx, dim)
    return _indexing.scatter(zeros_for(n["shape"], g.dtype, g.device), dim, idx, g)


def _reduced_back(n, g):
    """g with the reduced dims put back (size 1), so that it broadcasts against the input."""
    dims = n["dim"]
    if dims is not None and not n["keepdim"]:
        g = _views.unsqueeze_dims(g, dims, n["self"].ndim)
    return g


def _var(n, g):
    # torch's var_backward: (2 / dof) * grad * (self - self.mean(...)); the all-reduce form uses
    # a plain mean, the dim form a keepdim mean and unsqueezes grad back (for ndim > 1).
    x, dims = n["self"], n["dim"]
    if dims is None or x.ndim == 0:
        centered = _arith.sub(x, mean(x))
    else:
        if not n["keepdim"] and x.ndim > 1:
            g = _views.unsqueeze_dims(g, dims, x.ndim)
        centered = _arith.sub(x, mean(x, dims, True))
    return _arith.mul(_arith.mul_scalar(g, 2.0 / n["denom"]), centered)


def _std(n, g):
    # torch's std_backward: var_backward(grad / (result * 2) with 0 where result == 0)
    r = n["result"]
    return _var(n, _indexing.masked_fill(_arith.div(g, _arith.mul_scalar(r, 2.0)), _pointwise.eq(r, 0.0), 0.0))


def _sum_dim(n, g):
    if not n["keepdim"]:
        g = _views.unsqueeze_dims(g, n["dim"], len(n["shape"]))
    return _views.expand(g, n["shape"])


def _mean_dim(n, g):
    return _arith.div_scalar(_sum_dim(n, g), n["count"])


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "sum": D("SumBackward0", (lambda n, g: _views.expand(g, n["shape"]),)),
    "sum_dim": D("SumBackward1", (_sum_dim,)),
    "mean": D("MeanBackward0", (lambda n, g: _arith.div_scalar(_views.expand(g, n["shape"]), n["count"]),)),
    "mean_dim": D("MeanBackward1", (_mean_dim,)),
    "max": D("MaxBackward1", (_max_all,)),
    "max_dim": D("MaxBackward0", (_select_dim,), multi_output=True),
    "min": D("MinBackward1", (_max_all,)),
    "min_dim": D("MinBackward0", (_select_dim,), multi_output=True),
    "amax": D("AmaxBackward0", (_amaxmin_grad,)),
    "amin": D("AminBackward0", (_amaxmin_grad,)),
    "var": D("VarBackward0", (_var,)),
    "std": D("StdBackward0", (_std,)),
}  # fmt: skip
register(ROWS)
