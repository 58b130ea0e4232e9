"""Reductions: sum, mean, max/min, amax/amin, all/any, argmax/argmin, var/std, var_mean/std_mean,
norm, and sum_to. Each takes numpy's axis=/keepdims= spellings too, as torch does."""

from __future__ import annotations

import builtins
import math
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
    _np_aliases,
    _wrap,
    _wrap_dim,
    register,
)
from gradviz.ops.construction import (
    zeros_for,
)
from gradviz.ops.core import AUTO_REDUCTION as RED
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "all", "amax", "amin", "any", "argmax", "argmin", "max", "mean", "min", "norm", "std", "std_mean", "sum",
    "var", "var_mean",
]


# numpy.errstate for the reductions numpy implements in Python (mean, var): a ufunc's warning names
# its calling frame, which there is numpy's, so gradviz's filter (see _common) does not see it.
def _quiet() -> Any:
    return np.errstate(all="ignore")  # a new one each time: an errstate cannot be entered twice


# -- reductions ------------------------------------------------------------------------------


def sum(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,  # noqa: A001
        dtype: _dtype.dtype | None = None, **kw: Any) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases("sum", kw, dim, keepdim)
    x = a._data
    # integers and bools sum in int64, as torch's (numpy would keep uint64 for unsigned)
    acc = np.int64 if x.dtype.kind in "biu" else None
    if dim is None:
        data = _as_array(x.sum(dtype=acc))
        out = _new(data if dtype is None else data.astype(dtype.np), a.device)
        if _grad_state.enabled and a._tracked:
            record(NODES["sum"], (a,), [out], {"shape": a.shape})
        return out
    dims = _dims(dim, a.ndim)
    data = _as_array(x.sum(axis=dims, keepdims=keepdim, dtype=acc))
    out = _new(data if dtype is None else data.astype(dtype.np), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["sum_dim"], (a,), [out], {"shape": a.shape, "dim": dims, "keepdim": keepdim})
    return out


def mean(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: _dtype.dtype | None = None, **kw: Any) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases("mean", kw, dim, keepdim)
    # a dtype: the reduction runs in it, on one node (torch's mean.dtype has no ToCopyBackward0;
    # the engine casts the gradient back to the input's dtype)
    out_dtype = a.dtype if dtype is None else dtype
    if not out_dtype.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. {'Input' if dtype is None else 'Optional'} dtype must be "
            f"either a floating point or complex dtype. Got: {_dtype.scalar_type_name(out_dtype)}"
        )
    x = a._data if out_dtype is a.dtype else a._data.astype(out_dtype.np)
    if a._data.size == 0:
        # nan, as torch's, without numpy's "Mean of empty slice" RuntimeWarnings
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return _mean(a, dim, keepdim, x)
    return _mean(a, dim, keepdim, x)


def _mean(a: Tensor, dim: int | Sequence[int] | None, keepdim: bool, x: Any = None) -> Tensor:
    """a's mean, of the array x (a's data, or a's data cast to mean's dtype)."""
    if x is None:
        x = a._data
    if dim is None:
        with _quiet():  # numpy's mean is Python-level: its warnings name numpy, not gradviz (see _common)
            out = _new(_as_array(x.mean()), a.device)
        if _grad_state.enabled and a._tracked:
            record(NODES["mean"], (a,), [out], {"shape": a.shape, "count": a.numel()})
        return out
    dims = _dims(dim, a.ndim)
    with _quiet():
        out = _new(_as_array(x.mean(axis=dims, keepdims=keepdim)), a.device)
    if _grad_state.enabled and a._tracked:
        count = int(np.prod([a.shape[d] for d in dims])) if dims else 1
        record(NODES["mean_dim"], (a,), [out], {"shape": a.shape, "dim": dims, "keepdim": keepdim,
                                                "count": count})
    return out


class _ValuesIndices(tuple):
    """(values, indices) of max/min over a dim, as torch's namedtuple."""

    _op = "max"

    def __repr__(self) -> str:
        return f"torch.return_types.{self._op}(\nvalues={self[0]!r},\nindices={self[1]!r})"

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
        if _grad_state.enabled and a._tracked:
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
    if _grad_state.enabled and a._tracked:
        # Only the values output is differentiable; its node has 2 inputs (values, indices).
        record(NODES[key + "_dim"], (a,), [values], {
            "dim": d, "keepdim": keepdim, "indices": indices, "shape": a.shape,
        })
        fn = values.grad_fn
        if fn is not None:  # None: a dual input that only forward AD follows (no node)
            meta = fn.input_metadata[0]
            fn.input_metadata = (meta, (indices.shape, _dtype.int64, meta[2]))  # plain tuples: see graph.Edge
    result = _ValuesIndices((values, indices))
    result._op = key
    return result


def max(a: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, **kw: Any):  # noqa: A001
    if kw:
        dim, keepdim = _np_aliases("max", kw, dim, keepdim)
    return _reduce_select("max", a, dim, keepdim, np.max, np.argmax)


def min(a: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, **kw: Any):  # noqa: A001
    if kw:
        dim, keepdim = _np_aliases("min", kw, dim, keepdim)
    return _reduce_select("min", a, dim, keepdim, np.min, np.argmin)


def amax(a: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False, **kw: Any) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases("amax", kw, dim, keepdim)
    return _amaxmin("amax", a, dim, keepdim, np.max)


def amin(a: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False, **kw: Any) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases("amin", kw, dim, keepdim)
    return _amaxmin("amin", a, dim, keepdim, np.min)


def _amaxmin(key: str, a: Tensor, dim: Any, keepdim: bool, fn) -> Tensor:
    # An empty dim list (the default) reduces over every dim, as torch.
    dims = tuple(range(a.ndim)) if dim is None or (not isinstance(dim, int) and len(dim) == 0) else _dims(dim, a.ndim)
    out = _new(_as_array(fn(a._data, axis=dims, keepdims=keepdim)), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True), "dim": dims,
                                         "keepdim": keepdim})
    return out


def _bool_reduce_dims(dim: Any, ndim: int) -> Any:
    """all/any's dim: None, one dim, or (torch 2.2 on) a tuple or list of dims."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(_wrap_dim(d, ndim) for d in dim)
    return _wrap_dim(dim, ndim)


def all(a: Tensor, dim: int | None = None, keepdim: bool = False, **kw: Any) -> Tensor:  # noqa: A001
    if kw:
        dim, keepdim = _np_aliases("all", kw, dim, keepdim)
    dim = _bool_reduce_dims(dim, a.ndim)
    return _new(_as_array(np.all(a._data, axis=dim, keepdims=keepdim)), a.device)


def any(a: Tensor, dim: int | None = None, keepdim: bool = False, **kw: Any) -> Tensor:  # noqa: A001
    if kw:
        dim, keepdim = _np_aliases("any", kw, dim, keepdim)
    dim = _bool_reduce_dims(dim, a.ndim)
    return _new(_as_array(np.any(a._data, axis=dim, keepdims=keepdim)), a.device)


def _arg(key: str, a: Tensor, dim: Any, keepdim: bool, kw: dict) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases(key, kw, dim, keepdim)
    if dim is None:
        if a.numel() == 0:
            raise RuntimeError(f"{key}(): Expected reduction dim to be specified for input.numel() == 0.")
        idx = _as_array((np.argmax if key == "argmax" else np.argmin)(a._data))
        # keepdim without a dim: the flat index in a tensor of a's rank, all ones (torch's)
        return _new(idx.reshape((1,) * a.ndim) if keepdim else idx, a.device)
    return (max if key == "argmax" else min)(a, dim, keepdim)[1]


def argmax(a: Tensor, dim: int | None = None, keepdim: bool = False, **kw: Any) -> Tensor:
    return _arg("argmax", a, dim, keepdim, kw)


def argmin(a: Tensor, dim: int | None = None, keepdim: bool = False, **kw: Any) -> Tensor:
    return _arg("argmin", a, dim, keepdim, kw)


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
        with _quiet():
            data = _as_array(a._data.var(axis=dims, ddof=correction, keepdims=keepdim))
    if key == "std":
        data = np.sqrt(data)
    out = _new(data.astype(a._data.dtype, copy=False), a.device)
    if _grad_state.enabled and a._tracked:
        saved = {"self": save(a), "dim": dims, "keepdim": keepdim, "denom": denom}
        if key == "std":
            saved["result"] = save(out, True)
        record(NODES[key], (a,), [out], saved)
    return out


def var(a: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None,
        **kw: Any) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases("var", kw, dim, keepdim)
    return _var_std("var", a, dim, unbiased, keepdim, correction)


def std(a: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None,
        **kw: Any) -> Tensor:
    if kw:
        dim, keepdim = _np_aliases("std", kw, dim, keepdim)
    return _var_std("std", a, dim, unbiased, keepdim, correction)


def _unbiased_arg(dim: Any, unbiased: Any) -> tuple[Any, Any]:
    # var(x, True) and std_mean(x, False): a bool where dim goes is torch's unbiased
    return (None, dim) if isinstance(dim, bool) else (dim, unbiased)


def _var_mean(key: str, a: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any) -> tuple[Tensor, Tensor]:
    """(var or std, mean) from one node, VarMeanBackward0 / StdMeanBackward0, as torch's."""
    from gradviz.autograd.grad_mode import no_grad

    dim, unbiased = _unbiased_arg(dim, unbiased)
    with no_grad():
        v = _var_std(key[:3], a, dim, unbiased, keepdim, correction)
        m = mean(a, dim, keepdim)
    if _grad_state.enabled and a._tracked:
        dims = _dims(dim, a.ndim)
        n = a.numel() if dims is None else int(np.prod([a.shape[d] for d in dims]))
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        saved = {"self": save(a), "dim": dims, "keepdim": keepdim, "denom": builtins.max(n - correction, 0),
                 "count": n}
        if key == "std_mean":
            saved["result"] = save(v, True)
        record(NODES[key], (a,), [v, m], saved)
    return v, m


def var_mean(a: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
             **kw: Any) -> tuple[Tensor, Tensor]:
    if kw:
        dim, keepdim = _np_aliases("var_mean", kw, dim, keepdim)
    return _var_mean("var_mean", a, dim, unbiased, keepdim, correction)


def std_mean(a: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
             **kw: Any) -> tuple[Tensor, Tensor]:
    if kw:
        dim, keepdim = _np_aliases("std_mean", kw, dim, keepdim)
    return _var_mean("std_mean", a, dim, unbiased, keepdim, correction)


def norm(a: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: _dtype.dtype | None = None,
         **kw: Any) -> Tensor:
    """The vector p-norm over dim (all of a when None): torch's linalg_vector_norm, whose node
    is LinalgVectorNormBackward0. 'fro' is the 2-norm."""
    if kw:
        dim, keepdim = _np_aliases("norm", kw, dim, keepdim)
    if p == "nuc":  # torch.norm's nuclear norm is linalg's matrix norm
        from gradviz.ops import linalg_norms as _linalg

        return _linalg.matrix_norm(a, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if p == "fro" or p is None:
        p = 2.0
    if isinstance(p, str):
        raise RuntimeError(f"gradviz has no norm with p={p!r} (only vector norms)")
    if not a.dtype.is_floating_point:
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{_dtype.scalar_type_name(a.dtype)}"
        )
    # torch's vector_norm computes in dtype inside one node (no ToCopyBackward0 before it)
    out_np = a._data.dtype if dtype is None else dtype.np
    dims = _dims(dim, a.ndim)
    x = np.abs(a._data.astype(np.float64) if a.dtype is not _dtype.float64 else a._data)
    axis = dims
    if p == math.inf:
        data = x.max(axis=axis, keepdims=keepdim, initial=0.0)
    elif p == -math.inf:
        data = x.min(axis=axis, keepdims=keepdim)
    elif p == 0:
        data = (x != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
    elif p == 1:
        data = x.sum(axis=axis, keepdims=keepdim)
    elif p == 2:
        data = np.sqrt((x * x).sum(axis=axis, keepdims=keepdim))
    else:
        data = np.power(np.power(x, p).sum(axis=axis, keepdims=keepdim), 1.0 / p)
    out = _new(_as_array(data).astype(out_np), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["norm"], (a,), [out], {"self": save(a), "result": save(out, True), "ord": float(p),
                                             "dim": dims, "keepdim": keepdim})
    return out


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum g over the dims that broadcasting added or stretched, back to ``shape``."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    x = g._data
    xs = x.shape
    if xs == shape:
        return g
    if not (_grad_state.enabled and g._tracked) and g.dtype.is_floating_point:
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


def _var_mean_grad(n, grads):
    # torch's var_mean/std_mean backward: the var (or std) part plus the mean part
    gv, gm = grads
    out = None
    if gv is not None:
        out = _std(n, gv) if n.derivative.name.startswith("Std") else _var(n, gv)
    if gm is not None:
        x = n["self"]
        g = _reduced_back(n, gm)
        part = _arith.div_scalar(_views.expand(g, x.shape), n["count"])
        out = part if out is None else _arith.add(out, part)
    return out


def _norm(n, g):
    # torch's norm_backward, by the order p
    x, r, p = n["self"], n["result"], n["ord"]
    if not n["keepdim"] and n["dim"] is not None and x.ndim:
        g = _views.unsqueeze_dims(g, n["dim"], x.ndim)
        r = _views.unsqueeze_dims(r, n["dim"], x.ndim)
    mul, div = _arith.mul, _arith.div
    if p == 0:
        return zeros_for(x.shape, x.dtype, x.device)
    if p == 1:
        return mul(_pointwise.sgn(x), g)
    if p == 2:
        return mul(x, _indexing.masked_fill(div(g, r), _pointwise.eq(r, 0.0), 0.0))
    if math.isinf(p):
        mask = _pointwise.eq(_pointwise.abs(x), r)
        count = sum(mask, n["dim"], True) if n["dim"] is not None else sum(mask)
        return mul(mul(_pointwise.sgn(x), div(g, count)), mask)
    scale = mul(x, _arith.pow(_pointwise.abs(x), p - 2)) if p >= 1 else mul(_pointwise.sgn(x), _arith.pow(
        _pointwise.abs(x), p - 1))
    return mul(scale, _indexing.masked_fill(div(g, _arith.pow(r, p - 1)), _pointwise.eq(r, 0.0), 0.0))


def _sum_dim(n, g):
    if not n["keepdim"]:
        g = _views.unsqueeze_dims(g, n["dim"], len(n["shape"]))
    return _views.expand(g, n["shape"])


def _mean_dim(n, g):
    return _arith.div_scalar(_sum_dim(n, g), n["count"])


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "sum": D("SumBackward0", (lambda n, g: _views.expand(g, n["shape"]),), forward=RED),
    "sum_dim": D("SumBackward1", (_sum_dim,), forward=RED),
    "mean": D("MeanBackward0", (lambda n, g: _arith.div_scalar(_views.expand(g, n["shape"]), n["count"]),),
        forward=RED),
    "mean_dim": D("MeanBackward1", (_mean_dim,), forward=RED),
    "max": D("MaxBackward1", (_max_all,), forward=RED),
    "max_dim": D("MaxBackward0", (_select_dim,), multi_output=True, forward=RED),
    "min": D("MinBackward1", (_max_all,), forward=RED),
    "min_dim": D("MinBackward0", (_select_dim,), multi_output=True, forward=RED),
    "amax": D("AmaxBackward0", (_amaxmin_grad,), forward=RED),
    "amin": D("AminBackward0", (_amaxmin_grad,), forward=RED),
    "var": D("VarBackward0", (_var,), forward=RED),
    "std": D("StdBackward0", (_std,), forward=RED),
    "var_mean": D("VarMeanBackward0", (_var_mean_grad,), multi_output=True, forward=RED),
    "std_mean": D("StdMeanBackward0", (_var_mean_grad,), multi_output=True, forward=RED),
    "norm": D("LinalgVectorNormBackward0", (_norm,), forward=RED),
}
register(ROWS)
