"""Pointwise math (abs, sqrt, exp, log, sin, ...), comparisons and logical ops."""

from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.ops import arith as _arith
from gradviz.ops._common import (
    Scalar,
    _as_array,
    _cast,
    _check_devices,
    _elementwise,
    _float_arg,
    _new,
    _unary,
    register,
    result_type,
)
from gradviz.ops.construction import (
    _zeros,
)
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import Derivative as D
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "abs", "allclose", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "ceil", "cos", "eq",
    "equal", "exp", "expm1", "floor", "ge", "gt", "isclose", "isfinite", "isinf", "isnan", "le", "log",
    "log10", "log1p", "log2", "logical_and", "logical_not", "logical_or", "lt", "ne", "round", "rsqrt", "sgn",
    "sign", "sin", "sqrt", "trunc",
]

# -- pointwise -------------------------------------------------------------------------------


def abs(a: Tensor) -> Tensor:  # noqa: A001
    return _unary("abs", a, np.abs, save_self=True)


def sqrt(a: Tensor) -> Tensor:
    return _unary("sqrt", a, lambda x: np.sqrt(_float_arg(a)), save_result=True)


def exp(a: Tensor) -> Tensor:
    return _unary("exp", a, lambda x: np.exp(_float_arg(a)), save_result=True)


def log(a: Tensor) -> Tensor:
    return _unary("log", a, lambda x: np.log(_float_arg(a)), save_self=True)


def log1p(a: Tensor) -> Tensor:
    return _unary("log1p", a, lambda x: np.log1p(_float_arg(a)), save_self=True)


def sin(a: Tensor) -> Tensor:
    return _unary("sin", a, lambda x: np.sin(_float_arg(a)), save_self=True)


def cos(a: Tensor) -> Tensor:
    return _unary("cos", a, lambda x: np.cos(_float_arg(a)), save_self=True)


def log10(a: Tensor) -> Tensor:
    return _unary("log10", a, lambda x: np.log10(_float_arg(a)), save_self=True)


def log2(a: Tensor) -> Tensor:
    return _unary("log2", a, lambda x: np.log2(_float_arg(a)), save_self=True)


def expm1(a: Tensor) -> Tensor:
    return _unary("expm1", a, lambda x: np.expm1(_float_arg(a)), save_result=True)


def rsqrt(a: Tensor) -> Tensor:
    return _unary("rsqrt", a, lambda x: 1.0 / np.sqrt(_float_arg(a)), save_result=True)


def _rounding(key: str, fn):
    # integers are their own floor (torch returns a copy of them), floats round in their dtype
    def op(a: Tensor) -> Tensor:
        if not a.dtype.is_floating_point:
            return _unary(key, a, np.copy)
        return _unary(key, a, fn)

    op.__name__ = key
    return op


floor = _rounding("floor", np.floor)
ceil = _rounding("ceil", np.ceil)
trunc = _rounding("trunc", np.trunc)
round = _rounding("round", np.round)  # noqa: A001 - half to even, as torch's


def sign(a: Tensor) -> Tensor:
    return _unary("sign", a, np.sign)


def sgn(a: Tensor) -> Tensor:
    return _unary("sgn", a, np.sign)


# -- comparisons (no gradient) --------------------------------------------------------------


def _compare(fn):
    def op(a: Tensor, b: Tensor | Scalar) -> Tensor:
        if isinstance(b, Tensor):
            _check_devices(a, b)
            return _new(_as_array(_elementwise(fn, a._data, b._data)), a.device)
        return _new(_as_array(fn(a._data, b)), a.device)

    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)


def _bitwise(name: str, fn):
    """The operators &, |, ^ as torch has them: bitwise on integers, logical on bools (the
    promoted dtype is the result's), refused for floats."""

    def op(a: Tensor, b: Tensor | Scalar) -> Tensor:
        dt = result_type(a, b)
        if dt.is_floating_point:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
        if isinstance(b, Tensor):
            _check_devices(a, b)
            data = _elementwise(fn, a._data, b._data)
        else:
            data = fn(a._data, b)
        return _new(_cast(_as_array(data), dt), a.device)

    return op


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)


def bitwise_not(a: Tensor) -> Tensor:
    if a.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _new(np.invert(a._data), a.device)


def logical_not(a: Tensor) -> Tensor:
    return _new(np.logical_not(a._data), a.device)


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    return _new(np.logical_and(a._data, b._data), a.device)


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    return _new(np.logical_or(a._data, b._data), a.device)


def isnan(a: Tensor) -> Tensor:
    return _new(np.isnan(a._data), a.device)


def isinf(a: Tensor) -> Tensor:
    return _new(np.isinf(a._data), a.device)


def isfinite(a: Tensor) -> Tensor:
    return _new(np.isfinite(a._data), a.device)


def isclose(a: Tensor, b: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    """|a - b| <= atol + rtol * |b|, elementwise (a bool tensor, no gradient)."""
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{_dtype.scalar_type_name(a.dtype)} did not match {_dtype.scalar_type_name(b.dtype)}")
    _check_devices(a, b)
    if a.dtype is _dtype.bool_:
        return _new(np.asarray(a._data == b._data), a.device)
    return _new(np.asarray(np.isclose(a._data, b._data, rtol, atol, equal_nan)), a.device)


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan)._data.all())


def equal(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.all(a._data == b._data))


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "abs": D("AbsBackward0", (lambda n, g: _arith.mul(g, sgn(n["self"])),), forward=EW),
    "sign": D("SignBackward0", (_zeros,), forward=EW),
    "sgn": D("SgnBackward0", (_zeros,), forward=EW),
    "sqrt": D("SqrtBackward0", (lambda n, g: _arith.div(g, _arith.mul_scalar(n["result"], 2.0)),), forward=EW),
    "exp": D("ExpBackward0", (lambda n, g: _arith.mul(g, n["result"]),), forward=EW),
    "log": D("LogBackward0", (lambda n, g: _arith.div(g, n["self"]),), forward=EW),
    "log1p": D("Log1PBackward0", (lambda n, g: _arith.div(g, _arith.add_scalar(n["self"], 1.0)),), forward=EW),
    "sin": D("SinBackward0", (lambda n, g: _arith.mul(g, cos(n["self"])),), forward=EW),
    "cos": D("CosBackward0", (lambda n, g: _arith.mul(g, _arith.neg(sin(n["self"]))),), forward=EW),
    "log10": D("Log10Backward0", (lambda n, g: _arith.div(g, _arith.mul_scalar(n["self"], 2.3025850929940456)),),
        forward=EW),
    "log2": D("Log2Backward0", (lambda n, g: _arith.div(g, _arith.mul_scalar(n["self"], 0.6931471805599453)),),
        forward=EW),
    "expm1": D("Expm1Backward0", (lambda n, g: _arith.mul(g, _arith.add_scalar(n["result"], 1.0)),), forward=EW),
    # -0.5 * grad * result ** 3
    "rsqrt": D("RsqrtBackward0", (lambda n, g: _arith.mul_scalar(_arith.mul(g, _arith.pow(n["result"], 3)), -0.5),),
        forward=EW),
    "floor": D("FloorBackward0", (_zeros,), forward=EW),
    "ceil": D("CeilBackward0", (_zeros,), forward=EW),
    "trunc": D("TruncBackward0", (_zeros,), forward=EW),
    "round": D("RoundBackward0", (_zeros,), forward=EW),
}
register(ROWS)
