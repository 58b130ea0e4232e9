"""Smaller torch functions and Tensor methods with torch 2.13's nodes: angle, frexp, ldexp,
heaviside, nextafter, gcd/lcm, the bit shifts, narrow_copy, unfold (a view), unravel_index, cond,
as_strided_copy/as_strided_scatter, and the real-dtype identities (real, conj_physical)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import inplace_variants as _inplace_variants
from gradviz.ops import linalg_solvers as _solvers
from gradviz.ops import math_more as _math_more
from gradviz.ops import runtime_more as _runtime_more
from gradviz.ops import views as _views
from gradviz.ops._common import DERIVATIVES, NODES, _c_copy, _new, _wrap_dim, register, result_type
from gradviz.ops.as_strided import as_strided as _as_strided
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_variants import _copied, inplace_of
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "as_strided_copy", "as_strided_scatter",
    "angle", "bitwise_left_shift", "bitwise_right_shift", "cond", "conj_physical", "conj_physical_",
    "frexp", "gcd", "gcd_", "heaviside", "lcm", "lcm_", "ldexp", "ldexp_", "narrow_copy", "nextafter", "real",
    "slogdet", "unfold_copy", "unravel_index",
]


def _grad_needed(*ts: Any) -> bool:
    return _grad_state.enabled and any(isinstance(t, Tensor) and t._tracked for t in ts)


def _float_dtype(*xs: Any) -> _dtype.dtype:
    dt = result_type(*xs)
    return dt if dt.is_floating_point else _dtype._default[0]


# -- pointwise ----------------------------------------------------------------------------------------
def angle(a: Tensor) -> Tensor:
    """The argument of a real number: pi below 0, 0 elsewhere, NaN kept (AngleBackward0, zero gradient)."""
    x = a._data
    data = np.where(x < 0, np.pi, 0.0)
    if x.dtype.kind == "f":
        data = np.where(np.isnan(x), np.nan, data)
    out = _new(data.astype(_float_dtype(a).np), a.device)
    if _grad_needed(a):
        record(NODES["angle"], (a,), [out], {})
    return out


class _Frexp(tuple):
    @property
    def mantissa(self) -> Tensor:
        return self[0]

    @property
    def exponent(self) -> Tensor:
        return self[1]


def frexp(a: Tensor) -> _Frexp:
    """(mantissa, exponent) with a = mantissa * 2**exponent, |mantissa| in [0.5, 1) (FrexpBackward0)."""
    if not a.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(a._data)
    mant = _new(np.asarray(m, dtype=a._data.dtype), a.device)
    expo = _new(np.asarray(e, dtype=np.int32), a.device)
    if _grad_needed(a):
        record(NODES["frexp"], (a,), [mant], {"exponent": expo})
        fn = mant.grad_fn
        fn.input_metadata = (fn.input_metadata[0], (expo.shape, _dtype.int32, a.device))
    return _Frexp((mant, expo))


def ldexp(a: Tensor, other: Tensor) -> Tensor:
    """a * 2**other (LdexpBackward0)."""
    dt = _float_dtype(a, other)
    ob = other._data if isinstance(other, Tensor) else other
    data = a._data.astype(np.float64) * np.exp2(np.asarray(ob, dtype=np.float64))
    out = _new(np.asarray(data).astype(dt.np), a.device)
    if _grad_needed(a, other):
        record(NODES["ldexp"], (a, other if isinstance(other, Tensor) else None), [out],
               {"self": save(a), "other": save(other) if isinstance(other, Tensor) else other})
    return out


def heaviside(a: Tensor, values: Tensor) -> Tensor:
    """0 below 0, values at 0, 1 above (torch records a NotImplemented node: no derivative)."""
    dt = result_type(a, values)
    data = np.where(a._data == 0, values._data, (a._data > 0).astype(a._data.dtype)).astype(dt.np)
    out = _new(np.ascontiguousarray(data), a.device)
    if _grad_needed(a, values):
        record(NODES["not_implemented"], (a, values), [out], {"op": "heaviside"})
    return out


def nextafter(a: Tensor, other: Tensor) -> Tensor:
    """The next representable value after a towards other (NextafterBackward0)."""
    dt = result_type(a, other)
    data = np.nextafter(a._data.astype(dt.np), other._data.astype(dt.np))
    out = _new(np.asarray(data), a.device)
    if _grad_needed(a, other):
        record(NODES["nextafter"], (a, other), [out], {})
    return out


def _integral(name: str, fn: Callable[[Any, Any], Any]) -> Callable[..., Tensor]:
    def op(a: Tensor, other: Any) -> Tensor:
        dt = result_type(a, other)
        if dt.is_floating_point:
            raise RuntimeError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")
        y = other._data if isinstance(other, Tensor) else other
        return _new(np.asarray(fn(a._data.astype(dt.np), np.asarray(y).astype(dt.np))), a.device)

    op.__name__ = op.__qualname__ = name
    return op


def _shift(left: bool) -> Callable[[Any, Any], Any]:
    def f(x: Any, s: Any) -> Any:
        bits = x.dtype.itemsize * 8
        big = (s < 0) | (s >= bits)
        sh = np.where(big, 0, s).astype(x.dtype)
        if left:
            return np.where(big, 0, np.left_shift(x, sh))
        return np.where(big, np.where(x < 0, -1, 0), np.right_shift(x, sh)).astype(x.dtype)
    return f


gcd = _integral("gcd", np.gcd)
lcm = _integral("lcm", np.lcm)
bitwise_left_shift = _integral("lshift", _shift(True))
bitwise_right_shift = _integral("rshift", _shift(False))
bitwise_left_shift.__name__ = "bitwise_left_shift"
bitwise_right_shift.__name__ = "bitwise_right_shift"
gcd_ = inplace_of("gcd_", gcd)
lcm_ = inplace_of("lcm_", lcm)
ldexp_ = inplace_of("ldexp_", ldexp)


def real(a: Tensor) -> Tensor:
    """A real tensor's real part is the tensor itself (torch's)."""
    return a


def conj_physical(a: Tensor) -> Tensor:
    """A real tensor's conjugate is the tensor itself (torch's, for real dtypes)."""
    return a


def conj_physical_(a: Tensor) -> Tensor:
    return a


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if np.dtype(idx.dtype).kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got " + str(idx.dtype))
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = int(np.prod(shape))
    if idx.size and (idx.min() < -total or idx.max() >= total):
        raise RuntimeError("'indices' must be in range [-N, N-1], where N = prod(shape)")
    out = np.unravel_index(np.where(idx < 0, idx + total, idx), shape)
    dev = indices.device if isinstance(indices, Tensor) else None
    return tuple(_new(np.asarray(o, dtype=np.int64), dev) for o in out)


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], operands: Any = ()) -> Any:
    """torch.cond run eagerly: true_fn(*operands) if pred else false_fn(*operands)."""
    p = bool(pred.item()) if isinstance(pred, Tensor) else bool(pred)
    return (true_fn if p else false_fn)(*operands)


def slogdet(a: Tensor) -> Any:
    return _solvers.slogdet(a)


def narrow_copy(a: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of a.narrow(dim, start, length) (NarrowCopyBackward0)."""
    d = _wrap_dim(dim, a.ndim)
    st = start + a.shape[d] if start < 0 else start
    key = (slice(None),) * d + (slice(st, st + length),)
    out = _new(_c_copy(a._data[key]), a.device)
    if _grad_needed(a):
        record(NODES["narrow_copy"], (a,), [out], {"shape": a.shape, "key": key})
    return out


def unfold(a: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` along dimension, ``step`` apart, as a new last dim (a view: UnfoldBackward0)."""
    d = _wrap_dim(dimension, a.ndim) if a.ndim else 0
    n = a.shape[d] if a.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    x = a._data if a.ndim else a._data.reshape(1)
    count = (n - size) // step + 1
    shape = list(x.shape)
    shape[d] = count
    strides = list(x.strides)
    strides[d] = x.strides[d] * step
    data = np.lib.stride_tricks.as_strided(x, (*shape, size), (*strides, x.strides[d]),
                                           writeable=x.flags.writeable)
    return _views._view_of(a, data, "unfold", {"shape": a.shape, "dim": d, "size": size, "step": step})


unfold_copy = _copied("unfold_copy", unfold)


# -- as_strided --------------------------------------------------------------------------------------
def _strided_positions(a: Tensor, size: Sequence[int], stride: Sequence[int], offset: int | None) -> Any:
    """For each element of a.as_strided(size, stride, offset), the C-order position in a it reads
    (a must hold the whole storage it indexes: a base tensor, or a view whose elements cover it)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    root = a._base if a._base is not None else a
    off = a.storage_offset() if offset is None else offset
    pos = np.full(size, off, dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + np.arange(n).reshape(shape) * st
    need = (int(pos.max()) + 1) if pos.size else 0
    if need > root.numel():
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, and "
                           f"itemsize {a.dtype.itemsize} requiring a storage size of {need * a.dtype.itemsize} are out "
                           f"of bounds for storage of size {root.numel() * a.dtype.itemsize}")
    if a._base is None and a._data.flags["C_CONTIGUOUS"]:
        return pos
    # the storage positions of a's own elements, then each wanted position's place among them
    mine = np.asarray(a.stride()) if a.ndim else np.zeros(0, np.int64)
    own = np.full(a.shape, a.storage_offset(), dtype=np.int64)
    for k, n in enumerate(a.shape):
        shape = [1] * a.ndim
        shape[k] = n
        own = own + np.arange(n).reshape(shape) * mine[k]
    flat = own.reshape(-1)
    order = np.argsort(flat, kind="stable")
    at = np.searchsorted(flat[order], pos)
    at = np.minimum(at, len(flat) - 1)
    if not (flat[order][at] == pos).all():
        raise NotImplementedError("gradviz: as_strided reaching storage outside the tensor's own elements")
    return order[at]


def as_strided_scatter(a: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """a with src written where a.as_strided(size, stride, offset) reads (AsStridedScatterBackward0)."""
    pos = _strided_positions(a, size, stride, storage_offset)
    data = _c_copy(a._data).reshape(-1)
    data[pos.reshape(-1)] = np.broadcast_to(src._data, pos.shape).reshape(-1)
    out = _new(data.reshape(a.shape), a.device)
    if _grad_needed(a, src):
        record(NODES["as_strided_scatter"], (a, src), [out], {"pos": pos, "shape": a.shape})
    return out


def _as_strided_scatter_grads(n, g):
    # torch 2.13's as_strided_scatter_backward gives the input the gradient of the scattered
    # positions (and zeros elsewhere), the reverse of what the forward reads from it; gradviz
    # follows its oracle here, numbers included
    pos, shape = n["pos"], n["shape"]
    flat = _views.reshape(g, (-1,))
    key = _new(pos.reshape(-1), g.device)
    gs = _views.reshape(_keep_at(flat, key), shape)
    return [gs, _views.reshape(_indexing.index_select(flat, 0, key), pos.shape)]


def _keep_at(flat: Tensor, key: Tensor) -> Tensor:
    mask = np.ones(flat.shape, bool)
    mask[key._data] = False
    return _indexing.masked_fill(flat, _new(mask, flat.device), 0.0)


# -- backward formulas --------------------------------------------------------------------------------
def _zeros(n, g):
    return _construction.zeros_like(g)


def _unfold_grad(n, g):
    """The windows' gradients added back where each window came from (torch's unfold_backward)."""
    shape, d, size, step = n["shape"], n["dim"], n["size"], n["step"]
    if not shape:
        return _views.reshape(g, ())
    count = g.shape[d]
    pos = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    moved = _views.movedim(g, -1, d + 1)  # (..., count, size, ...)
    flat = _views.reshape(moved, (*shape[:d], count * size, *shape[d + 1:]))
    zeros = _construction.zeros(shape, dtype=g.dtype)
    return _indexing.index_add(zeros, d, _new(pos.astype(np.int64), g.device), flat)


def _narrow_copy_grad(n, g):
    return _indexing.index_backward(g, n["shape"], n["key"], "slice")


def _frexp_grad(n, grads):
    # torch's grad / exponent.exp2(): the int32 exponent's exp2 is in the default float dtype
    # (so 2**-996 underflows to 0 in float32, and the gradient is inf, as torch's)
    g = grads[0]
    if g is None:
        return None
    return _arith.div(g, _math_more.exp2(n["exponent"]))


def _ldexp_self(n, g):
    # torch's grad * pow(2, other): with an integer other, an integer power (2**-1 is 0)
    other = n["other"]
    if not isinstance(other, Tensor):
        return _arith.mul(g, 2.0 ** other)
    if not other.dtype.is_floating_point:
        o = other._data.astype(np.int64)
        return _arith.mul(g, _new(np.where(o < 0, 0, np.left_shift(1, np.maximum(o, 0))), g.device))
    return _arith.mul(g, _arith._pow_base(2.0, other))


def _ldexp_other(n, g):
    other = n["other"]
    return _arith.mul(_arith.mul(_arith.mul(g, n["self"]), _arith._pow_base(2.0, _views.to_copy(other, g.dtype))),
                      math.log(2.0))


ROWS: dict[str, D] = {
    "angle": D("AngleBackward0", (_zeros,)),
    "frexp": D("FrexpBackward0", (_frexp_grad,), multi_output=True),
    "ldexp": D("LdexpBackward0", (_ldexp_self, _ldexp_other), reduce_broadcast=True),
    # torch's: the gradient passes to self unchanged, other gets zeros
    "nextafter": D("NextafterBackward0", (lambda n, g: g, _zeros), reduce_broadcast=True),
    "narrow_copy": D("NarrowCopyBackward0", (_narrow_copy_grad,)),
    "unfold": D("UnfoldBackward0", (_unfold_grad,)),
}
register(ROWS)

# unfold_copy's node is UnfoldBackward0_copy (gradviz/ops/inplace_variants.py names the copies)
register({"unfold_copy": D("UnfoldBackward0_copy", ROWS["unfold"].grads)})
_inplace_variants._COPY_BY_NAME["UnfoldBackward0"] = "unfold_copy"
register({"as_strided_copy": D("AsStridedBackward0_copy", DERIVATIVES["as_strided_call"].grads),
          "as_strided_scatter": D("AsStridedScatterBackward0", (), all_inputs=_as_strided_scatter_grads)})
_inplace_variants._COPY_BY_NAME["AsStridedBackward0"] = "as_strided_copy"
as_strided_copy = _copied("as_strided_copy", _as_strided)

# Tensor methods
METHODS: dict[str, Any] = {
    "angle": angle, "frexp": frexp, "ldexp": ldexp, "ldexp_": ldexp_, "heaviside": heaviside,
    "heaviside_": inplace_of("heaviside_", heaviside), "nextafter": nextafter,
    "nextafter_": inplace_of("nextafter_", nextafter), "gcd": gcd, "gcd_": gcd_, "lcm": lcm, "lcm_": lcm_,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "bitwise_left_shift_": inplace_of("bitwise_left_shift_", bitwise_left_shift),
    "bitwise_right_shift_": inplace_of("bitwise_right_shift_", bitwise_right_shift),
    "conj_physical": conj_physical, "conj_physical_": conj_physical_, "narrow_copy": narrow_copy, "unfold": unfold,
    "as_strided_scatter": as_strided_scatter,
    "nonzero_static": _runtime_more.nonzero_static,
}
