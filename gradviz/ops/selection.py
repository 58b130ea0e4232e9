"""Selection: topk, sort, argsort, unique; forward, backward formulas and rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import module_of
from gradviz.ops import indexing as _indexing
from gradviz.ops._common import NODES, _ascontiguous, _new, _wrap_dim, register
from gradviz.ops.construction import zeros_for
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.reductions import _ValuesIndices
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "argsort", "msort", "sort", "topk", "unique",
]


def _order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable positions that sort x along axis; NaN counts as the largest value, as torch's."""
    if descending:
        if x.dtype.kind == "f" or x.dtype.kind == "V":
            key = -np.where(np.isnan(x), np.inf, x.astype(np.float64))
            key = np.where(np.isnan(x), -np.inf, key)
            # NaN first, then larger values; ties keep their order (stable)
            return np.argsort(key, axis=axis, kind="stable")
        return np.argsort(-x.astype(np.int64) if x.dtype.kind in "biu" else -x, axis=axis, kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def _selected(key: str, a: Tensor, idx: np.ndarray, d: int) -> _ValuesIndices:
    vals = np.take_along_axis(a._data, idx, axis=d) if a.ndim else a._data.copy()
    values, indices = _new(_ascontiguous(vals), a.device), _new(idx.astype(np.int64), a.device)
    if _grad_state.enabled and a._tracked:
        # only the values are differentiable; the node has both outputs (values, indices)
        record(NODES[key], (a,), [values], {"dim": d, "indices": indices, "self_sym_sizes": a.shape})
        fn = values.grad_fn
        if fn is not None:  # None: a dual input that only forward AD follows (no node)
            meta = fn.input_metadata[0]
            fn.input_metadata = (meta, (indices.shape, _dtype.int64, meta[2]))
    result = _ValuesIndices((values, indices))
    result._op = key
    return result


def sort(a: Tensor, dim: int = -1, descending: bool = False, stable: bool | None = False) -> _ValuesIndices:
    """(values, indices) sorted along dim (SortBackward0); ties keep their order."""
    d = _wrap_dim(dim, a.ndim)
    idx = _order(a._data, d, descending) if a.ndim else np.zeros((), np.int64)
    return _selected("sort", a, idx, d)


def argsort(a: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    return sort(a, dim, descending, stable)[1]


def msort(a: Tensor) -> Tensor:
    return sort(a, 0)[0]


def topk(a: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> _ValuesIndices:  # noqa: A002
    """The k largest (or smallest) along dim, with their indices (TopkBackward0)."""
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d] if a.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    xm = module_of(a._data)  # the positions are made where the data is
    if a.ndim == 0:
        return _selected("topk", a, xm.zeros((), np.int64), d)
    idx = np.take(_order(a._data, d, largest), xm.arange(k), axis=d)
    return _selected("topk", a, idx, d)


def unique(a: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None) -> Any:
    """The distinct values, sorted (torch's CPU unique sorts either way); with the inverse
    indices and the counts when asked. Not differentiable, as torch's."""
    if dim is not None:
        d = _wrap_dim(dim, a.ndim)
        vals, inv, counts = np.unique(a._data, axis=d, return_inverse=True, return_counts=True)
    else:
        vals, inv, counts = np.unique(a._data, return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    out = [_new(_ascontiguous(vals), a.device)]
    if return_inverse:
        out.append(_new(inv.astype(np.int64).reshape(inv.shape), a.device))
    if return_counts:
        out.append(_new(counts.astype(np.int64), a.device))
    return out[0] if len(out) == 1 else tuple(out)


# -- backward formulas ----------------------------------------------------------------------


def _values_selected(n, grads):
    # torch's value_selecting_reduction_backward with keepdim: g scattered into zeros at indices
    g = grads[0]
    if g is None:
        return None
    zeros = zeros_for(n["self_sym_sizes"], g.dtype, g.device)
    if g.ndim == 0:
        return g if zeros.ndim == 0 else _indexing.scatter(zeros, n["dim"], n["indices"], g)
    return _indexing.scatter(zeros, n["dim"], n["indices"], g)


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "sort": D("SortBackward0", (_values_selected,), multi_output=True,
        forward=lambda n, ts, o: _indexing.gather(ts[0], n["dim"], n["indices"])),
    "topk": D("TopkBackward0", (_values_selected,), multi_output=True,
        forward=lambda n, ts, o: _indexing.gather(ts[0], n["dim"], n["indices"])),
}
register(ROWS)
