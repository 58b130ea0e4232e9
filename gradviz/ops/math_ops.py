"""Unary math: the inverse trigonometric and hyperbolic functions, erf/erfc/erfinv, lgamma,
digamma, frac, logit and nan_to_num, with their in-place variants and torch 2.13's backward nodes.

numpy has no erf or gamma-family ufuncs and gradviz depends on numpy alone, so the special
functions are written here: erf/erfc/lgamma map Python's math module over the elements, digamma
and trigamma follow the series torch's own CPU kernels use (so their results agree to rounding).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, register
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_write import InplaceWrite, check_inplace
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "acos", "acos_", "acosh", "acosh_", "asin", "asin_", "asinh", "asinh_", "atan", "atan_", "atanh", "atanh_",
    "cosh", "cosh_", "digamma", "erf", "erf_", "erfc", "erfc_", "erfinv", "frac", "frac_", "lgamma", "logit",
    "logit_", "nan_to_num", "nan_to_num_", "sinh", "sinh_",
]
# in-place forms torch has as Tensor methods only (no torch.digamma_)
METHOD_ONLY = ["digamma_", "erfinv_", "lgamma_"]

# -- special functions on float64 arrays -----------------------------------------------------------


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # the poles (0 and the negative integers): torch gives +inf
        return math.inf


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_lgamma = np.vectorize(_lgamma_scalar, otypes=[np.float64])

# torch's calc_digamma: the asymptotic series' coefficients and psi(10)
_PSI_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
          -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
          8.33333333333333333333e-2)
_PSI_10 = 2.25175258906672110764


def _digamma(x: np.ndarray) -> np.ndarray:
    x = np.array(x, dtype=np.float64, copy=True)
    out = np.empty_like(x)
    zero = x == 0
    neg_int = (x < 0) & (x == np.trunc(x))
    neg = (x < 0) & ~neg_int
    # reflection for negative non-integers: psi(x) = psi(1 - x) - pi / tan(pi * frac(x))
    refl = np.zeros_like(x)
    with np.errstate(all="ignore"):
        refl[neg] = -np.pi / np.tan(np.pi * np.fmod(x[neg], 1.0))
    x[neg] = 1 - x[neg]
    result = np.zeros_like(x)
    work = ~zero & ~neg_int & ~np.isnan(x)
    with np.errstate(all="ignore"):
        while True:
            small = work & (x < 10)
            if not small.any():
                break
            result[small] -= 1 / x[small]
            x[small] += 1
        z = 1.0 / (x * x)
        poly = np.zeros_like(x)
        for c in _PSI_A:
            poly = poly * z + c
        y = np.where(x < 1.0e17, z * poly, 0.0)
        asym = result + np.log(x) - 0.5 / x - y
        out[:] = np.where(x == 10, result + _PSI_10, asym) + refl
    out[zero] = np.copysign(np.inf, -x[zero])
    out[neg_int] = np.nan
    out[np.isnan(x)] = np.nan
    return out


def _trigamma(x: np.ndarray) -> np.ndarray:
    """polygamma(1, x), as torch's calc_trigamma computes it."""
    x = np.array(x, dtype=np.float64, copy=True)
    sign = np.ones_like(x)
    result = np.zeros_like(x)
    with np.errstate(all="ignore"):
        low = x < 0.5
        sign[low] = -1
        s = np.sin(np.pi * x[low])
        result[low] -= np.pi * np.pi / (s * s)
        x[low] = 1 - x[low]
        for _ in range(6):
            result += 1 / (x * x)
            x += 1
        ixx = 1 / (x * x)
        result += (1 + 1 / (2 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
    return sign * result


# Giles' single-precision erfinv (2010), refined below by Newton steps on math.erf
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    inside = np.abs(y) < 1
    yi = np.where(inside, y, 0.0)
    w = -np.log((1 - yi) * (1 + yi))
    lo, hi = w - 2.5, np.sqrt(w) - 3
    p_lo, p_hi = np.zeros_like(w), np.zeros_like(w)
    for c_lo, c_hi in zip(_GILES_LO, _GILES_HI, strict=True):
        p_lo, p_hi = p_lo * lo + c_lo, p_hi * hi + c_hi
    x = np.where(w < 5, p_lo, p_hi) * yi
    for _ in range(3):  # each step squares the error: float64 after two from Giles' 1e-7
        x = x - (_erf(x) - yi) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    out = np.where(inside, x, np.nan)
    return np.where(np.abs(y) == 1, np.copysign(np.inf, y), out)


# -- forwards ----------------------------------------------------------------------------------


def _result_dtype(a: Tensor) -> _dtype.dtype:
    # integers and bools promote to the default float, as torch's unary float ops do
    return a.dtype if a.dtype.is_floating_point else _dtype._default[0]


def _compute(a: Tensor, fn) -> Any:
    x = a._data if a.dtype is _dtype.float64 else a._data.astype(np.float64)
    with np.errstate(all="ignore"):  # torch returns nan/inf silently
        data = np.asarray(fn(x))
    return data.astype(_result_dtype(a).np, copy=False)


def _math_unary(key: str, a: Tensor, fn, save_self: bool = True, **extra: Any) -> Tensor:
    out = _new(_compute(a, fn), a.device)
    if _grad_state.enabled and a._tracked:
        saved: dict[str, Any] = {"self": save(a)} if save_self else {}
        record(NODES[key], (a,), [out], {**saved, **extra})
    return out


def _math_unary_(key: str, a: Tensor, fn, save_self: bool = True, **extra: Any) -> Tensor:
    """fn written into a: torch's generated in-place kernel numbers the node, collects a's old
    edge, then saves a clone of a's old value (CloneBackward0 in its history) where the formula
    reads self."""
    from gradviz.autograd.grad_mode import no_grad

    check_inplace(a)
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_dtype.scalar_type_name(a.dtype)}")
    w = InplaceWrite(a, checked=True)
    saved: dict[str, Any] = {"self": save(_views.clone(w.old))} if w.grad and save_self else {}
    with no_grad():
        data = _compute(a, fn)
    a._data[...] = data
    # the keys are torch's op names ("logit"; "acosh_", the in-place row torch names apart)
    return w.done(NODES[key], (), {**saved, **extra}, op=key.rstrip("_") + "_")


def _no_integers(name: str, a: Tensor) -> None:
    if not a.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype.scalar_type_name(a.dtype)}\'')


# torch has no derivative for these three in place: their nodes (AcoshBackward1, ...) save
# nothing and raise when the backward reaches them
_INPLACE_NOT_IMPLEMENTED = ("acosh", "asinh", "atanh")


def _pair(key: str, fn):
    def op(a: Tensor) -> Tensor:
        return _math_unary(key, a, fn)

    def op_(a: Tensor) -> Tensor:
        if key in _INPLACE_NOT_IMPLEMENTED:
            return _math_unary_(key + "_", a, fn, save_self=False)
        return _math_unary_(key, a, fn)

    op.__name__, op_.__name__ = key, key + "_"
    return op, op_


atan, atan_ = _pair("atan", np.arctan)
asin, asin_ = _pair("asin", np.arcsin)
acos, acos_ = _pair("acos", np.arccos)
sinh, sinh_ = _pair("sinh", np.sinh)
cosh, cosh_ = _pair("cosh", np.cosh)
asinh, asinh_ = _pair("asinh", np.arcsinh)
acosh, acosh_ = _pair("acosh", np.arccosh)
atanh, atanh_ = _pair("atanh", np.arctanh)
erf, erf_ = _pair("erf", _erf)
erfc, erfc_ = _pair("erfc", _erfc)
erfinv, erfinv_ = _pair("erfinv", _erfinv)
lgamma, lgamma_ = _pair("lgamma", _lgamma)
digamma, digamma_ = _pair("digamma", _digamma)


def _frac(x: np.ndarray) -> np.ndarray:
    return x - np.trunc(x)


def frac(a: Tensor) -> Tensor:
    _no_integers("frac", a)
    return _math_unary("frac", a, _frac, save_self=False)


def frac_(a: Tensor) -> Tensor:
    _no_integers("frac", a)
    return _math_unary_("frac", a, _frac, save_self=False)


def _logit_fn(eps: float | None):
    def fn(x: np.ndarray) -> np.ndarray:
        if eps is not None:
            x = np.clip(x, eps, 1 - eps)
        return np.log(x / (1 - x))

    return fn


def logit(a: Tensor, eps: float | None = None) -> Tensor:
    return _math_unary("logit", a, _logit_fn(eps), eps=eps)


def logit_(a: Tensor, eps: float | None = None) -> Tensor:
    return _math_unary_("logit", a, _logit_fn(eps), eps=eps)


def _nan_to_num_fn(a: Tensor, nan: float, posinf: float | None, neginf: float | None):
    from gradviz._finfo import finfo

    info = finfo(a.dtype)  # the limits of a's own dtype (the arithmetic runs in float64)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    return lambda x: np.nan_to_num(x, nan=nan, posinf=hi, neginf=lo)


def nan_to_num(a: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN -> nan, +-inf -> posinf/neginf (the dtype's largest finite numbers by default);
    integer tensors come back copied, as they have neither."""
    if not a.dtype.is_floating_point:
        return _new(a._data.copy(), a.device)
    return _math_unary("nan_to_num", a, _nan_to_num_fn(a, nan, posinf, neginf))


def nan_to_num_(a: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    if not a.dtype.is_floating_point:
        return a
    return _math_unary_("nan_to_num", a, _nan_to_num_fn(a, nan, posinf, neginf))


def polygamma1(a: Tensor) -> Tensor:
    """polygamma(1, a), the trigamma function, for digamma's backward (not differentiable here)."""
    return _new(_compute(a, _trigamma), a.device)


# -- backward formulas -------------------------------------------------------------------------


def _sq(n) -> Tensor:
    s = n["self"]
    return _arith.mul(s, s)


def _logit_backward(n, g):
    # torch's infinitely_differentiable_logit_backward: 0 outside [eps, 1 - eps], NaN outside
    # [0, 1] without eps
    s, eps = n["self"], n["eps"]
    lo, hi, fill = (0.0, 1.0, math.nan) if eps is None else (eps, 1 - eps, 0.0)
    inside = _pointwise.logical_and(_pointwise.ge(s, lo), _pointwise.le(s, hi))
    return _arith.where(inside, _arith.div(g, _arith.mul(s, _arith.rsub(s, 1.0))), fill)


def _inplace_not_implemented(n, g):
    raise NotImplementedError(f"the derivative for 'inplace version of {n.derivative.name[:-9].lower()}' "
                              "is not implemented.")


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

ROWS: dict[str, D] = {
    "atan": D("AtanBackward0", (lambda n, g: _arith.div(g, _arith.add_scalar(_sq(n), 1.0)),), forward=EW),
    "asin": D("AsinBackward0", (lambda n, g: _arith.mul(g, _pointwise.rsqrt(_arith.rsub(_sq(n), 1.0))),), forward=EW),
    "acos": D("AcosBackward0", (
        lambda n, g: _arith.mul(g, _arith.neg(_pointwise.rsqrt(_arith.rsub(_sq(n), 1.0)))),), forward=EW),
    "sinh": D("SinhBackward0", (lambda n, g: _arith.mul(g, cosh(n["self"])),), forward=EW),
    "cosh": D("CoshBackward0", (lambda n, g: _arith.mul(g, sinh(n["self"])),), forward=EW),
    "asinh": D("AsinhBackward0", (lambda n, g: _arith.mul(g, _pointwise.rsqrt(_arith.add_scalar(_sq(n), 1.0))),),
        forward=EW),
    "acosh": D("AcoshBackward0", (lambda n, g: _arith.mul(g, _pointwise.rsqrt(_arith.sub_scalar(_sq(n), 1.0))),),
        forward=EW),
    "atanh": D("AtanhBackward0", (lambda n, g: _arith.div(g, _arith.rsub(_sq(n), 1.0)),), forward=EW),
    "erf": D("ErfBackward0", (
        lambda n, g: _arith.mul(_arith.mul_scalar(_pointwise.exp(_arith.neg(_sq(n))), _TWO_OVER_SQRT_PI), g),),
            forward=EW),
    "erfc": D("ErfcBackward0", (
        lambda n, g: _arith.mul(_arith.mul_scalar(_pointwise.exp(_arith.neg(_sq(n))), -_TWO_OVER_SQRT_PI), g),),
            forward=EW),
    "erfinv": D("ErfinvBackward0", (lambda n, g: _arith.mul(_arith.mul_scalar(
        _pointwise.exp(_arith.square(erfinv(n["self"]))), 0.5 * math.sqrt(math.pi)), g),), forward=EW),
    "lgamma": D("LgammaBackward0", (lambda n, g: _arith.mul(g, digamma(n["self"])),), forward=EW),
    "digamma": D("DigammaBackward0", (lambda n, g: _arith.mul(g, polygamma1(n["self"])),), forward=EW),
    "frac": D("FracBackward0", (lambda n, g: g,), forward=EW),
    "logit": D("LogitBackward0", (_logit_backward,), forward=EW),
    # the replaced numbers pass no gradient; torch's in-place form keeps the name (no Backward1)
    "nan_to_num": D("NanToNumBackward0", (lambda n, g: _arith.mul(g, _pointwise.isfinite(n["self"])),), forward=EW),
    **{k + "_": D(k.capitalize() + "Backward1", (_inplace_not_implemented,)) for k in _INPLACE_NOT_IMPLEMENTED},
}
register(ROWS)
