"""Products and running reductions: prod, cumsum, cumprod, logsumexp; forward, backward
formulas and rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _as_array, _ascontiguous, _dims, _new, _np_aliases, _wrap_dim, register
from gradviz.ops.core import AUTO_REDUCTION as RED
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.reductions import _quiet
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "cumprod", "cumsum", "logsumexp", "prod",
]


def _acc_dtype(a: Tensor, dtype: _dtype.dtype | None) -> Any:
    # integers and bools accumulate in int64, as torch's (numpy keeps uint64 for unsigned ones)
    if dtype is not None:
        return dtype.np
    return np.int64 if a._data.dtype.kind in "biu" else a._data.dtype


def prod(a: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: _dtype.dtype | None = None,
         **kw: Any) -> Tensor:
    """The product of all elements (ProdBackward0) or along dim (ProdBackward1)."""
    if kw:
        dim, keepdim = _np_aliases("prod", kw, dim, keepdim)
    acc = _acc_dtype(a, dtype)
    x = a._data if dtype is None else a._data.astype(acc)
    if dim is None:
        with _quiet():
            out = _new(_as_array(np.prod(x, dtype=acc)), a.device)
        if _grad_state.enabled and a._tracked:
            record(NODES["prod"], (a,), [out], {"self": save(a), "result": save(out, True)})
        return out
    d = _wrap_dim(dim, a.ndim)
    axis = d if a.ndim else None
    with _quiet():
        out = _new(_as_array(np.prod(x, axis=axis, keepdims=keepdim, dtype=acc)), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["prod_dim"], (a,), [out], {"self": save(a), "result": save(out, True), "dim": d,
                                                "keepdim": keepdim})
    return out


def _running(key: str, a: Tensor, dim: int, dtype: _dtype.dtype | None, fn) -> Tensor:
    d = _wrap_dim(dim, a.ndim)
    acc = _acc_dtype(a, dtype)
    x = a._data.astype(acc) if a._data.dtype != acc else a._data
    with _quiet():
        data = fn(x, axis=d) if a.ndim else x.copy()
    out = _new(_as_array(data), a.device)
    if _grad_state.enabled and a._tracked:
        saved: dict[str, Any] = {"dim": d, "self_scalar_type": a.dtype}
        if key == "cumprod":
            saved.update(self=save(a), result=save(out, True))
        record(NODES[key], (a,), [out], saved)
    return out


def cumsum(a: Tensor, dim: int, *, dtype: _dtype.dtype | None = None, **kw: Any) -> Tensor:
    if kw:
        dim, _ = _np_aliases("cumsum", kw, dim, None)
    return _running("cumsum", a, dim, dtype, np.cumsum)


def cumprod(a: Tensor, dim: int, *, dtype: _dtype.dtype | None = None, **kw: Any) -> Tensor:
    if kw:
        dim, _ = _np_aliases("cumprod", kw, dim, None)
    return _running("cumprod", a, dim, dtype, np.cumprod)


def logsumexp(a: Tensor, dim: Any, keepdim: bool = False, **kw: Any) -> Tensor:
    """log(sum(exp(a))) over dim, computed from the maximum so it neither overflows nor underflows
    (LogsumexpBackward0). Integers compute in the default dtype."""
    if kw:
        dim, keepdim = _np_aliases("logsumexp", kw, dim, keepdim)
    dims = _dims(dim, a.ndim)
    x = a._data if a.dtype.is_floating_point else a._data.astype(_dtype._default[0].np)
    axis = dims if a.ndim else None
    if x.size == 0:
        data = np.log(np.exp(x).sum(axis=axis, keepdims=keepdim))
    else:
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        data = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
        if not keepdim and a.ndim:
            data = np.squeeze(data, axis)
        elif not a.ndim:
            data = data.reshape(())
    out = _new(_as_array(data).astype(x.dtype, copy=False), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["logsumexp"], (a,), [out], {"self": save(a), "result": save(out, True), "dim": dims,
                                                  "keepdim": keepdim})
    return out


# -- backward formulas ----------------------------------------------------------------------


def _reverse_cumsum(g: Tensor, dim: int) -> Tensor:
    # sum of g from each position to the end: torch's cumsum_backward
    return _shape.flip(cumsum(_shape.flip(g, (dim,)), dim), (dim,))


def _cumsum(n, g):
    if g.ndim == 0:
        return g
    return _reverse_cumsum(g, n["dim"])


def _prod_others(x: np.ndarray, axis: int | None) -> np.ndarray:
    """For each element, the product of the others along axis (all of x when None): the
    exclusive running products from both sides, exact where x holds zeros."""
    flat = axis is None
    if flat:
        shape, x, axis = x.shape, x.reshape(-1), 0
    n = x.shape[axis]
    ones = np.ones_like(np.take(x, [0], axis=axis)) if n else np.ones_like(x)
    left = np.concatenate([ones, np.cumprod(np.take(x, range(n - 1), axis=axis), axis=axis)], axis=axis)
    rev = np.flip(x, axis)
    right = np.flip(np.concatenate([ones, np.cumprod(np.take(rev, range(n - 1), axis=axis), axis=axis)], axis=axis),
                    axis)
    out = left * right
    return out.reshape(shape) if flat else out


def _prod(n, g):
    # grad * result / self where self has no zero (differentiable); the product of the others
    # (computed on the arrays, as torch's prod_safe_zeros_backward) where it has.
    x, r = n["self"], n["result"]
    dim = n.saved.get("dim")
    if dim is not None and not n["keepdim"] and x.ndim:
        g = _views.unsqueeze(g, dim)
        r = _views.unsqueeze(r, dim)
    if not (x._data == 0).any():
        return _arith.mul(g, _arith.div(r, x))
    others = _prod_others(x._data, dim if x.ndim else None)
    return _arith.mul(g, _new(others, x.device))


def _cumprod(n, g):
    # sum over j >= i of g_j * result_j / x_i where x has no zero; else term by term on arrays
    x, r, dim = n["self"], n["result"], n["dim"]
    if x.ndim == 0:
        return g
    if not (x._data == 0).any():
        return _arith.div(_reverse_cumsum(_arith.mul(g, r), dim), x)
    xd, gd = np.moveaxis(x._data, dim, -1), np.moveaxis(g._data, dim, -1)
    out = np.zeros_like(xd)
    size = xd.shape[-1]
    for i in range(size):
        # d result_j / d x_i = prod_{k <= j, k != i} x_k for j >= i
        before = np.prod(xd[..., :i], axis=-1)
        run = before.copy()
        total = np.zeros_like(before)
        for j in range(i, size):
            if j > i:
                run = run * xd[..., j]
            total = total + gd[..., j] * run
        out[..., i] = total
    return _new(_ascontiguous(np.moveaxis(out, -1, dim)), x.device)


def _logsumexp(n, g):
    x, r = n["self"], n["result"]
    if not n["keepdim"] and n["dim"] is not None and x.ndim:
        g = _views.unsqueeze_dims(g, n["dim"], x.ndim)
        r = _views.unsqueeze_dims(r, n["dim"], x.ndim)
    return _arith.mul(g, _pointwise.exp(_arith.sub(x, r)))


def _cumsum_grad(n, g):
    out = _cumsum(n, g)
    return out if out.dtype is n["self_scalar_type"] else _views.to_copy(out, n["self_scalar_type"])


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "prod": D("ProdBackward0", (_prod,), forward=RED),
    "prod_dim": D("ProdBackward1", (_prod,), forward=RED),
    "cumsum": D("CumsumBackward0", (_cumsum_grad,), forward=lambda n, ts, o: cumsum(ts[0], n["dim"])),
    "cumprod": D("CumprodBackward0", (_cumprod,), forward=TR),
    "logsumexp": D("LogsumexpBackward0", (_logsumexp,), forward=RED),
}
register(ROWS)
