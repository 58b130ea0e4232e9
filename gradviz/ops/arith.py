"""Arithmetic: add, sub, mul, div, floor_divide, remainder, fmod, pow, maximum/minimum, where;
forward, backward formulas and rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import to_device_array
from gradviz.ops import indexing as _indexing
from gradviz.ops import pointwise as _pointwise
from gradviz.ops._common import (
    NODES,
    Scalar,
    _as_array,
    _as_tensor,
    _binary_data,
    _binary_device,
    _broadcast_error,
    _cast,
    _check_devices,
    _elementwise,
    _new,
    _number_fast,
    _number_result,
    _out,
    _result_dtype_scalar,
    _unary,
    _wrap,
    register,
    result_type,
)
from gradviz.ops._scalars import float_operand
from gradviz.ops.construction import (
    _zero_scalar,
    zeros_for,
)
from gradviz.ops.core import _ALPHA_ONE, record, save
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import Derivative as D
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "add", "div", "floor_divide", "fmod", "maximum", "minimum", "mul", "neg", "pow", "reciprocal",
    "remainder", "rsub", "square", "sub", "where",
]

# -- arithmetic ------------------------------------------------------------------------------


def add(a: Tensor, b: Tensor | Scalar, alpha: Scalar = 1) -> Tensor:
    tb = type(b)
    if (tb is float or tb is int) and alpha == 1 and type(a) is Tensor and a.dtype.is_floating_point:
        # A floating tensor plus a Python int or float: the tensor's dtype, one
        # numpy call, no promotion to work out (a float converted once: _scalars).
        x = a._data
        d = x + (float_operand(b, x.dtype) if tb is float and type(x) is np.ndarray else b)
        out = _wrap(d if type(d) is np.ndarray else _number_result(d), a.dtype, a.device)
        # a._tracked without the property call (a view's flag is its base's)
        if _grad_state.enabled and (a._requires_grad or a._grad_fn is not None
                                    or (a._base is not None and a._base._tracked)):
            record(_ADD_NODE, (a, None), [out], _ALPHA_ONE if type(alpha) is int else {"alpha": alpha})
        return out
    if tb is Tensor and alpha == 1 and type(a) is Tensor:
        dt = a.dtype
        if dt is b.dtype and a.device is b.device and dt.is_floating_point:
            # Two floating tensors of one dtype on one device (any same-dtype add, a bias add
            # among them): the dtype is the result's; one numpy call.
            try:
                d = a._data + b._data
            except ValueError as e:
                raise (_broadcast_error(a._data.shape, b._data.shape) or e) from None
            out = _wrap(d if type(d) is np.ndarray else _number_result(d), dt, a.device)
            # requires_grad without the property calls (a view's flag is its base's)
            if _grad_state.enabled and (
                a._requires_grad
                or a._grad_fn is not None
                or b._requires_grad
                or b._grad_fn is not None
                or (a._base is not None and a._base._tracked)
                or (b._base is not None and b._base._tracked)
            ):
                record(_ADD_NODE, (a, b), [out], _ALPHA_ONE if type(alpha) is int else {"alpha": alpha})
            return out
    if not isinstance(a, Tensor):
        return add(_as_tensor(a, b), b, alpha)
    if type(a._data) is SparseCOO or type(getattr(b, "_data", None)) is SparseCOO:
        from gradviz.ops.sparse_ops import sparse_add

        return sparse_add(a, b, alpha)
    out_data, bt = _binary_data(a, b, (lambda x, y: x + y * alpha) if alpha != 1 else np.add)
    out = _new(out_data, _binary_device(a, bt))
    inputs = (a, bt)
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        record(NODES["add"], inputs, [out], {"alpha": alpha})
    return out


def _check_bool_sub(a: Tensor, b: Tensor | Scalar) -> None:
    a_bool = a.dtype is _dtype.bool_
    b_bool = isinstance(b, bool) or (isinstance(b, Tensor) and b.dtype is _dtype.bool_)
    if a_bool and b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if a_bool or (b_bool and isinstance(b, Tensor)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def sub(a: Tensor, b: Tensor | Scalar, alpha: Scalar = 1) -> Tensor:
    _check_bool_sub(a, b)
    out_data, bt = _binary_data(a, b, (lambda x, y: x - y * alpha) if alpha != 1 else np.subtract)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        record(NODES["sub"], (a, bt), [out], {"alpha": alpha})
    return out


def rsub(a: Tensor, b: Scalar, alpha: Scalar = 1) -> Tensor:
    """b - alpha * a for a Python number b (torch's RsubBackward1)."""
    _check_bool_sub(a, b)
    out = _new(_cast(_as_array(b - a._data * alpha), _result_dtype_scalar(a, b)), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["rsub"], (a,), [out], {"alpha": alpha})
    return out


def mul(a: Tensor, b: Tensor | Scalar) -> Tensor:
    tb = type(b)
    if (tb is float or tb is int) and a.dtype.is_floating_point:
        # A floating tensor times a Python int or float: as add's.
        x = a._data
        d = x * (float_operand(b, x.dtype) if tb is float and type(x) is np.ndarray else b)
        out = _wrap(d if type(d) is np.ndarray else _number_result(d), a.dtype, a.device)
        # a._tracked without the property call (a view's flag is its base's)
        if _grad_state.enabled and (a._requires_grad or a._grad_fn is not None
                                    or (a._base is not None and a._base._tracked)):
            record(_MUL_NODE, (a, None), [out], {"other": b})
        return out
    out_data, bt = _binary_data(a, b, np.multiply)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        # Save only what a gradient will need, as torch does (it shows in saved tensors).
        saved: dict[str, Any] = {}
        saved["other"] = save(bt) if (bt is not None and a._tracked) else b
        if bt is not None and bt._tracked:
            saved["self"] = save(a)
        record(NODES["mul"], (a, bt), [out], saved)
    return out


def mul_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a * b for a Python number b as torch's C++ formulas write it (MulBackward1, one edge)."""
    out = _new(_binary_data(a, b, np.multiply)[0], a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["mul_scalar"], (a,), [out], {"other": b})
    return out


def add_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a + b for a Python number b as torch's C++ formulas write it (AddBackward1)."""
    out = _new(_binary_data(a, b, np.add)[0], a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["add_scalar"], (a,), [out], {})
    return out


def sub_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a - b for a Python number b as torch's C++ formulas write it (SubBackward1)."""
    out = _new(_binary_data(a, b, np.subtract)[0], a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["sub_scalar"], (a,), [out], {})
    return out


def div_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a / b for a Python number b as torch's C++ formulas write it (DivBackward1)."""
    out = _new(_binary_data(a, b, np.true_divide, floating=True)[0], a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["div_scalar"], (a,), [out], {"other": b})
    return out

_NO_MODE: Any = object()  # div called without rounding_mode (torch's div.Tensor, not div.Tensor_mode)


def _trunc_divide(x: Any, y: Any) -> Any:
    if np.issubdtype(np.result_type(x, y), np.integer):  # exact: floor, then toward zero
        q = np.floor_divide(x, y)
        return q + ((np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0)))
    return np.trunc(np.true_divide(x, y))


def div_mode(a: Tensor, b: Tensor | Scalar, rounding_mode: str | None) -> Tensor:
    """torch.div(a, b, rounding_mode=...): true division (None), or rounded toward zero ("trunc")
    or minus infinity ("floor") in the operands' dtype. One node, DivBackward2, with an edge for
    b even when it is a number (torch wraps it); a rounded quotient's gradient is zero."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    if rounding_mode is None:
        out_data, bt = _binary_data(a, b, np.true_divide, floating=True)
    elif rounding_mode == "floor":
        out_data, bt = _integer_division("div_floor_cpu", a, b, np.floor_divide)
    else:
        out_data, bt = _integer_division("div_trunc_cpu", a, b, _trunc_divide)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        other = bt if bt is not None else _wrapped(b, a)
        saved: dict[str, Any] = {"other": save(other), "mode": rounding_mode}
        if other._tracked:
            saved["self"] = save(a)
        record(NODES["div_mode"], (a, bt), [out], saved)
    return out


def div(a: Tensor, b: Tensor | Scalar, *, rounding_mode: Any = _NO_MODE) -> Tensor:
    if rounding_mode is not _NO_MODE:
        return div_mode(a, b, rounding_mode)
    out_data, bt = _binary_data(a, b, np.true_divide, floating=True)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        saved: dict[str, Any] = {"other": save(bt) if bt is not None else b}
        if bt is not None and bt._tracked:
            saved["self"] = save(a)
        record(NODES["div"], (a, bt), [out], saved)
    return out


def neg(a: Tensor) -> Tensor:
    if a.dtype is _dtype.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
            "the `~` or `logical_not()` operator instead."
        )
    return _unary("neg", a, np.negative)


def reciprocal(a: Tensor) -> Tensor:
    return _unary("reciprocal", a, lambda x: 1.0 / x, save_result=True, floating=True)


def rdiv(a: Tensor, b: Scalar) -> Tensor:
    """b / a for a Python number b: torch computes reciprocal(a) * b."""
    return mul(reciprocal(a), b)


def pow(a: Tensor | Scalar, exponent: Tensor | Scalar) -> Tensor:  # noqa: A001
    if not isinstance(a, Tensor):
        return _pow_base(a, exponent)
    if isinstance(exponent, Tensor):
        _check_devices(a, exponent)
        data = _cast(np.power(a._data, exponent._data), result_type(a, exponent))
        out = _new(data, a.device)
        if _grad_state.enabled and (a._tracked or exponent._tracked):
            record(NODES["pow_tensor"], (a, exponent), [out],
                   {"self": save(a), "exponent": save(exponent), "result": save(out, True)})
        return out
    if type(exponent) is int and exponent < 0 and not a.dtype.is_floating_point:
        # numpy raises a ValueError with these words; torch a RuntimeError
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    data = _cast(np.power(a._data, exponent), _result_dtype_scalar(a, exponent))
    out = _new(data, a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["pow_scalar"], (a,), [out], {"self": save(a), "exponent": exponent})
    return out


def _pow_base(base: Scalar, e: Tensor) -> Tensor:
    data = np.power(base, e._data)
    out = _new(_cast(_as_array(data), result_type(base, e)), e.device)
    if _grad_state.enabled and e._tracked:
        record(NODES["pow_base"], (e,), [out], {"result": save(out, True), "log_base": math.log(base)})
    return out


def square(a: Tensor) -> Tensor:
    return pow(a, 2)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    return _minmax("maximum", a, b, np.maximum)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    return _minmax("minimum", a, b, np.minimum)


def _minmax(key: str, a: Tensor, b: Tensor, fn) -> Tensor:
    _check_devices(a, b)
    out = _new(_cast(_elementwise(fn, a._data, b._data), result_type(a, b)), a.device)
    if _grad_state.enabled and (a._tracked or b._tracked):
        record(NODES[key], (a, b), [out], {"self": save(a), "other": save(b)})
    return out


def where(condition: Tensor, a: Tensor | Scalar | None = None, b: Tensor | Scalar | None = None) -> Any:
    if a is None and b is None:
        # torch.where(condition): the indices of its nonzero entries, one tensor per dim
        return _indexing.nonzero(condition, as_tuple=True)
    if condition.dtype is not _dtype.bool_:
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{_dtype.scalar_type_name(condition.dtype)}"
        )
    dt = result_type(a, b)
    dev = a.device if isinstance(a, Tensor) else b.device if isinstance(b, Tensor) else condition.device
    # Numbers become 0-dim tensors of the result dtype (their edges are (None, 0)).
    at = a if isinstance(a, Tensor) else _new(to_device_array(np.asarray(a, dtype=dt.np), dev), dev)
    bt = b if isinstance(b, Tensor) else _new(to_device_array(np.asarray(b, dtype=dt.np), dev), dev)
    _check_devices(at, bt)
    # torch's message names the first clash, broadcasting condition, then a, then b
    shape = condition._data.shape
    for other in (at._data.shape, bt._data.shape):
        err = _broadcast_error(shape, other)
        if err is not None:
            raise err
        shape = np.broadcast_shapes(shape, other)
    data = np.where(condition._data, at._data, bt._data)
    out = _new(_cast(data, dt), at.device)
    if _grad_state.enabled and (at._tracked or bt._tracked):
        record(NODES["where"], (at, bt), [out], {"condition": condition.detach()})
    return out


# -- floor division and remainders -------------------------------------------------------------


def _integer_division(name: str, a: Tensor, b: Any, fn) -> tuple[Any, Tensor | None]:
    """fn on the data in torch's result dtype, with torch's refusals: bool operands, and an
    integer division by zero (a RuntimeError, where numpy would warn and give 0)."""
    dt = result_type(a, b)
    if dt is _dtype.bool_:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')
    if not dt.is_floating_point:
        bd = b._data if isinstance(b, Tensor) else b
        if np.any(np.asarray(bd) == 0):
            raise RuntimeError("ZeroDivisionError")
    return _binary_data(a, b, fn)


def _wrapped(s: Any, like: Tensor) -> Tensor:
    # a Python number on the left: a 0-dim tensor of its own dtype (torch's wrapped number)
    return _new(to_device_array(np.asarray(s, dtype=result_type(s).np), like.device), like.device)


def floor_divide(a: Any, b: Any) -> Tensor:
    """a // b, rounded toward minus infinity; torch has no derivative for it (a NotImplemented
    node, whose backward raises)."""
    if not isinstance(a, Tensor):
        a = _wrapped(a, b)
    data, bt = _integer_division("div_floor_cpu", a, b, np.floor_divide)
    out = _new(data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        record(NODES["not_implemented"], (a, bt) if bt is not None else (a,), [out], {"op": "floor_divide"})
    return out


def remainder(a: Any, b: Any) -> Tensor:
    """a % b with the divisor's sign, as Python's (RemainderBackward0 for a number divisor,
    RemainderBackward1 for a tensor one; a number dividend has no derivative in torch)."""
    if not isinstance(a, Tensor):
        a = _wrapped(a, b)
        wrapped_self = True
    else:
        wrapped_self = False
    data, bt = _integer_division("remainder_cpu", a, b, np.remainder)
    out = _new(data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        if wrapped_self:
            record(NODES["not_implemented"], (a, bt), [out], {"op": "remainder"})
        elif bt is None:
            record(NODES["remainder_scalar"], (a,), [out], {})
        else:
            record(NODES["remainder"], (a, bt), [out], {"self": save(a), "other": save(bt)})
    return out


def fmod(a: Tensor, b: Any) -> Tensor:
    """a % b with the dividend's sign, as C's fmod (FmodBackward0 for a number divisor,
    FmodBackward1 for a tensor one)."""
    data, bt = _integer_division("fmod_cpu", a, b, np.fmod)
    out = _new(data, _binary_device(a, bt))
    if _grad_state.enabled and (a._tracked or (bt is not None and bt._tracked)):
        if bt is None:
            record(NODES["fmod_scalar"], (a,), [out], {})
        else:
            record(NODES["fmod"], (a, bt), [out], {"self": save(a), "other": save(bt)})
    return out


# -- backward formulas ----------------------------------------------------------------------


def _mul_other(n, g):
    # MulBackward0, self's gradient: grad * other (a saved tensor, or the number itself)
    other = n.saved["other"]
    tc = type(other)
    if tc is float or tc is int:
        dt = g.dtype
        if not _grad_state.enabled and dt.is_floating_point:  # _number_fast, and _out inline
            x = g._data
            data = x * (float_operand(other, x.dtype) if tc is float and type(x) is np.ndarray else other)
            if type(data) is np.ndarray and data.dtype is dt.np:
                return _wrap(data, dt, g.device)
            return _new(data, g.device)
        return mul(g, other)
    return mul(g, n["other"])  # a SavedVariable unpacked, or a released number's error


def _mul_scalar(n, g):
    # MulBackward1: grad * other, recorded (under create_graph) as torch's MulBackward1 again
    other = n.saved["other"]
    if _number_fast(g, other):
        return _out(g._data * other, g)
    return mul_scalar(g, other)


# Where torch's C++ formula is ``a * b`` with two computed operands, the compiler evaluates the
# right one first; so do these (it decides the numbering of a create_graph backward's nodes).


def _div_other(n, g):
    # -grad * ((self / other) / other)
    q = div(div(n["self"], n["other"]), n["other"])
    return mul(neg(g), q)


def _reciprocal(n, g):
    # -grad * (result * result)
    rr = mul(n["result"], n["result"])
    return mul(neg(g), rr)


def _add_other(n, g):
    # AddBackward0, other's gradient: grad * alpha, most often alpha 1 (checked here first: one
    # call fewer on every add node)
    alpha = n.saved["alpha"]
    return g if alpha == 1 else _maybe_multiply(g, alpha)


def _maybe_multiply(g, alpha):
    if alpha == 1:
        return g
    if _number_fast(g, alpha):
        return _out(g._data * alpha, g)
    return mul_scalar(g, alpha)


def _pow_tensor_self(n, g):
    x, e = n["self"], n["exponent"]
    return where(_pointwise.eq(e, 0.0), _zero_scalar(g), mul(g, mul(e, pow(x, sub_scalar(e, 1)))))


def _pow_tensor_exponent(n, g):
    # d/de x**e = x**e * log(x); torch masks the 0**e (e >= 0) points to 0 instead of NaN.
    x, e, r = n["self"], n["exponent"], n["result"]
    cond = _pointwise.logical_and(_pointwise.eq(x, 0.0), _pointwise.ge(e, 0.0))
    return mul(g, where(cond, _zero_scalar(g), mul(r, _pointwise.log(x))))


def _not_implemented(n, g):
    raise RuntimeError(f"derivative for aten::{n['op']} is not implemented")


def _remainder_other(n, g):
    # -grad * floor(self / other) (fmod: the quotient truncated)
    q = div(n["self"], n["other"])
    q = _pointwise.floor(q) if n.derivative.name.startswith("Remainder") else _pointwise.trunc(q)
    return mul(neg(g), q)


def _maxmin(lose: str):
    # torch: where(self == other, grad / 2, grad).masked_fill_(self < other, 0) (and the mirror);
    # ``lose`` names the comparison (looked up late: pointwise may not be imported yet).
    def grad(n, g):
        a, b = n["self"], n["other"]
        losing = getattr(_pointwise, lose)(a, b)
        return _indexing.masked_fill(where(_pointwise.eq(a, b), div_scalar(g, 2), g), losing, 0.0)

    return grad


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    # arithmetic (gradients summed back over broadcast dims; order=(1, 0): "other" runs first)
    "add": D("AddBackward0", (lambda n, g: g, _add_other),
             reduce_broadcast=True, order=(1, 0), forward=EW),
    "sub": D("SubBackward0", (lambda n, g: g, lambda n, g: _maybe_multiply(neg(g), n["alpha"])),
             reduce_broadcast=True, order=(1, 0), forward=EW),
    "rsub": D("RsubBackward1", (lambda n, g: _maybe_multiply(neg(g), n["alpha"]),), reduce_broadcast=True, forward=EW),
    # The Scalar overloads: what torch's C++ formulas use with a number (user code gets add/mul/...)
    "add_scalar": D("AddBackward1", (lambda n, g: g,), forward=EW),
    "sub_scalar": D("SubBackward1", (lambda n, g: g,), forward=EW),
    "div_scalar": D("DivBackward1", (lambda n, g: div_scalar(g, n["other"]),), forward=EW),
    "mul_scalar": D("MulBackward1", (_mul_scalar,), forward=EW),
    "mul": D("MulBackward0", (_mul_other, lambda n, g: mul(g, n["self"])),
             reduce_broadcast=True, order=(1, 0), forward=EW),
    "div_mode": D("DivBackward2", (
        lambda n, g: div(g, n["other"]) if n["mode"] is None else zeros_for(g.shape, g.dtype, g.device),
        lambda n, g: _div_other(n, g) if n["mode"] is None else zeros_for(g.shape, g.dtype, g.device),
    ), reduce_broadcast=True, order=(1, 0), forward=EW),
    "div": D("DivBackward0", (
        lambda n, g: div(g, n["other"]),
        _div_other,
    ), reduce_broadcast=True, order=(1, 0), forward=EW),
    "pow_scalar": D("PowBackward0", (
        lambda n, g: zeros_for(g.shape, g.dtype, g.device) if n["exponent"] == 0
        else mul(g, mul_scalar(pow(n["self"], n["exponent"] - 1), n["exponent"])),
    ), forward=EW),
    "pow_tensor": D("PowBackward1", (_pow_tensor_self, _pow_tensor_exponent), reduce_broadcast=True, order=(1, 0),
        forward=EW),
    "pow_base": D("PowBackward2", (lambda n, g: mul(g, mul_scalar(n["result"], n["log_base"])),), forward=EW),
    "maximum": D("MaximumBackward0", (_maxmin("lt"), _maxmin("gt")), reduce_broadcast=True, order=(1, 0), forward=EW),
    "minimum": D("MinimumBackward0", (_maxmin("gt"), _maxmin("lt")), reduce_broadcast=True, order=(1, 0), forward=EW),
    "where": D("WhereBackward0", (
        lambda n, g: where(n["condition"], g, _zero_scalar(g)),
        lambda n, g: where(n["condition"], _zero_scalar(g), g),
    ), reduce_broadcast=True, order=(1, 0), forward=EW),
    "neg": D("NegBackward0", (lambda n, g: neg(g),), forward=EW),
    "reciprocal": D("ReciprocalBackward0", (_reciprocal,), forward=EW),
    "not_implemented": D("NotImplemented", (_not_implemented, _not_implemented)),
    "remainder_scalar": D("RemainderBackward0", (lambda n, g: g,), forward=EW),
    "remainder": D("RemainderBackward1", (lambda n, g: g, _remainder_other), reduce_broadcast=True, forward=EW),
    "fmod_scalar": D("FmodBackward0", (lambda n, g: g,), forward=EW),
    "fmod": D("FmodBackward1", (lambda n, g: g, _remainder_other), reduce_broadcast=True, forward=EW),
}
register(ROWS)

# torch saves a Python number operand of mul and div as a tensor (a wrapped number), which a
# backward frees: gradviz keeps the number, and releases it with the node's tensors (OpNode._wrapped).
NODES["mul"]._wrapped = NODES["div"]._wrapped = ("other",)
_ADD_NODE, _MUL_NODE = NODES["add"], NODES["mul"]  # the hot paths' node classes, looked up once
