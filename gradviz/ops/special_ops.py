"""torch.special's functions (and torch.i0, sinc, polygamma, mvlgamma, igamma, igammac) with
torch 2.13's backward nodes, over the kernels in gradviz/ops/special_kernels.py.

Those without a derivative in torch (the Bessel J/Y/K functions, Airy Ai, the orthogonal
polynomials) give results that do not require grad, as torch's do.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import math_ops as _math_ops
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops import special_kernels as K
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, register, result_type
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_variants import inplace_of
from gradviz.tensor import Tensor

__all__ = [  # torch's top-level names among them (torch.i0, torch.sinc, ...)
    "i0", "i0_", "igamma", "igammac", "mvlgamma", "polygamma", "sinc", "sinc_",
]


def _as_tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else _construction.tensor(x)


def _unary(key: str | None, a: Tensor, fn: Any, **saved: Any) -> Tensor:
    """fn over a's values in float64, the result in a's floating dtype (the default float for
    integers); ``key``'s node when a requires grad (None: no derivative, as torch's)."""
    a = _as_tensor(a)
    out = _new(_math_ops._compute(a, fn), a.device)
    if key is not None and _grad_state.enabled and a._tracked:
        record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True), **saved})
    return out


def _binary(keys: tuple[str, str, str], a: Any, b: Any, fn: Any) -> Tensor:
    """fn(a, b) for tensors or numbers, in their promoted floating dtype; keys name the node for
    (tensor, tensor), (number, tensor), (tensor, number), as torch's Backward0/1/2."""
    dt = result_type(a, b)
    if not dt.is_floating_point:
        dt = _dtype._default[0]
    at, bt = isinstance(a, Tensor), isinstance(b, Tensor)
    x = a._data.astype(np.float64) if at else np.float64(a)
    y = b._data.astype(np.float64) if bt else np.float64(b)
    with np.errstate(all="ignore"):
        data = np.asarray(fn(x, y)).astype(dt.np)
    dev = a.device if at else b.device
    out = _new(data, dev)
    need = _grad_state.enabled and ((at and a._tracked) or (bt and b._tracked))
    if need:
        saved = {"self": save(a) if at else a, "other": save(b) if bt else b, "result": save(out, True)}
        if at and bt:
            record(NODES[keys[0]], (a, b), [out], saved)
        elif bt:
            record(NODES[keys[1]], (b,), [out], saved)
        else:
            record(NODES[keys[2]], (a,), [out], saved)
    return out


# -- with derivatives --------------------------------------------------------------------------------
def i0(a: Tensor) -> Tensor:
    return _unary("i0", a, lambda x: K.bessel_i(x, 0, False))


def i0e(a: Tensor) -> Tensor:
    return _unary("i0e", a, lambda x: K.bessel_i(x, 0, True))


def i1(a: Tensor) -> Tensor:
    return _unary("i1", a, lambda x: K.bessel_i(x, 1, False))


def i1e(a: Tensor) -> Tensor:
    return _unary("i1e", a, lambda x: K.bessel_i(x, 1, True))


def _sinc(x: Any) -> Any:
    px = np.pi * x
    return np.where(x == 0, 1.0, np.sin(px) / np.where(x == 0, 1.0, px))


def sinc(a: Tensor) -> Tensor:
    return _unary("sinc", a, _sinc)


def entr(a: Tensor) -> Tensor:
    def f(x: Any) -> Any:
        return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), np.where(x == 0, 0.0, -np.inf))
    out = _unary("entr", a, f)
    out._data[np.isnan(a._data)] = np.nan
    return out


def erfcx(a: Tensor) -> Tensor:
    return _unary("erfcx", a, K.erfcx)


def log_ndtr(a: Tensor) -> Tensor:
    return _unary("log_ndtr", a, K.log_ndtr)


def ndtri(a: Tensor) -> Tensor:
    return _unary("ndtri", a, lambda x: K.ndtri(x, _math_ops._erfinv))


def ndtr(a: Tensor) -> Tensor:
    """(1 + erf(x / sqrt 2)) / 2, as torch composes it (MulBackward1 over AddBackward1)."""
    a = _as_tensor(a)
    if not a.dtype.is_floating_point:
        a = _views.to_copy(a, _dtype._default[0])
    return _arith.mul_scalar(_arith.add_scalar(_math_ops.erf(_arith.mul_scalar(a, math.sqrt(0.5))), 1), 0.5)


def xlog1py(a: Any, b: Any) -> Tensor:
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    def f(x: Any, y: Any) -> Any:
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))
    return _binary(("xlog1py", "xlog1py_self_scalar", "xlog1py_other_scalar"), a, b, f)


def zeta(a: Any, b: Any) -> Tensor:
    """The Hurwitz zeta function sum_k (k + q)^-x."""
    return _binary(("zeta", "zeta_self_scalar", "zeta_other_scalar"), a, b, K.zeta)


def _check_gamma(name: str, a: Any, b: Any) -> None:
    for t in (a, b):
        if isinstance(t, Tensor) and not t.dtype.is_floating_point:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(t.dtype)}'")


def igamma(a: Tensor, other: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function P(a, x) (IgammaBackward0)."""
    _check_gamma("igamma", a, other)
    return _binary(("igamma", "igamma", "igamma"), a, other, lambda x, y: K.gammainc(x, y)[0])


def igammac(a: Tensor, other: Tensor) -> Tensor:
    """The regularised upper incomplete gamma function Q(a, x) (IgammacBackward0)."""
    _check_gamma("igammac", a, other)
    return _binary(("igammac", "igammac", "igammac"), a, other, lambda x, y: K.gammainc(x, y)[1])


def polygamma(n: int, a: Tensor) -> Tensor:
    """The n-th derivative of digamma (PolygammaBackward0)."""
    return _polygamma("polygamma", n, a)


def _polygamma(key: str, n: int, a: Tensor) -> Tensor:
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _unary(key, a, lambda x: K.polygamma(n, x, _math_ops._digamma, _math_ops._trigamma), n=n)


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return polygamma(n, self)


def _polygamma_inplace_op(self: Tensor, n: int) -> Tensor:
    return _polygamma("polygamma_", n, self)  # torch's polygamma_ records PolygammaBackward1


def mvlgamma(a: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension p (MvlgammaBackward0)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not a.dtype.is_floating_point:
        raise RuntimeError("mvlgamma is not implemented for " + _dtype.scalar_type_name(a.dtype))

    def f(x: Any) -> Any:
        total = np.full_like(x, p * (p - 1) / 4 * math.log(math.pi))
        for j in range(p):
            total += _math_ops._lgamma(x - j / 2)
        return total
    return _unary("mvlgamma", a, f, p=p)


def multigammaln(a: Tensor, p: int) -> Tensor:
    return mvlgamma(a, p)


def special_round(a: Tensor, *, decimals: int = 0) -> Tensor:
    """torch.special.round: round with decimals (RoundBackward1, a zero gradient)."""
    scale = 10.0 ** decimals
    fn = (lambda x: np.round(x * scale) / scale) if decimals else np.round
    a = _as_tensor(a)
    if not a.dtype.is_floating_point:
        return _new(a._data.copy(), a.device)
    out = _new(_math_ops._compute(a, fn), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["round_decimals"], (a,), [out], {})
    return out


# -- without derivatives -------------------------------------------------------------------------------
def _plain(fn: Any, name: str) -> Any:
    def op(a: Tensor) -> Tensor:
        return _unary(None, a, fn)

    op.__name__ = op.__qualname__ = name
    return op


bessel_j0 = _plain(lambda x: K.bessel_j(x, 0), "bessel_j0")
bessel_j1 = _plain(lambda x: K.bessel_j(x, 1), "bessel_j1")
bessel_y0 = _plain(lambda x: K.bessel_y(x, 0), "bessel_y0")
bessel_y1 = _plain(lambda x: K.bessel_y(x, 1), "bessel_y1")
modified_bessel_i0 = _plain(lambda x: K.bessel_i(x, 0, False), "modified_bessel_i0")
modified_bessel_i1 = _plain(lambda x: K.bessel_i(x, 1, False), "modified_bessel_i1")
modified_bessel_k0 = _plain(lambda x: K.bessel_k(x, 0, False), "modified_bessel_k0")
modified_bessel_k1 = _plain(lambda x: K.bessel_k(x, 1, False), "modified_bessel_k1")
scaled_modified_bessel_k0 = _plain(lambda x: K.bessel_k(x, 0, True), "scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _plain(lambda x: K.bessel_k(x, 1, True), "scaled_modified_bessel_k1")
airy_ai = _plain(K.airy_ai, "airy_ai")
spherical_bessel_j0 = _plain(lambda x: np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1.0, x)),
                             "spherical_bessel_j0")


# -- orthogonal polynomials (no derivative) ----------------------------------------------------------
def _recurrence(x: Any, n: Any, first: Any, second: Any, step: Any) -> Any:
    """p_n(x) from p_0 = first(x), p_1 = second(x) and p_{k+1} = step(k, x, p_k, p_{k-1}); 0 for n < 0."""
    out = np.where(n == 0, first(x), np.where(n == 1, second(x), 0.0))
    top = int(n.max(initial=0))
    p, q = first(x), second(x)
    for k in range(1, top):
        p, q = q, step(k, x, q, p)
        out = np.where(n == k + 1, q, out)
    return np.where(n < 0, 0.0, out)


def _polynomial(name: str, kernel: Any) -> Any:
    def op(input: Any, n: Any) -> Tensor:  # noqa: A002 - torch's argument name
        xt, nt = _as_tensor(input), _as_tensor(n)
        dt = result_type(input, n)
        if not dt.is_floating_point:
            dt = _dtype._default[0]
        x = xt._data.astype(np.float64)
        nn = np.trunc(nt._data.astype(np.float64))
        x, nn = np.broadcast_arrays(x, nn)
        with np.errstate(all="ignore"):
            data = kernel(x, nn)
        return _new(np.asarray(data).astype(dt.np), xt.device if isinstance(input, Tensor) else nt.device)

    op.__name__ = op.__qualname__ = name
    return op


def _cheb_t(x: Any, n: Any) -> Any:
    out = _recurrence(x, n, np.ones_like, lambda v: v, lambda k, v, q, p: 2 * v * q - p)
    trig = (n > 6) & (np.abs(x) < 1)
    out = np.where(trig, np.cos(n * np.arccos(np.clip(x, -1, 1))), out)
    edge = np.abs(x) == 1
    return np.where(edge & (n >= 0), np.where((x > 0) | (n % 2 == 0), 1.0, -1.0), out)


def _cheb_u(x: Any, n: Any) -> Any:
    out = _recurrence(x, n, np.ones_like, lambda v: 2 * v, lambda k, v, q, p: 2 * v * q - p)
    th = np.arccos(np.clip(x, -1, 1))
    trig = (n > 8) & (np.abs(x) < 1)
    s = np.sin(th)
    val = np.where(s != 0, np.sin((n + 1) * th) / np.where(s != 0, s, 1.0), (n + 1) * np.cos((n + 1) * th) / x)
    out = np.where(trig, val, out)
    edge = np.abs(x) == 1
    return np.where(edge & (n >= 0), np.where((x > 0) | (n % 2 == 0), n + 1, -(n + 1)), out)


def _cheb_v(x: Any, n: Any) -> Any:
    out = _recurrence(x, n, np.ones_like, lambda v: 2 * v - 1, lambda k, v, q, p: 2 * v * q - p)
    th = np.arccos(np.clip(x, -1, 1))
    trig = (n > 8) & (np.abs(x) < 1)
    c = np.cos(th / 2)
    val = np.where(np.sin(th / 2) != 1, np.cos((n + 0.5) * th) / np.where(c != 0, c, 1.0),
                   np.where(n % 2 == 0, 2 * n + 1, -(2 * n + 1)))
    out = np.where(trig, val, out)
    edge = np.abs(x) == 1
    return np.where(edge & (n >= 0), np.where(x > 0, 1.0, np.where(n % 2 == 0, 2 * n + 1, -(2 * n + 1))), out)


def _cheb_w(x: Any, n: Any) -> Any:
    out = _recurrence(x, n, np.ones_like, lambda v: 2 * v + 1, lambda k, v, q, p: 2 * v * q - p)
    th = np.arccos(np.clip(x, -1, 1))
    trig = (n > 8) & (np.abs(x) < 1)
    s = np.sin(th / 2)
    val = np.where(np.cos(th / 2) != 1, np.sin((n + 0.5) * th) / np.where(s != 0, s, 1.0),
                   np.where(x > 0, 2 * n + 1, np.where(n % 2 == 0, 1.0, -1.0)))
    out = np.where(trig, val, out)
    edge = np.abs(x) == 1
    return np.where(edge & (n >= 0), np.where(x > 0, 2 * n + 1, np.where(n % 2 == 0, 1.0, -1.0)), out)


def _shifted(kernel: Any) -> Any:
    return lambda x, n: kernel(2 * x - 1, n)


def _hermite_h(x: Any, n: Any) -> Any:
    return _recurrence(x, n, np.ones_like, lambda v: 2 * v, lambda k, v, q, p: 2 * v * q - 2 * k * p)


def _hermite_he(x: Any, n: Any) -> Any:
    return _recurrence(x, n, np.ones_like, lambda v: v, lambda k, v, q, p: v * q - k * p)


def _laguerre(x: Any, n: Any) -> Any:
    out = _recurrence(x, n, np.ones_like, lambda v: 1 - v, lambda k, v, q, p: ((2 * k + 1 - v) * q - k * p) / (k + 1))
    return np.where((x == 0) & (n >= 0), 1.0, out)


def _legendre(x: Any, n: Any) -> Any:
    out = _recurrence(x, n, np.ones_like, lambda v: v, lambda k, v, q, p: ((2 * k + 1) * v * q - k * p) / (k + 1))
    edge = np.abs(x) == 1
    return np.where(edge & (n >= 0), np.where((x > 0) | (n % 2 == 0), 1.0, -1.0), out)


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _cheb_t)
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _cheb_u)
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", _cheb_v)
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", _cheb_w)
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", _shifted(_cheb_t))
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", _shifted(_cheb_u))
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", _shifted(_cheb_v))
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", _shifted(_cheb_w))
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _hermite_h)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _hermite_he)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre)


# -- backward formulas ---------------------------------------------------------------------------------
def _not_implemented(what: str) -> Any:
    def f(n, g):
        raise RuntimeError(f"the derivative for '{what}' is not implemented.")
    return f


def _where_zero(x: Tensor, value: float, t: Tensor) -> Tensor:
    return _indexing.masked_fill(t, _pointwise.eq(x, 0), value)


def _safe(x: Tensor) -> Tensor:
    return _indexing.masked_fill(x, _pointwise.eq(x, 0), 1.0)


def _i1_grad(n, g):
    x, r = n["self"], n["result"]
    return _arith.mul(g, _where_zero(x, 0.5, _arith.sub(i0(x), _arith.div(r, _safe(x)))))


def _i1e_grad(n, g):
    x, r = n["self"], n["result"]
    inner = _arith.sub(i0e(x), _arith.mul(r, _arith.add(_pointwise.sgn(x), _arith.reciprocal(_safe(x)))))
    return _arith.mul(g, _where_zero(x, 0.5, inner))


def _sinc_grad(n, g):
    # torch's sinc_backward: g (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where pi x^2 is 0
    x = n["self"]
    px = _arith.mul_scalar(x, math.pi)
    sq = _arith.mul_scalar(_arith.mul(x, x), math.pi)
    out = _arith.div(_arith.mul(g, _arith.sub(_arith.mul(px, _pointwise.cos(px)), _pointwise.sin(px))), sq)
    return _arith.where(_pointwise.eq(sq, 0.0), _construction.zeros((), dtype=g.dtype), out)


def _mvlgamma_grad(n, g):
    x, p = n["self"], n["p"]
    args = _construction.arange(-p / 2 + 0.5, 0.5, 0.5, dtype=x.dtype)
    return _arith.mul(g, _reductions.sum(_math_ops.digamma(_arith.add(args, _views.unsqueeze(x, -1))), -1))


def _igamma_x(sign: float):
    def f(n, g):
        a, x = n["self"], n["other"]
        a = a if isinstance(a, Tensor) else _construction.tensor(a, dtype=g.dtype)
        d = _pointwise.exp(_arith.sub(_arith.sub(_arith.mul(_arith.sub(a, 1), _pointwise.log(x)), x),
                                      _math_ops.lgamma(a)))
        return _arith.mul(g, d) if sign > 0 else _arith.neg(_arith.mul(g, d))
    return f


def _xlog1py_self(n, g):
    x, y = n["self"], n["other"]
    out = xlog1py(g, y)
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        out = _indexing.masked_fill(out, _pointwise.logical_and(_pointwise.eq(x, 0), _pointwise.le(y, -1)), 0.0)
    return out


def _xlog1py_other(n, g):
    return _arith.div(_arith.mul(g, n["self"]), _arith.add(n["other"], 1))


def _zeta_other(n, g):
    s = n["self"]
    return _arith.mul(_arith.mul(g, _arith.neg(s) if isinstance(s, Tensor) else -s),
                      zeta(_arith.add(s, 1.0) if isinstance(s, Tensor) else s + 1.0, n["other"]))


ROWS: dict[str, D] = {
    "i0": D("I0Backward0", (lambda n, g: _arith.mul(g, i1(n["self"])),)),
    "i0e": D("SpecialI0EBackward0", (lambda n, g: _arith.mul(g, _arith.sub(
        i1e(n["self"]), _arith.mul(_pointwise.sgn(n["self"]), n["result"]))),)),
    "i1": D("SpecialI1Backward0", (_i1_grad,)),
    "i1e": D("SpecialI1EBackward0", (_i1e_grad,)),
    "sinc": D("SincBackward0", (_sinc_grad,)),
    "entr": D("SpecialEntrBackward0", (lambda n, g: _arith.mul(g, _arith.neg(_arith.add(
        _pointwise.log(n["self"]), 1))),)),
    "erfcx": D("SpecialErfcxBackward0", (lambda n, g: _arith.mul(_arith.sub(_arith.mul_scalar(
        _arith.mul(n["self"], n["result"]), 2.0), 2.0 / math.sqrt(math.pi)), g),)),
    "log_ndtr": D("SpecialLogNdtrBackward0", (lambda n, g: _arith.mul(_arith.div(g, math.sqrt(2 * math.pi)),
        _pointwise.exp(_arith.neg(_arith.add(n["result"], _arith.div(_arith.pow(n["self"], 2), 2))))),)),
    "ndtri": D("SpecialNdtriBackward0", (lambda n, g: _arith.mul(_arith.mul_scalar(g, math.sqrt(2 * math.pi)),
        _pointwise.exp(_arith.div(_arith.mul(n["result"], n["result"]), 2))),)),
    "polygamma": D("PolygammaBackward0", (lambda n, g: _arith.mul(g, polygamma(n["n"] + 1, n["self"])),)),
    "polygamma_": D("PolygammaBackward1", (lambda n, g: _arith.mul(g, polygamma(n["n"] + 1, n["self"])),)),
    "mvlgamma": D("MvlgammaBackward0", (_mvlgamma_grad,)),
    "round_decimals": D("RoundBackward1", (lambda n, g: _construction.zeros_like(g),)),
    "xlog1py": D("SpecialXlog1PyBackward0", (_xlog1py_self, _xlog1py_other), reduce_broadcast=True),
    "xlog1py_self_scalar": D("SpecialXlog1PyBackward1", (_xlog1py_other,)),
    "xlog1py_other_scalar": D("SpecialXlog1PyBackward2", (_xlog1py_self,)),
    "zeta": D("SpecialZetaBackward0", (_not_implemented("zeta"), _zeta_other), reduce_broadcast=True),
    "zeta_self_scalar": D("SpecialZetaBackward1", (_zeta_other,)),
    "zeta_other_scalar": D("SpecialZetaBackward2", (_not_implemented("zeta"),)),
    "igamma": D("IgammaBackward0", (_not_implemented("igamma: input"), _igamma_x(1.0)), reduce_broadcast=True),
    "igammac": D("IgammacBackward0", (_not_implemented("igammac: input"), _igamma_x(-1.0)), reduce_broadcast=True),
}
register(ROWS)

i0_ = inplace_of("i0_", i0)
sinc_ = inplace_of("sinc_", sinc)

# Tensor methods
METHODS: dict[str, Any] = {
    "i0": i0, "i0_": i0_, "sinc": sinc, "sinc_": sinc_, "igamma": igamma, "igammac": igammac,
    "igamma_": inplace_of("igamma_", igamma), "igammac_": inplace_of("igammac_", igammac),
    "mvlgamma": mvlgamma, "mvlgamma_": inplace_of("mvlgamma_", mvlgamma),
    "polygamma": _polygamma_method,
    "polygamma_": inplace_of("polygamma_", _polygamma_inplace_op),
}
