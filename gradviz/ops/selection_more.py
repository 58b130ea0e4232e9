"""Selection and order statistics: median, nanmedian, mode, kthvalue, quantile, nanquantile,
cummax, cummin, logcumsumexp, aminmax; and the counting ops without a gradient: histc,
histogram, bincount, bucketize, searchsorted, unique_consecutive, isin.

Each records torch 2.13's node: a value-selecting op scatters its gradient into the indices it
chose (MedianBackward1, KthvalueBackward0, ...), a full reduction shares it among the ties
(MedianBackward0), quantile is torch's own composition (sort, gather, lerp_, squeeze_).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import inplace_views as _inplace_views
from gradviz.ops import math_binary as _math_binary
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops import selection as _selection
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _ascontiguous, _dims, _new, _wrap_dim, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.reductions import _ValuesIndices
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "aminmax", "bincount", "bucketize", "cummax", "cummin", "histc", "histogram", "isin", "kthvalue",
    "logcumsumexp", "median", "mode", "nanmedian", "nanquantile", "quantile", "searchsorted", "unique_consecutive",
]


# -- values with their indices ------------------------------------------------------------------
def _picked(key: str, op: str, a: Tensor, values: Any, indices: Any, d: int, keepdim: bool) -> _ValuesIndices:
    """(values, indices) chosen along dim d; the node scatters the gradient into the indices."""
    if not keepdim:
        values, indices = np.squeeze(values, d), np.squeeze(indices, d)
    v = _new(_ascontiguous(np.asarray(values, dtype=a._data.dtype)), a.device)
    i = _new(_ascontiguous(np.asarray(indices, dtype=np.int64)), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [v], {"dim": d, "keepdim": keepdim, "indices": i, "shape": a.shape})
        fn = v.grad_fn
        meta = fn.input_metadata[0]
        fn.input_metadata = (meta, (i.shape, _dtype.int64, meta[2]))
    result = _ValuesIndices((v, i))
    result._op = op
    return result


def _last_axis(a: Tensor, d: int) -> Any:
    """a's data with dim d moved last, as (rows, n)."""
    x = np.moveaxis(a._data, d, -1)
    return x.reshape(-1, x.shape[-1]) if x.size or x.shape[-1] else x.reshape(0, 0)


def _back(rows: Any, a: Tensor, d: int) -> Any:
    """(rows,) results back to a's shape with dim d of size 1."""
    shape = list(np.moveaxis(a._data, d, -1).shape)
    shape[-1] = 1
    return np.moveaxis(rows.reshape(shape), -1, d)


def _nth(a: Tensor, dim: int, keepdim: bool, which: Any, key: str, op: str, ignore_nan: bool) -> _ValuesIndices:
    d = _wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return _picked(key, op, a, a._data.reshape(1), np.zeros(1, np.int64), 0, False)
    x = _last_axis(a, d)
    order = np.argsort(x, axis=-1, kind="stable")  # NaN last
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    count = (~nan).sum(-1)
    k = which(count if ignore_nan else np.full(len(x), x.shape[-1]))
    k = np.clip(k, 0, x.shape[-1] - 1)
    idx = order[np.arange(len(x)), k]
    if not ignore_nan:
        # median: a slice with a NaN has the (first) NaN as its median
        first_nan = np.argmax(nan, axis=-1)
        idx = np.where(nan.any(-1), first_nan, idx)
    vals = x[np.arange(len(x)), idx]
    return _picked(key, op, a, _back(vals, a, d), _back(idx, a, d), d, keepdim)


def _full(key: str, a: Tensor, value: Any) -> Tensor:
    out = _new(np.asarray(value, dtype=a._data.dtype), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True)})
    return out


def median(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (of the whole tensor, or (values, indices) along dim); NaN propagates."""
    if dim is None:
        x = np.sort(a._data.reshape(-1))
        if x.size == 0:
            raise IndexError("median() input tensor cannot be empty")
        return _full("median", a, np.nan if np.isnan(x).any() else x[(x.size - 1) // 2])
    return _nth(a, dim, keepdim, lambda n: (n - 1) // 2, "median_dim", "median", False)


def nanmedian(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """median that ignores NaN (NaN only where a slice is all NaN)."""
    if dim is None:
        x = np.sort(a._data.reshape(-1))
        x = x[~np.isnan(x)]
        return _full("nanmedian", a, x[(x.size - 1) // 2] if x.size else np.nan)
    return _nth(a, dim, keepdim, lambda n: (n - 1) // 2, "nanmedian_dim", "nanmedian", True)


def kthvalue(a: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> _ValuesIndices:
    """The k-th smallest element along dim, with its index (KthvalueBackward0)."""
    n = a.shape[_wrap_dim(dim, a.ndim)] if a.ndim else 1
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return _nth(a, dim, keepdim, lambda c: np.full_like(c, k - 1), "kthvalue", "kthvalue", False)


def mode(a: Tensor, dim: int = -1, keepdim: bool = False) -> _ValuesIndices:
    """The most frequent value along dim (the smallest of equally frequent ones) and its last index."""
    d = _wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return _picked("mode", "mode", a, a._data.reshape(1), np.zeros(1, np.int64), 0, False)
    x = _last_axis(a, d)
    vals = np.empty(len(x), x.dtype)
    idx = np.empty(len(x), np.int64)
    for r, row in enumerate(x):
        u, counts = np.unique(row, return_counts=True)
        vals[r] = u[np.argmax(counts)]
        idx[r] = len(row) - 1 - np.argmax((row == vals[r])[::-1])
    return _picked("mode", "mode", a, _back(vals, a, d), _back(idx, a, d), d, keepdim)


def _cum(key: str, a: Tensor, dim: int, larger: bool) -> _ValuesIndices:
    d = _wrap_dim(dim, a.ndim)
    x = a._data if a.ndim else a._data.reshape(1)
    ufunc = np.maximum if larger else np.minimum
    values = ufunc.accumulate(x, axis=d) if x.size else x.copy()
    # an element equal to the running extreme takes over the index (torch's >= / <=); NaN sticks
    hit = (x == values) | (np.isnan(x) if x.dtype.kind == "f" else False)
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    pos = np.where(hit, np.arange(x.shape[d]).reshape(shape), 0)
    indices = np.maximum.accumulate(pos, axis=d) if x.size else pos
    if not a.ndim:
        values, indices = values.reshape(()), indices.reshape(())
    v = _new(_ascontiguous(values), a.device)
    i = _new(_ascontiguous(np.asarray(indices, dtype=np.int64)), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [v], {"dim": d, "indices": i, "self": save(a)})
        fn = v.grad_fn
        meta = fn.input_metadata[0]
        fn.input_metadata = (meta, (i.shape, _dtype.int64, meta[2]))
    result = _ValuesIndices((v, i))
    result._op = key
    return result


def cummax(a: Tensor, dim: int) -> _ValuesIndices:
    return _cum("cummax", a, dim, True)


def cummin(a: Tensor, dim: int) -> _ValuesIndices:
    return _cum("cummin", a, dim, False)


def logcumsumexp(a: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(a))) along dim, computed without overflow (LogcumsumexpBackward0)."""
    d = _wrap_dim(dim, a.ndim)
    x = a._data if a.dtype.is_floating_point else a._data.astype(_dtype._default[0].np)
    with np.errstate(all="ignore"):
        data = np.logaddexp.accumulate(x, axis=d) if a.ndim and x.size else x.copy()
    out = _new(np.asarray(data, dtype=x.dtype), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["logcumsumexp"], (a,), [out], {"self": save(a), "result": save(out, True), "dim": d})
    return out


class _MinMax(tuple):
    """(min, max) as torch's torch.return_types.aminmax."""

    def __repr__(self) -> str:
        return f"torch.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"

    @property
    def min(self) -> Tensor:
        return self[0]

    @property
    def max(self) -> Tensor:
        return self[1]


def aminmax(a: Tensor, *, dim: int | None = None, keepdim: bool = False) -> _MinMax:
    """amin and amax in one op (AminmaxBackward0: both outputs differentiable)."""
    dims = _dims(dim, a.ndim)
    lo = np.asarray(np.min(a._data, axis=dims, keepdims=keepdim))
    hi = np.asarray(np.max(a._data, axis=dims, keepdims=keepdim))
    if dim is None and keepdim:
        lo, hi = lo.reshape((1,) * a.ndim), hi.reshape((1,) * a.ndim)
    mn, mx = _new(_ascontiguous(lo), a.device), _new(_ascontiguous(hi), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["aminmax"], (a,), [mn, mx], {"self": save(a), "min": save(mn, True), "max": save(mx, True),
                                                  "dim": dims, "keepdim": keepdim})
    return _MinMax((mn, mx))


# -- quantile: torch's composition ----------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name: str, a: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    qt = q if isinstance(q, Tensor) else _construction.tensor(q, dtype=a.dtype)
    if qt.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    qd = np.asarray(qt._data, dtype=np.float64)
    if ((qd < 0) | (qd > 1)).any():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if a.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    # torch's quantile_compute: sort along the dim, view as (reduced shape..., n), ranks per q,
    # gather below (and above), lerp_ between them, then squeeze_ (and transpose_) q's dim into place
    if dim is None:
        s = _selection.sort(_views.reshape(a, (-1,)))[0]
        reduced = [1] * a.ndim if keepdim else []
    else:
        d = _wrap_dim(dim, a.ndim)
        if d == a.ndim - 1 or a.ndim == 0:
            s = _selection.sort(a)[0]
        else:
            s = _selection.sort(_views.transpose(_views.unsqueeze(a, -1), d, -1))[0]
        reduced = [1 if i == d else n for i, n in enumerate(a.shape)] if keepdim else \
            [n for i, n in enumerate(a.shape) if i != d]
    n = a.shape[_wrap_dim(dim, a.ndim)] if dim is not None and a.ndim else a.numel()
    s = _views.view(s, (*reduced, n))
    qn = qt.numel()
    with no_grad():
        sd = s._data
        nan = np.isnan(sd)
        qv = qd.reshape(-1)
        if ignore_nan:
            ranks = qv * ((~nan).sum(-1, keepdims=True) - 1)
            ranks = np.where(ranks < 0, 0, ranks)
        else:
            ranks = np.broadcast_to(qv * (n - 1), (*sd.shape[:-1], qn))
            ranks = np.where(nan.any(-1, keepdims=True), n - 1, ranks)
        ranks = np.asarray(ranks, dtype=np.float64)
        if interpolation == "lower":
            ranks = np.floor(ranks)
        elif interpolation == "higher":
            ranks = np.ceil(ranks)
        elif interpolation == "nearest":
            ranks = np.round(ranks)  # half to even, as torch's round
        below = np.floor(ranks).astype(np.int64)
        weights = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
        above = np.ceil(ranks).astype(np.int64)
    values = _indexing.gather(s, -1, _new(_ascontiguous(below), s.device))
    if interpolation in ("linear", "midpoint"):
        upper = _indexing.gather(s, -1, _new(_ascontiguous(above), s.device))
        w = _new(_ascontiguous(np.asarray(weights, dtype=sd.dtype)), s.device)
        values = _math_binary.lerp(values, upper, w)  # (torch lerps in place, a step its recorder never sees)
    if qt.ndim == 0:
        return _inplace_views.squeeze_(values, -1)
    return _inplace_views.squeeze_(_inplace_views.transpose_(_inplace_views.unsqueeze_(values, 0), 0, -1), -1)


def quantile(a: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    return _quantile("quantile", a, q, dim, keepdim, interpolation, False)


def nanquantile(a: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    return _quantile("nanquantile", a, q, dim, keepdim, interpolation, True)


# -- counting: no gradient -----------------------------------------------------------------------
def histc(a: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Counts in ``bins`` equal bins over [min, max] (the data's range when both are 0), in a's dtype."""
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{_dtype.scalar_type_name(a.dtype)}'")
    x = a._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min, but got min {lo} and max {hi}")
    x = x[(x >= lo) & (x <= hi)].astype(np.float64)
    pos = np.floor((x - lo) * bins / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return _new(np.bincount(pos, minlength=bins).astype(a._data.dtype), a.device)


class _Histogram(tuple):
    """(hist, bin_edges) as torch's torch.return_types.histogram."""

    @property
    def hist(self) -> Tensor:
        return self[0]

    @property
    def bin_edges(self) -> Tensor:
        return self[1]


def histogram(a: Tensor, bins: Any = 100, *, range: Sequence[float] | None = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> _Histogram:
    """numpy's histogram, in a's dtype: (hist, bin_edges)."""
    edges_in = bins._data if isinstance(bins, Tensor) else bins
    w = None if weight is None else weight._data
    hist, edges = np.histogram(a._data.reshape(-1), bins=edges_in, range=range,
                               weights=None if w is None else w.reshape(-1), density=density)
    h = _new(np.asarray(hist, dtype=a._data.dtype), a.device)
    e = _new(np.asarray(edges, dtype=a._data.dtype), a.device)
    return _Histogram((h, e))


def bincount(a: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    if a.ndim != 1 or a.dtype.is_floating_point or a.dtype is _dtype.bool_:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if a.numel() and int(a._data.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _new(np.bincount(a._data, minlength=minlength).astype(np.int64), a.device)
    data = np.bincount(a._data, weights=weights._data.astype(np.float64), minlength=minlength)
    dt = weights._data.dtype if weights.dtype.is_floating_point else np.float64
    return _new(data.astype(dt), a.device)


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value would go in the last dim of sorted_sequence (batched over the leading dims)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, axis=-1)
    scalar = not isinstance(values, Tensor)
    v = np.asarray(values) if scalar else values._data
    how = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, v, side=how)
    else:
        if v.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match")
        s2, v2 = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
        out = np.stack([np.searchsorted(s, x, side=how) for s, x in zip(s2, v2, strict=True)]).reshape(v.shape)
    dev = sorted_sequence.device
    return _new(np.asarray(out, dtype=np.int32 if out_int32 else np.int64), dev)


def bucketize(a: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, a, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    e = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    t = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    dev = (elements if isinstance(elements, Tensor) else test_elements).device
    return _new(np.isin(e, t, assume_unique=assume_unique, invert=invert), dev)


def unique_consecutive(a: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Each run of equal consecutive elements (or slices along dim) kept once."""
    if dim is None:
        x = a._data.reshape(-1)
        change = np.ones(x.size, bool)
        change[1:] = x[1:] != x[:-1]
        values = x[change]
        inv_shape = a.shape
    else:
        d = _wrap_dim(dim, a.ndim)
        x = np.moveaxis(a._data, d, 0)
        change = np.ones(x.shape[0], bool)
        if x.shape[0] > 1:
            change[1:] = (x[1:] != x[:-1]).reshape(x.shape[0] - 1, -1).any(-1)
        values = np.moveaxis(x[change], 0, d)
        inv_shape = (x.shape[0],)
    starts = np.flatnonzero(change)
    out = _new(_ascontiguous(values), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["unique_consecutive"], (a,), [out], {})
    if not (return_inverse or return_counts):
        return out
    result: list[Tensor] = [out]
    if return_inverse:
        result.append(_new((np.cumsum(change) - 1).reshape(inv_shape).astype(np.int64), a.device))
    if return_counts:
        result.append(_new(np.diff(np.append(starts, len(change))).astype(np.int64), a.device))
    return tuple(result)


# -- backward formulas ----------------------------------------------------------------------------
def _cum_grad(n, grads):
    g = grads[0]
    if g is None:
        return None
    x = n["self"]
    if x.ndim == 0:
        return g
    zeros = _construction.zeros_like(x, dtype=g.dtype)
    return _indexing.scatter_add(zeros, n["dim"], n["indices"], g)


def _logcumsumexp_grad(n, g):
    """torch's logcumsumexp_backward: the positive and negative parts of g in log space, each
    through a reversed logcumsumexp, so nothing overflows."""
    x, out, d = n["self"], n["result"], n["dim"]
    if x.ndim == 0:
        return g
    lowest = _construction.full((), -float(np.finfo(g._data.dtype).max), dtype=g.dtype)
    log_abs = _pointwise.log(_pointwise.abs(g))
    pos = _arith.where(_pointwise.gt(g, 0), log_abs, lowest)
    neg = _arith.where(_pointwise.lt(g, 0), log_abs, lowest)

    def reverse(t: Tensor) -> Tensor:
        return _shape.flip(logcumsumexp(_shape.flip(t, [d]), d), [d])

    out_pos = _pointwise.exp(_arith.add(reverse(_arith.sub(pos, out)), x))
    out_neg = _pointwise.exp(_arith.add(reverse(_arith.sub(neg, out)), x))
    return _arith.sub(out_pos, out_neg)


def _aminmax_grad(n, grads):
    x, dims, keepdim = n["self"], n["dim"], n["keepdim"]
    total = None
    for g, key in zip(grads, ("min", "max"), strict=True):
        if g is None:
            continue
        r = n[key]
        if dims is None:
            mask = _pointwise.eq(x, r)
            part = _arith.mul(_arith.div(g, _reductions.sum(mask)), mask)
        else:
            if not keepdim:
                g = _views.unsqueeze_dims(g, dims, x.ndim)
                r = _views.unsqueeze_dims(r, dims, x.ndim)
            mask = _pointwise.eq(r, x)
            part = _arith.mul(_arith.div(g, _reductions.sum(mask, dims, True)), mask)
        total = part if total is None else _arith.add(total, part)
    return total


def _unique_consecutive_grad(n, g):
    raise RuntimeError("the derivative for 'unique_consecutive' is not implemented.")


ROWS: dict[str, D] = {
    "median": D("MedianBackward0", (_reductions._max_all,)),
    "nanmedian": D("NanmedianBackward0", (_reductions._max_all,)),
    "median_dim": D("MedianBackward1", (_reductions._select_dim,), multi_output=True),
    "nanmedian_dim": D("NanmedianBackward1", (_reductions._select_dim,), multi_output=True),
    "kthvalue": D("KthvalueBackward0", (_reductions._select_dim,), multi_output=True),
    "mode": D("ModeBackward0", (_reductions._select_dim,), multi_output=True),
    "cummax": D("CummaxBackward0", (_cum_grad,), multi_output=True),
    "cummin": D("CumminBackward0", (_cum_grad,), multi_output=True),
    "logcumsumexp": D("LogcumsumexpBackward0", (_logcumsumexp_grad,)),
    "aminmax": D("AminmaxBackward0", (_aminmax_grad,), multi_output=True),
    "unique_consecutive": D("UniqueConsecutiveBackward0", (_unique_consecutive_grad,)),
}
register(ROWS)

# Tensor methods with these names too
METHOD_NAMES = ["aminmax", "bincount", "cummax", "cummin", "histc", "histogram", "kthvalue", "logcumsumexp", "median",
                "mode", "nanmedian", "nanquantile", "quantile", "unique_consecutive"]
