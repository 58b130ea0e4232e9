"""More pointwise math and reductions with torch 2.13's own backward nodes: tan, exp2,
deg2rad/rad2deg, logaddexp2, fmax/fmin, addcmul/addcdiv, nansum (and nanmean over it, as torch
composes it), trace, diagonal, vdot; count_nonzero and logical_xor (no gradient)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import linalg as _linalg
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _binary_data, _dims, _new, _unary, _wrap_dim, register
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_REDUCTION as RED
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "addcdiv", "addcmul", "copysign", "count_nonzero", "deg2rad", "diagonal", "diff", "exp2", "float_power", "fmax",
    "fmin", "isneginf", "isposinf", "isreal", "logaddexp2", "logical_xor", "masked_select", "nanmean", "nansum",
    "rad2deg", "signbit", "take", "tan", "vdot",
]
# Tensor.trace; torch.trace is a function too, but gradviz.trace is the trace recorder
METHOD_ONLY = ["trace"]

_LN2 = math.log(2.0)


def _floating(fn):
    def f(x: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(x if x.dtype.kind == "f" or x.dtype == _dtype.bfloat16.np else x.astype(np.float32))

    return f


def tan(a: Tensor) -> Tensor:
    return _unary("tan", a, _floating(np.tan), save_result=True, floating=True)


def exp2(a: Tensor) -> Tensor:
    return _unary("exp2", a, _floating(np.exp2), save_result=True, floating=True)


def deg2rad(a: Tensor) -> Tensor:
    return _unary("deg2rad", a, _floating(np.deg2rad), floating=True)


def rad2deg(a: Tensor) -> Tensor:
    return _unary("rad2deg", a, _floating(np.rad2deg), floating=True)


def _binary(key: str, a: Tensor, b: Tensor, fn, floating: bool = True) -> Tensor:
    data, bt = _binary_data(a, b, fn, floating=floating)
    out = _new(data, a.device)
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        record(NODES[key], (a, bt), [out], {"self": save(a), "other": save(bt) if bt is not None else b})
    return out


def logaddexp2(a: Tensor, b: Tensor) -> Tensor:
    return _binary("logaddexp2", a, b, np.logaddexp2)


def fmax(a: Tensor, b: Tensor) -> Tensor:
    return _binary("fmax", a, b, np.fmax, floating=False)


def fmin(a: Tensor, b: Tensor) -> Tensor:
    return _binary("fmin", a, b, np.fmin, floating=False)


def _addc(key: str, a: Tensor, t1: Tensor, t2: Tensor, value: Any, fn) -> Tensor:
    prod, _ = _binary_data(t1, t2, fn, floating=key == "addcdiv")
    scaled = prod * value if value != 1 else prod
    data, _ = _binary_data(a, _new(np.asarray(scaled, dtype=prod.dtype), a.device), np.add)
    out = _new(data, a.device)
    if _grad_state.enabled and (a._tracked or t1._tracked or t2._tracked):
        record(NODES[key], (a, t1, t2), [out], {"tensor1": save(t1), "tensor2": save(t2), "value": value})
    return out


def addcmul(a: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """a + value * tensor1 * tensor2 (AddcmulBackward0)."""
    return _addc("addcmul", a, tensor1, tensor2, value, np.multiply)


def addcdiv(a: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """a + value * tensor1 / tensor2 (AddcdivBackward0)."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                           "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    return _addc("addcdiv", a, tensor1, tensor2, value, np.true_divide)


def nansum(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: _dtype.dtype | None = None) -> Tensor:
    dims = _dims(dim, a.ndim)
    x = a._data if dtype is None else a._data.astype(dtype.np)
    data = np.nansum(x, axis=dims, keepdims=keepdim)
    if not a.dtype.is_floating_point and dtype is None:
        data = data.astype(np.int64)
    out = _new(np.asarray(data, dtype=data.dtype), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["nansum"], (a,), [out], {"self": save(a), "dims": dims, "keepdim": keepdim})
    return out


def nanmean(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: _dtype.dtype | None = None) -> Tensor:
    """torch's composition: nansum divided by the count of non-NaN elements (DivBackward0)."""
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_dtype.scalar_type_name(a.dtype)}")
    count = _reductions.sum(_pointwise.logical_not(_pointwise.isnan(a)), dim, keepdim)
    return _arith.div(nansum(a, dim, keepdim, dtype=dtype), count)


def count_nonzero(a: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    return _new(np.asarray(np.count_nonzero(a._data, axis=_dims(dim, a.ndim)), dtype=np.int64), a.device)


def logical_xor(a: Tensor, b: Tensor) -> Tensor:
    return _new(np.logical_xor(a._data, b._data if isinstance(b, Tensor) else b), a.device)


def trace(a: Tensor) -> Tensor:
    if a.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {a.ndim}")
    dt = a.dtype if a.dtype.is_floating_point else _dtype.int64  # integers sum in int64, as torch's
    out = _new(np.asarray(np.trace(a._data), dtype=dt.np), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["trace"], (a,), [out], {"shape": tuple(a.shape)})
    return out


def diagonal(a: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal as a view (DiagonalBackward0); offsets other than 0 are not supported here."""
    if offset != 0:
        raise NotImplementedError("gradviz has no torch.diagonal with offset != 0")
    d1, d2 = _wrap_dim(dim1, a.ndim), _wrap_dim(dim2, a.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _linalg._diagonal(a, d1, d2)


def vdot(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    out = _new(np.asarray(np.vdot(a._data, b._data), dtype=a.dtype.np), a.device)
    if _grad_state.enabled and (a._tracked or b._tracked):
        record(NODES["vdot"], (a, b), [out], {"self": save(a), "other": save(b)})
    return out


def signbit(a: Tensor) -> Tensor:
    return _new(np.signbit(a._data), a.device)


def isneginf(a: Tensor) -> Tensor:
    return _new(np.isneginf(a._data) if a.dtype.is_floating_point else np.zeros(a.shape, bool), a.device)


def isposinf(a: Tensor) -> Tensor:
    return _new(np.isposinf(a._data) if a.dtype.is_floating_point else np.zeros(a.shape, bool), a.device)


def isreal(a: Tensor) -> Tensor:
    return _new(np.ones(a.shape, bool), a.device)  # gradviz has no complex tensors


def float_power(a: Any, exponent: Any) -> Tensor:
    """torch's composition: both operands in float64, then pow (ToCopyBackward0 where a cast)."""
    def f64(x: Any) -> Any:
        return _views.to_copy(x, _dtype.float64) if isinstance(x, Tensor) else float(x)

    return _arith.pow(f64(a), f64(exponent))


def diff(a: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None) -> Tensor:
    """torch's composition: prepend/append concatenated, then n times narrow(1..) - narrow(..-1)."""
    d = _wrap_dim(dim, a.ndim)
    if prepend is not None or append is not None:
        a = _shape.cat([t for t in (prepend, a, append) if t is not None], d)
    for _ in range(n):
        length = a.shape[d]
        if length == 0:
            break
        a = _arith.sub(_shape.narrow(a, d, 1, length - 1), _shape.narrow(a, d, 0, length - 1))
    return a


def masked_select(a: Tensor, mask: Tensor) -> Tensor:
    x, m = np.broadcast_arrays(a._data, mask._data)
    out = _new(np.ascontiguousarray(x[m]), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["masked_select"], (a,), [out], {"mask": mask.detach(), "shape": tuple(a.shape)})
    return out


def take(a: Tensor, index: Tensor) -> Tensor:
    flat = a._data.reshape(-1)
    idx = index._data
    if idx.size and (idx.max() >= flat.size or idx.min() < -flat.size):
        raise IndexError(f"out of range: tried to access index {int(idx.max())} on a tensor of {flat.size} elements.")
    out = _new(np.ascontiguousarray(flat[idx]), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["take"], (a,), [out], {"index": index.detach(), "shape": tuple(a.shape)})
    return out


def copysign(a: Tensor, other: Any) -> Tensor:
    if isinstance(other, Tensor):
        data, _ = _binary_data(a, other, np.copysign, floating=True)
        out = _new(data, a.device)
        if _grad_state.enabled and (a._tracked or other._tracked):
            record(NODES["copysign"], (a, other), [out],
                   {"self": save(a), "result": save(out, True), "other_shape": tuple(other.shape)})
        return out
    data, _ = _binary_data(a, other, np.copysign, floating=True)
    out = _new(data, a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["copysign_scalar"], (a,), [out], {"self": save(a), "result": save(out, True)})
    return out


# -- backward formulas -------------------------------------------------------------------------


def _masked_select_grad(n: Any, g: Tensor) -> Tensor:
    _no_graph("MaskedSelectBackward0")
    shape, mask = n["shape"], n["mask"]._data
    full = np.zeros(np.broadcast_shapes(shape, mask.shape), dtype=g._data.dtype)
    full[np.broadcast_to(mask, full.shape)] = g._data
    return _reductions.sum_to(_new(full, g.device), shape)


def _take_grad(n: Any, g: Tensor) -> Tensor:
    _no_graph("TakeBackward0")
    flat = np.zeros(int(np.prod(n["shape"])), dtype=g._data.dtype)
    np.add.at(flat, n["index"]._data.reshape(-1), g._data.reshape(-1))
    return _new(flat.reshape(n["shape"]), g.device)


def _copysign_grad(n: Any, g: Tensor) -> Tensor:
    # torch's copysign_tensor_self_backward: grad * result / self, 0 where self is 0
    s, r = n["self"], n["result"]
    ratio = _indexing.masked_fill(_arith.div(r, s), _pointwise.eq(s, 0), 0)
    return _arith.mul(g, ratio)


def _other(n: Any) -> Any:
    o = n["other"]
    return o


def _trace_grad(n: Any, g: Tensor) -> Tensor:
    rows, cols = n["shape"]
    eye = _construction.eye(rows, cols, dtype=g.dtype)
    return _arith.mul(eye, g)


def _no_graph(name: str) -> None:
    # grad mode is on in a backward only under create_graph: these formulas run on the arrays
    if _grad_state.enabled:
        raise NotImplementedError(f"gradviz: a create_graph backward through {name} (its gradient has no history)")


def _nansum_grad(n: Any, g: Tensor) -> Tensor:
    s = n["self"]
    dims, keepdim = n["dims"], n["keepdim"]
    if dims is not None and not keepdim:
        for d in sorted(dims):
            g = _views.unsqueeze(g, d)
    g = _views.expand(g, tuple(s.shape))
    return _indexing.masked_fill(g, _pointwise.isnan(s), 0)


def _fmax_self(n: Any, g: Tensor, keep_self_where) -> Tensor:
    s, o = n["self"], _other(n)
    return _indexing.masked_fill(g, _pointwise.logical_not(keep_self_where(s, o)), 0)


def _keep_self_max(s: Tensor, o: Any) -> Tensor:
    return _pointwise.logical_or(_pointwise.ge(s, o), _pointwise.isnan(o))


def _keep_self_min(s: Tensor, o: Any) -> Tensor:
    return _pointwise.logical_or(_pointwise.le(s, o), _pointwise.isnan(o))


def _logaddexp2_grad(n: Any, g: Tensor, first: bool) -> Tensor:
    s, o = n["self"], _other(n)
    diff = _arith.sub(o, s) if first else _arith.sub(s, o)
    return _arith.div(g, _arith.add_scalar(_arith.pow(2, diff), 1))


ROWS: dict[str, D] = {
    "tan": D("TanBackward0", (lambda n, g: _arith.mul(g, _arith.add_scalar(_arith.pow(n["result"], 2), 1)),),
        forward=EW),
    "exp2": D("Exp2Backward0", (lambda n, g: _arith.mul_scalar(_arith.mul(g, n["result"]), _LN2),), forward=EW),
    "deg2rad": D("Deg2RadBackward0", (lambda n, g: _arith.mul_scalar(g, math.pi / 180.0),), forward=EW),
    "rad2deg": D("Rad2DegBackward0", (lambda n, g: _arith.mul_scalar(g, 180.0 / math.pi),), forward=EW),
    "logaddexp2": D("Logaddexp2Backward0", (lambda n, g: _logaddexp2_grad(n, g, True),
                                            lambda n, g: _logaddexp2_grad(n, g, False)), reduce_broadcast=True,
                                                forward=EW),
    "fmax": D("FmaxBackward0", (lambda n, g: _fmax_self(n, g, _keep_self_max),
                                lambda n, g: _indexing.masked_fill(g, _keep_self_max(n["self"], _other(n)), 0)),
              reduce_broadcast=True, forward=EW),
    "fmin": D("FminBackward0", (lambda n, g: _fmax_self(n, g, _keep_self_min),
                                lambda n, g: _indexing.masked_fill(g, _keep_self_min(n["self"], _other(n)), 0)),
              reduce_broadcast=True, forward=EW),
    "addcmul": D("AddcmulBackward0", (
        lambda n, g: g,
        lambda n, g: _arith.mul_scalar(_arith.mul(g, n["tensor2"]), n["value"]),
        lambda n, g: _arith.mul_scalar(_arith.mul(g, n["tensor1"]), n["value"]),
    ), reduce_broadcast=True, forward=EW),
    "addcdiv": D("AddcdivBackward0", (
        lambda n, g: g,
        lambda n, g: _arith.div(_arith.mul_scalar(g, n["value"]), n["tensor2"]),
        lambda n, g: _arith.div(_arith.mul(_arith.mul_scalar(_arith.neg(g), n["value"]), n["tensor1"]),
                                _arith.mul(n["tensor2"], n["tensor2"])),
    ), reduce_broadcast=True, forward=EW),
    "nansum": D("NansumBackward0", (_nansum_grad,), forward=RED),
    "trace": D("TraceBackward0", (_trace_grad,), forward=TR),
    "masked_select": D("MaskedSelectBackward0", (_masked_select_grad,), forward=TR),
    "take": D("TakeBackward0", (_take_grad,), forward=TR),
    "copysign": D("CopysignBackward0", (  # the sign's source gets zeros, as torch's row gives it
        _copysign_grad, lambda n, g: _construction.zeros(n["other_shape"], dtype=g.dtype)), reduce_broadcast=True,
            forward=EW),
    "copysign_scalar": D("CopysignBackward1", (_copysign_grad,), forward=EW),
    "vdot": D("VdotBackward0", (lambda n, g: _arith.mul(g, n["other"]), lambda n, g: _arith.mul(g, n["self"])),
        forward=TR),
}
register(ROWS)
