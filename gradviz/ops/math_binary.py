"""Binary math: atan2, hypot, xlogy, logaddexp, lerp and outer, with the in-place variants torch
has (atan2_, hypot_, xlogy_, lerp_) and torch 2.13's backward nodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import indexing as _indexing
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, Scalar, _check_devices, _new, register, result_type
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace import _check_cast
from gradviz.ops.inplace_write import InplaceWrite, check_inplace
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "atan2", "hypot", "lerp", "logaddexp", "outer", "xlogy", "xlogy_",
]
# in-place forms torch has as Tensor methods only (no torch.atan2_)
METHOD_ONLY = ["atan2_", "hypot_", "lerp_"]

# torch's spelling of a dtype in lerp's dtype-mismatch messages (its TypeMeta names)
_META_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _f64(v: Any) -> Any:
    return v._data.astype(np.float64) if isinstance(v, Tensor) else v


def _compute(fn, *operands: Any, dt: _dtype.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):  # torch returns nan/inf silently
        data = fn(*(_f64(o) for o in operands))
    if isinstance(data, (np.generic, float, int)):  # a device's array stays on its device
        data = np.asarray(data)
    return data.astype(dt.np, copy=False)


def _float_result(*operands: Any) -> _dtype.dtype:
    dt = result_type(*operands)
    return dt if dt.is_floating_point else _dtype._default[0]


def _no_integers(kernel: str, dt: _dtype.dtype) -> None:
    if not dt.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.scalar_type_name(dt)}\'')


def _devices(*operands: Any) -> Any:
    ts = [o for o in operands if isinstance(o, Tensor)]
    for t in ts[1:]:
        _check_devices(ts[0], t)
    return ts[0].device


def _op(key: str, inputs: tuple, data: np.ndarray, saved_fn) -> Tensor:
    out = _new(data, _devices(*inputs))
    if _grad_state.enabled and any(isinstance(t, Tensor) and t._tracked for t in inputs):
        record(NODES[key], tuple(t for t in inputs if isinstance(t, Tensor)), [out], saved_fn(out))
    return out


def _inplace(key: str, a: Tensor, others: tuple, out_of_place, saved_fn) -> Tensor:
    """out_of_place's result written into a, recorded as torch's generated in-place kernels do:
    the node numbered and a's old edge taken first, then a clone of a's old value saved (with
    CloneBackward0 in its history) where the formula reads self."""
    from gradviz.autograd.grad_mode import no_grad

    check_inplace(a)
    for o in others:
        _check_cast(a, o)
    tensors = tuple(o for o in others if isinstance(o, Tensor))
    w = InplaceWrite(a, tensors, checked=True)
    if w.grad:
        for t in tensors:
            t.grad_fn  # noqa: B018 - reading it regenerates a stale view's history now
        old_self = _views.clone(w.old)
    with no_grad():
        r = out_of_place(a, *others)
    if r.shape != a.shape:
        raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the broadcast shape {list(r.shape)}")
    a._data[...] = r._data
    return w.done(NODES[key], tensors, lambda: saved_fn(old_self, a), op=key + "_")


# -- forwards ----------------------------------------------------------------------------------


def atan2(a: Tensor, b: Tensor) -> Tensor:
    data = _compute(np.arctan2, a, b, dt=_float_result(a, b))
    return _op("atan2", (a, b), data, lambda out: {"self": save(a), "other": save(b)})


def atan2_(a: Tensor, b: Tensor) -> Tensor:
    return _inplace("atan2", a, (b,), atan2, lambda s, out: {"self": save(s), "other": save(b)})


def hypot(a: Tensor, b: Tensor) -> Tensor:
    dt = result_type(a, b)
    _no_integers("hypot_cpu", dt)
    data = _compute(np.hypot, a, b, dt=dt)
    return _op("hypot", (a, b), data, lambda out: {"self": save(a), "other": save(b), "result": save(out, True)})


def hypot_(a: Tensor, b: Tensor) -> Tensor:
    return _inplace("hypot", a, (b,), hypot,
                    lambda s, out: {"self": save(s), "other": save(b), "result": save(out, True)})


def logaddexp(a: Tensor, b: Tensor) -> Tensor:
    dt = result_type(a, b)
    _no_integers("logaddexp_cpu", dt)
    data = _compute(np.logaddexp, a, b, dt=dt)
    return _op("logaddexp", (a, b), data, lambda out: {"self": save(a), "other": save(b)})


def _xlogy(x: Any, y: Any) -> Any:
    # 0 where x is 0 (even where log(y) is -inf), NaN wherever y is
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))


def _xlogy_saved(a: Any, b: Any):
    def saved(out: Tensor) -> dict:
        d = {}
        if isinstance(a, Tensor):
            d["self"] = save(a)
        if isinstance(b, Tensor):
            d["other"] = save(b)
        return {**d, "self_scalar": None if isinstance(a, Tensor) else a,
                "other_scalar": None if isinstance(b, Tensor) else b}

    return saved


def _xlogy_key(a: Any, b: Any) -> str:
    # torch's overloads: Tensor-Tensor, Scalar-Tensor (XlogyBackward1), Tensor-Scalar (XlogyBackward2)
    return "xlogy" if isinstance(a, Tensor) and isinstance(b, Tensor) else \
        "xlogy_self_scalar" if isinstance(b, Tensor) else "xlogy_other_scalar"


def xlogy(a: Tensor | Scalar, b: Tensor | Scalar) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("xlogy() received an invalid combination of arguments - got (number, number)")
    data = _compute(_xlogy, a, b, dt=_float_result(a, b))
    return _op(_xlogy_key(a, b), (a, b), data, _xlogy_saved(a, b))


def xlogy_(a: Tensor, b: Tensor | Scalar) -> Tensor:
    def saved(s: Tensor, out: Tensor) -> dict:
        return _xlogy_saved(s, b)(out)

    return _inplace(_xlogy_key(a, b), a, (b,), xlogy, saved)


def _lerp(x: Any, y: Any, w: Any) -> Any:
    # torch's lerp kernel: from the nearer end, so that weight 0 and 1 give the ends exactly
    d = y - x
    return np.where(np.abs(w) < 0.5, x + w * d, y - d * (1 - w))


def _check_lerp(a: Tensor, end: Tensor, weight: Any) -> None:
    if isinstance(weight, Tensor):
        _no_integers("lerp_kernel_tensor", a.dtype)
    else:
        _no_integers("lerp_kernel_scalar", a.dtype)
    for name, o in (("end", end), ("weight", weight)):
        if isinstance(o, Tensor) and o.dtype is not a.dtype:
            raise RuntimeError(f"expected dtype {_META_NAMES.get(a.dtype.name, a.dtype.name)} for `{name}` but got "
                               f"dtype {_META_NAMES.get(o.dtype.name, o.dtype.name)}")


def lerp(a: Tensor, end: Tensor, weight: Tensor | Scalar) -> Tensor:
    _check_lerp(a, end, weight)
    data = _compute(_lerp, a, end, weight, dt=a.dtype)
    if isinstance(weight, Tensor):
        return _op("lerp_tensor", (a, end, weight), data,
                   lambda out: {"self": save(a), "end": save(end), "weight": save(weight)})
    return _op("lerp", (a, end), data, lambda out: {"weight": weight})


def lerp_(a: Tensor, end: Tensor, weight: Tensor | Scalar) -> Tensor:
    _check_lerp(a, end, weight)
    if isinstance(weight, Tensor):
        return _inplace("lerp_tensor", a, (end, weight), lerp,
                        lambda s, out: {"self": save(s), "end": save(end), "weight": save(weight)})
    return _inplace("lerp", a, (end,), lambda x, e: lerp(x, e, weight), lambda s, out: {"weight": weight})


def outer(a: Tensor, vec2: Tensor) -> Tensor:
    """torch's outer is ``a.reshape(n, 1) * vec2``: a ViewBackward0 under a MulBackward0."""
    for name, t in (("self", a), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return _arith.mul(_views.reshape(a, (a.shape[0], 1)), vec2)


# -- derivative rows ---------------------------------------------------------------------------


def _atan2_recip(n) -> Tensor:
    s, o = n["self"], n["other"]
    return _arith.reciprocal(_arith.add(_arith.mul(s, s), _arith.mul(o, o)))


def _xlogy_self(n, g):
    # torch 2.13: xlogy(grad, other), 0 only where self is 0 and other <= 0 (so a 0 self still
    # gets log(other) where other is positive)
    # (a positive scalar other masks nothing, and torch records no masked_fill for it)
    other = n["other"] if n["other_scalar"] is None else n["other_scalar"]
    if not isinstance(other, Tensor):
        if other > 0:
            return xlogy(g, other)
        return _indexing.masked_fill(xlogy(g, other), _pointwise.eq(n["self"], 0.0), 0.0)
    mask = _pointwise.logical_and(_pointwise.eq(n["self"], 0.0), _pointwise.le(other, 0.0))
    return _indexing.masked_fill(xlogy(g, other), mask, 0.0)


def _xlogy_other(n, g):
    s = n["self"] if n["self_scalar"] is None else n["self_scalar"]
    return _arith.div(_arith.mul(g, s), n["other"])


ROWS: dict[str, D] = {
    "atan2": D("Atan2Backward0", (
        lambda n, g: _arith.mul(_arith.mul(g, n["other"]), _atan2_recip(n)),
        lambda n, g: _arith.mul(_arith.mul(g, _arith.neg(n["self"])), _atan2_recip(n)),
    ), reduce_broadcast=True, forward=EW),
    "hypot": D("HypotBackward0", (
        lambda n, g: _arith.div(_arith.mul(g, n["self"]), n["result"]),
        lambda n, g: _arith.div(_arith.mul(g, n["other"]), n["result"]),
    ), reduce_broadcast=True, forward=EW),
    "logaddexp": D("LogaddexpBackward0", (
        lambda n, g: _arith.div(g, _arith.add_scalar(_pointwise.exp(_arith.sub(n["other"], n["self"])), 1.0)),
        lambda n, g: _arith.div(g, _arith.add_scalar(_pointwise.exp(_arith.sub(n["self"], n["other"])), 1.0)),
    ), reduce_broadcast=True, forward=EW),
    "xlogy": D("XlogyBackward0", (_xlogy_self, _xlogy_other), reduce_broadcast=True, forward=EW),
    "xlogy_self_scalar": D("XlogyBackward1", (_xlogy_other,), forward=EW),
    "xlogy_other_scalar": D("XlogyBackward2", (_xlogy_self,), forward=EW),
    "lerp": D("LerpBackward0", (
        lambda n, g: _arith.mul_scalar(g, 1 - n["weight"]),
        lambda n, g: _arith.mul_scalar(g, n["weight"]),
    ), reduce_broadcast=True, forward=EW),
    "lerp_tensor": D("LerpBackward1", (
        lambda n, g: _arith.mul(g, _arith.rsub(n["weight"], 1.0)),
        lambda n, g: _arith.mul(g, n["weight"]),
        lambda n, g: _arith.mul(g, _arith.sub(n["end"], n["self"])),
    ), reduce_broadcast=True, forward=EW),
}
register(ROWS)
