"""Pointwise math (abs, sqrt, exp, log, sin, ...), comparisons and logical ops."""

from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.device import CPU, to_device_array
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
from gradviz.ops.core import Derivative as D
from gradviz.tensor import Tensor

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


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    return bool(np.allclose(to_device_array(a._data, CPU), to_device_array(b._data, CPU), rtol, atol))


def equal(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.all(a._data == b._data))


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    "abs": D("AbsBackward0", (lambda n, g: _arith.mul(g, sgn(n["self"])),)),
    "sign": D("SignBackward0", (_zeros,)),
    "sgn": D("SgnBackward0", (_zeros,)),
    "sqrt": D("SqrtBackward0", (lambda n, g: _arith.div(g, _arith.mul_scalar(n["result"], 2.0)),)),
    "exp": D("ExpBackward0", (lambda n, g: _arith.mul(g, n["result"]),)),
    "log": D("LogBackward0", (lambda n, g: _arith.div(g, n["self"]),)),
    "log1p": D("Log1PBackward0", (lambda n, g: _arith.div(g, _arith.add_scalar(n["self"], 1.0)),)),
    "sin": D("SinBackward0", (lambda n, g: _arith.mul(g, cos(n["self"])),)),
    "cos": D("CosBackward0", (lambda n, g: _arith.mul(g, _arith.neg(sin(n["self"]))),)),
}  # fmt: skip
register(ROWS)
