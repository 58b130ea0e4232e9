"""torch's gamma-family samplers on the CPU stream: ``_standard_gamma`` (Marsaglia and Tsang's
rejection method over the generator's double uniforms and Box-Muller normals, element by element
in memory order, as torch's serial CPU kernel draws them), ``_sample_dirichlet`` (gammas drawn in
double, normalised per row) and ``poisson``; and the implicit reparameterisation gradients
``_standard_gamma_grad`` and ``_dirichlet_grad`` (ATen's approximations) that make Gamma, Beta
and Dirichlet samples differentiable.

All three draw torch's numbers and leave the stream where torch leaves it (``poisson``: the product
of uniforms below a rate of 10, Hormann's transformed rejection from 10 on, as ATen's CPU kernel).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.ops.core import Derivative, node_class, record
from gradviz.ops.math_ops import _digamma as _digamma_array
from gradviz.random import _dists as D
from gradviz.random._generator import Generator, resolve
from gradviz.tensor import Tensor, make_tensor


def _digamma(v: float) -> float:
    return float(_digamma_array(np.array([float(v)]))[0])


__all__ = ["_dirichlet_grad", "_sample_dirichlet", "_standard_gamma", "_standard_gamma_grad", "poisson"]


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t._data if isinstance(t._data, np.ndarray) else t._data.get())


def _uniform(gen: Generator) -> float:
    return float(D.unit_uniform(gen, 1, np.float64)[0])


def _normal(gen: Generator) -> float:
    return float(D._normal_scalar(gen, 1, 0.0, 1.0)[0])


_THIRD = float(np.float32(1.0) / np.float32(3.0))
_C0331 = float(np.float32(0.0331))


def _gamma_one(gen: Generator, alpha: float, single: bool) -> float:
    """One draw of Gamma(alpha, 1). ``single``: alpha is a float32, whose boost and offset torch
    computes in float before the rest runs in double."""
    f = np.float32 if single else float
    alpha = f(alpha)
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1.0 - _uniform(gen)) ** float(f(1.0) / alpha)
        alpha = f(alpha + f(1.0))
    d = float(f(alpha - _THIRD))  # torch's constants are float literals (1.0f / 3.0f, 0.0331f)
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = _normal(gen)
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - _uniform(gen)
        xx = x * x
        if u < 1.0 - _C0331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _check_float(t: Tensor, name: str) -> None:
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"\"{name}\" not implemented for '{_dtype.scalar_type_name(t.dtype)}'")


def _standard_gamma_grad_np(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """-(d/dalpha cdf(x; alpha)) / pdf(x; alpha), elementwise, by ATen's three approximations:
    a Taylor series for small x, Rice's saddle point for large alpha, a rational fit otherwise."""
    out = np.empty(np.broadcast_shapes(alpha.shape, x.shape), dtype=np.float64)
    a_b, x_b = np.broadcast_to(alpha, out.shape), np.broadcast_to(x, out.shape)
    for i, (a, xv) in enumerate(zip(a_b.ravel().tolist(), x_b.ravel().tolist())):
        out.flat[i] = _gamma_grad_one(a, xv)
    return out


_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07),
)


def _gamma_grad_one(alpha: float, x: float) -> float:
    if x < 0.8:
        numer, denom = 1.0, alpha
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / i
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        with np.errstate(all="ignore"):
            pow_x_alpha = x**alpha
            pdf = x ** (alpha - 1) * math.exp(-x)
            cdf = pow_x_alpha * series1
            log_x = math.log(x) if x > 0 else -math.inf
            cdf_alpha = (log_x - _digamma(alpha)) * cdf - pow_x_alpha * series2
            result = -cdf_alpha / pdf if pdf != 0 else math.nan
        return 0.0 if math.isnan(result) else result
    if alpha > 8.0:
        if 0.9 * alpha <= x <= 1.1 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = (1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
                       + alpha * (107 + 3600 * x))
            return numer_1 * numer_2 / (1244160 * alpha * alpha * alpha * alpha)
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = (x - alpha - alpha * math.log(x / alpha)) ** -1.5
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = math.log(x / alpha) * term23 - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        return -stirling * x * term1 / denom
    u, v = math.log(x / alpha), math.log(alpha)
    c = [_COEF_UV[0][i] + u * (_COEF_UV[1][i] + u * _COEF_UV[2][i]) for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return math.exp(p / q)


def _standard_gamma_grad(self: Tensor, output: Tensor) -> Tensor:
    """torch._standard_gamma_grad: not differentiable (torch records no node for it either)."""
    res = _standard_gamma_grad_np(_host(self).astype(np.float64), _host(output).astype(np.float64))
    return make_tensor(res.astype(self.dtype.np), self.device, False)


def _gamma_backward(n: Any, g: Tensor) -> Tensor:
    from gradviz.ops import arith

    return arith.mul(g, _standard_gamma_grad(n["self"], n["result"]))


_StandardGammaBackward0 = node_class(Derivative("StandardGammaBackward0", (_gamma_backward,)))


def _standard_gamma(self: Tensor, generator: Generator | None = None) -> Tensor:
    """torch._standard_gamma: Gamma(self, 1) draws, at least the dtype's smallest normal number."""
    from gradviz.ops.core import needs_grad

    _check_float(self, "gamma_cpu")
    gen = resolve(generator)
    alpha = _host(self)
    single = alpha.dtype != np.float64
    tiny = float(np.finfo(alpha.dtype).tiny)
    out = np.empty(alpha.shape, dtype=alpha.dtype)
    flat_in, flat_out = alpha.ravel(), out.reshape(-1)  # C order: torch's kernel walks the output
    for i, a in enumerate(flat_in.tolist()):
        flat_out[i] = max(tiny, float(alpha.dtype.type(_gamma_one(gen, a, single))))
    result = make_tensor(out, self.device, False)
    if needs_grad((self,)):
        record(_StandardGammaBackward0, (self,), [result], {"self": self, "result": result})
    return result


def _sample_dirichlet(self: Tensor, generator: Generator | None = None) -> Tensor:
    """torch._sample_dirichlet: a Gamma(alpha, 1) draw per element in double, then each row
    (the last dim) divided by its sum. Not differentiable (Dirichlet.rsample differentiates it
    through _dirichlet_grad)."""
    _check_float(self, "dirichlet")
    gen = resolve(generator)
    alpha = _host(self).astype(np.float64)
    tiny = float(np.finfo(np.float64).tiny)
    gam = np.array([max(tiny, _gamma_one(gen, a, False)) for a in alpha.ravel().tolist()],
                   dtype=np.float64).reshape(alpha.shape)
    total = gam.sum(axis=-1, keepdims=True)
    res = gam / total
    return make_tensor(res.astype(self.dtype.np), self.device, False)


def _beta_grad_alpha_small(x: float, alpha: float, beta: float) -> float:
    factor = _digamma(alpha) - _digamma(alpha + beta) - math.log(x)
    numer = 1.0
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer *= (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1 / denom)
    result = x * (1 - x) ** -beta * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_beta_small(x: float, alpha: float, beta: float) -> float:
    factor = _digamma(alpha + beta) - _digamma(beta)
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, factor / alpha
    for i in range(1, 9):
        numer *= -x / i
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series += numer / (alpha + i) * (dbetas + factor * betas)
    result = -((1 - x) ** (1 - beta)) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_alpha_mid(x: float, alpha: float, beta: float) -> float:
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:
        poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1_den = math.sqrt(2 * alpha / beta) * total**1.5 * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * math.log(alpha / (total * x))
    term3 = math.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4_base = beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))
    term4 = term4_base**-1.5
    term1234 = term1 + term2 * (term3 + (term4 if x < mean else -term4))
    return stirling * prefactor * term1234


_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _dirichlet_grad_one(x: float, alpha: float, total: float) -> float:
    beta = total - alpha
    boundary = total * x * (1 - x)
    if x <= 0.5 and boundary < 2.5:
        return _beta_grad_alpha_small(x, alpha, beta)
    if x >= 0.5 and boundary < 0.75:
        return -_beta_grad_beta_small(1 - x, beta, alpha)
    if alpha > 6 and beta > 6:
        return _beta_grad_alpha_mid(x, alpha, beta)
    u = math.log(x)
    a = math.log(alpha) - u
    b = math.log(total) - a
    pow_u = [1.0, u, u * u]
    pow_a = [1.0, a, a * a]
    p = q = 0.0
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            p += ua * (_DIRICHLET_C[0][i][j][0] + b * (_DIRICHLET_C[0][i][j][1]
                       + b * (_DIRICHLET_C[0][i][j][2] + b * _DIRICHLET_C[0][i][j][3])))
            q += ua * (_DIRICHLET_C[1][i][j][0] + b * (_DIRICHLET_C[1][i][j][1]
                       + b * (_DIRICHLET_C[1][i][j][2] + b * _DIRICHLET_C[1][i][j][3])))
    approx = x * (_digamma(total) - _digamma(alpha)) / beta
    return p / q * approx


def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """torch._dirichlet_grad: the Beta(alpha, total - alpha) reparameterisation gradient at x,
    scaled by 1 / (1 - x), elementwise (not differentiable)."""
    xs, al, to = (_host(t).astype(np.float64) for t in (x, alpha, total))
    shape = np.broadcast_shapes(xs.shape, al.shape, to.shape)
    xs, al, to = (np.broadcast_to(a, shape).ravel().tolist() for a in (xs, al, to))
    res = np.array([_dirichlet_grad_one(a, b, c) for a, b, c in zip(xs, al, to)], dtype=np.float64).reshape(shape)
    return make_tensor(res.astype(x.dtype.np), x.device, False)


def _poisson_one(gen: Generator, lam: float) -> float:
    if lam == 0:
        return 0.0
    if lam < 10:
        enlam = math.exp(-lam)
        k, prod = 0, 1.0
        while True:
            prod *= _uniform(gen)
            if prod > enlam:
                k += 1
            else:
                return float(k)
    # Hormann's transformed rejection (PTRS), with ATen's constants
    slam, loglam = math.sqrt(lam), math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = _uniform(gen) - 0.5
        v = _uniform(gen)
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return float(k)
        if k < 0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= (
                -lam + k * loglam - math.lgamma(k + 1)):
            return float(k)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """torch.poisson: one Poisson(rate) draw per element."""
    _check_float(input, "poisson_cpu")
    gen = resolve(generator)
    rates = _host(input)
    if bool((rates < 0).any()) or bool(np.isnan(rates).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = np.array([_poisson_one(gen, r) for r in rates.ravel().tolist()], dtype=rates.dtype).reshape(rates.shape)
    return make_tensor(out, input.device, False)
