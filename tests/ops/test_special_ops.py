"""torch.special (issue 34's coverage): values, nodes and gradients against torch; the functions
torch computes less accurately than double precision allows (Bessel J/Y, Airy Ai, the incomplete
gamma functions) against mpmath (installed with torch) to rounding, and against torch to torch's
own accuracy."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from _fns_diff import check

import gradviz

X = [-3.0, -1.25, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, 35.0]
P = [1e-300, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.7, 0.99]
POS = [0.1, 0.5, 1.0, 2.5, 7.0, 12.0]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "i0": lambda T: T.i0(_x(T)),
    "special.i0": lambda T: T.special.i0(_x(T)),
    "Tensor.i0": lambda T: _x(T).i0(),
    "i0_": lambda T: T.i0_(_x(T) * 1),
    "i0e": lambda T: T.special.i0e(_x(T)),
    "i1": lambda T: T.special.i1(_x(T)),
    "i1e": lambda T: T.special.i1e(_x(T)),
    "sinc": lambda T: T.sinc(_x(T)),
    "special.sinc": lambda T: T.special.sinc(_x(T)),
    "Tensor.sinc_": lambda T: (_x(T) * 1).sinc_(),
    "entr": lambda T: T.special.entr(_x(T, [0.0, 0.25, 1.0, 3.0])),
    "entr negative": lambda T: T.special.entr(T.tensor([-1.0, 0.0, math.nan])),
    "erfcx": lambda T: T.special.erfcx(_x(T, [-3.0, -0.5, 0.0, 0.3, 2.5, 7.0, 35.0, 1e10])),
    "log_ndtr": lambda T: T.special.log_ndtr(_x(T, [-40.0, -3.0, -0.5, 0.0, 0.3, 2.5, 7.0])),
    "ndtr": lambda T: T.special.ndtr(_x(T)),
    "ndtri": lambda T: T.special.ndtri(_x(T, P)),
    "ndtri edges": lambda T: T.special.ndtri(T.tensor([0.0, 1.0, -0.5, 1.5, 0.5])),
    "xlog1py": lambda T: T.special.xlog1py(_x(T, [0.0, 1.0, 2.5]), _x(T, [0.5, -0.5, 3.0])),
    "xlog1py broadcast": lambda T: T.special.xlog1py(_x(T, [[0.0], [2.0]]), _x(T, [0.5, -0.5, 3.0])),
    "xlog1py other number": lambda T: T.special.xlog1py(_x(T, [0.0, 1.0, 2.5]), 2.0),
    "xlog1py self number": lambda T: T.special.xlog1py(2, _x(T, [0.5, -0.5, 3.0])),
    "zeta q": lambda T: T.special.zeta(T.tensor([1.5, 2.0, 3.0, 4.5], dtype=T.float64), _x(T, [0.5, 1.0, 2.0, 0.1])),
    "zeta self number": lambda T: T.special.zeta(2.0, _x(T, [0.5, 1.0, 2.0])),
    "zeta edges": lambda T: T.special.zeta(T.tensor([1.0, 0.5, 2.0, 3.0, 2.5], dtype=T.float64),
                                               T.tensor([1.0, 1.0, 0.0, -1.5, -1.5], dtype=T.float64)),
    "polygamma 0": lambda T: T.polygamma(0, _x(T, POS)),
    "polygamma 1": lambda T: T.special.polygamma(1, _x(T, POS)),
    "polygamma 3": lambda T: T.polygamma(3, _x(T, POS)),
    "Tensor.polygamma 2": lambda T: _x(T, POS).polygamma(2),
    "Tensor.polygamma_": lambda T: (_x(T, POS) * 1).polygamma_(2),
    "mvlgamma": lambda T: T.mvlgamma(_x(T, [2.0, 3.5, 10.0]), 3),
    "multigammaln": lambda T: T.special.multigammaln(_x(T, [2.0, 3.5, 10.0]), 2),
    "Tensor.mvlgamma_": lambda T: (_x(T, [2.0, 3.5, 10.0]) * 1).mvlgamma_(1),
    "gammainc x": lambda T: T.special.gammainc(T.tensor([0.5, 1.0, 2.0, 5.0], dtype=T.float64),
                                               _x(T, [0.3, 2.0, 1.0, 7.0])),
    "gammaincc x": lambda T: T.special.gammaincc(T.tensor([0.5, 1.0, 2.0, 5.0], dtype=T.float64),
                                                 _x(T, [0.3, 2.0, 1.0, 7.0])),
    "igamma": lambda T: T.igamma(T.tensor([0.5, 3.0], dtype=T.float64), _x(T, [1.5, 0.25])),
    "Tensor.igammac_": lambda T: T.tensor([0.5, 3.0], dtype=T.float64).igammac_(_x(T, [1.5, 0.25])),
    "gammainc edges": lambda T: T.special.gammainc(T.tensor([0.0, 1.0, 2.0, -1.0, 1.0]),
                                                   T.tensor([1.0, 0.0, math.inf, 1.0, -1.0])),
    "special.round": lambda T: T.special.round(_x(T, [0.5, 1.5, -2.5, 0.26])),
    "special.round decimals": lambda T: T.special.round(_x(T, [0.5, 1.25, -2.5, 0.26]), decimals=1),
    "modified_bessel": lambda T: [T.special.modified_bessel_i0(_x(T)), T.special.modified_bessel_i1(_x(T))],
    "modified_bessel_k": lambda T: [T.special.modified_bessel_k0(_x(T, POS + [0.0, -1.0, 700.0])),
                                    T.special.modified_bessel_k1(_x(T, POS + [0.0, 700.0])),
                                    T.special.scaled_modified_bessel_k0(_x(T, POS + [700.0])),
                                    T.special.scaled_modified_bessel_k1(_x(T, POS + [1e-3]))],
    "spherical_bessel_j0": lambda T: T.special.spherical_bessel_j0(_x(T)),
    **{f"{name}": (lambda nm: lambda T: getattr(T.special, nm)(_x(T, [-1.0, -0.6, 0.0, 0.3, 0.95, 1.0, 1.7]),
                                                              T.tensor([0, 1, 2, 3, 7, 9, 12, -1, 25])[:, None]))(name)
       for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "legendre_polynomial_p")},
    "hermite and laguerre": lambda T: [T.special.hermite_polynomial_h(_x(T, [-1.5, 0.0, 0.3, 2.0]), 5),
                                       T.special.hermite_polynomial_he(_x(T, [-1.5, 0.0, 0.3, 2.0]), 6.0),
                                       T.special.laguerre_polynomial_l(_x(T, [-1.5, 0.0, 0.3, 2.0]), 4),
                                       T.special.chebyshev_polynomial_t(T.tensor([0.5]), T.tensor([3])),
                                       T.special.legendre_polynomial_p(T.tensor([1, 2]), 3)],
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name], rtol=1e-11, atol=1e-13)


# float32 and integer inputs: float32 results, computed in float64 and rounded once (torch's
# float32 kernels may be an ulp off)
FLOAT32 = {
    "i0 int": lambda T: T.special.i0(T.tensor([1, 2, 3])),
    "i1e float32": lambda T: T.special.i1e(T.tensor(X)),
    "zeta float32": lambda T: T.special.zeta(T.tensor([2.0, 3.0]), T.tensor([1.0, -1.5])),
    "ndtr float32 grad": lambda T: T.special.ndtr(T.tensor(X, requires_grad=True)),
}


@pytest.mark.parametrize("name", list(FLOAT32))
def test_float32_matches_torch(name):
    check(FLOAT32[name], rtol=3e-7, atol=1e-7)


_REFUSED = {
    "the derivative for 'zeta' is not implemented.": lambda T, x: T.special.zeta(x, 2.0),
    "the derivative for 'igamma: input' is not implemented.": lambda T, x: T.special.gammainc(x, x.detach()),
    "the derivative for 'igammac: input' is not implemented.": lambda T, x: T.igammac(x, x.detach()),
}


@pytest.mark.parametrize("msg", list(_REFUSED))
def test_backward_refusals_match_torch(msg):
    for T in (torch, gradviz):
        x = T.tensor([2.0, 3.0], dtype=T.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match=msg):
            _REFUSED[msg](T, x).sum().backward()


# torch's own Bessel J/Y, Airy Ai and incomplete gamma lose digits (its j1(7.0) is 5.6e-6 off):
# gradviz's agree with mpmath to rounding, and with torch to torch's accuracy.
_ACCURATE = {
    "bessel_j0": (lambda v: mpmath.besselj(0, v), [-40.0, -12.0, -3.0, -1e-5, 0.0, 0.3, 2.5, 7.0, 24.0, 26.0, 150.0]),
    "bessel_j1": (lambda v: mpmath.besselj(1, v), [-40.0, -12.0, -3.0, -1e-5, 0.0, 0.3, 2.5, 7.0, 24.0, 26.0, 150.0]),
    "bessel_y0": (lambda v: mpmath.bessely(0, v), [1e-5, 0.3, 2.5, 7.0, 9.5, 24.0, 26.0, 150.0]),
    "bessel_y1": (lambda v: mpmath.bessely(1, v), [1e-5, 0.3, 2.5, 7.0, 9.5, 24.0, 26.0, 150.0]),
    "airy_ai": (mpmath.airyai, [-40.0, -12.0, -9.5, -3.0, -0.3, 0.0, 1.0, 2.5, 12.0, 60.0]),
    "modified_bessel_k0": (lambda v: mpmath.besselk(0, v), [1e-3, 0.3, 2.5, 60.0, 700.0]),
    "i1e": (lambda v: mpmath.besseli(1, v) * mpmath.exp(-abs(v)), [-60.0, -3.0, 1e-8, 0.3, 29.0, 31.0, 500.0]),
    "erfcx": (lambda v: mpmath.exp(v * v) * mpmath.erfc(v), [-3.0, 0.0, 0.3, 2.5, 7.9, 8.1, 35.0]),
    "ndtri": (lambda v: mpmath.sqrt(2) * mpmath.erfinv(2 * v - 1), [1e-20, 1e-5, 0.01, 0.3, 0.5, 0.7]),
}


@pytest.mark.parametrize("name", list(_ACCURATE))
def test_accurate_to_rounding(name):
    mpmath.mp.dps = 40
    ref_fn, xs = _ACCURATE[name]
    got = getattr(gradviz.special, name)(gradviz.tensor(xs, dtype=gradviz.float64)).numpy()
    want = np.array([float(ref_fn(mpmath.mpf(v))) for v in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    theirs = getattr(torch.special, name)(torch.tensor(xs, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, theirs, rtol=1e-5, atol=1e-12)


def test_incomplete_gamma_accurate_to_rounding():
    mpmath.mp.dps = 40
    a = [0.5, 1.0, 2.0, 5.0, 30.0, 100.0, 0.1]
    x = [0.3, 2.0, 1.0, 7.0, 25.0, 120.0, 5.0]
    got = gradviz.special.gammainc(gradviz.tensor(a, dtype=gradviz.float64), gradviz.tensor(x, dtype=gradviz.float64))
    want = [float(mpmath.gammainc(u, 0, v, regularized=True)) for u, v in zip(a, x, strict=True)]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    theirs = torch.special.gammainc(torch.tensor(a, dtype=torch.float64), torch.tensor(x, dtype=torch.float64))
    np.testing.assert_allclose(got.numpy(), theirs.numpy(), rtol=1e-8)
