"""The special functions torch.special computes, on float64 numpy arrays, from their series,
integrals and asymptotic expansions (numpy only: no scipy). Each kernel is accurate to a few
units in the last place where the function is not near a zero; gradviz/ops/special_ops.py makes
them ops with torch's nodes.

- modified Bessel I0, I1 (and e^-|x|-scaled): the power series (positive terms) below 30, the
  Hankel asymptotic expansion above;
- modified Bessel K0, K1 (and e^x-scaled), Airy Ai for x > 0: K_nu(x) = int_0^inf e^(-x cosh t)
  cosh(nu t) dt by the trapezoid rule, which converges geometrically for this integrand;
- Bessel J_n: (1/2pi) int_0^2pi cos(n t - x sin t) dt by the trapezoid rule (periodic: geometric
  convergence) up to 25, the Hankel expansion above; Y0, Y1 from Neumann's series in J_2k;
- the regularised incomplete gamma functions: series below a + 1, Lentz's continued fraction above;
- Hurwitz zeta by Euler-Maclaurin summation; polygamma from it;
- erfcx by its continued fraction for large x; ndtri by Newton steps on erfc.
"""

from __future__ import annotations

import math

import numpy as np

_EULER = 0.57721566490153286061
_SQRT_PI = math.sqrt(math.pi)


# -- modified Bessel functions of the first kind ----------------------------------------------------
def _hankel_coeffs(nu: float, n: int) -> list[float]:
    """a_k(nu) of the Hankel expansions: prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! 8^k)."""
    mu = 4 * nu * nu
    out, a = [1.0], 1.0
    for k in range(1, n):
        a *= (mu - (2 * k - 1) ** 2) / (k * 8)
        out.append(a)
    return out


def _i_series(x: np.ndarray, nu: int) -> np.ndarray:
    """I_nu(x) for |x| <= 30 by the power series sum (x/2)^(2k+nu) / (k! (k+nu)!)."""
    h = x / 2
    term = h ** nu / math.factorial(nu)
    total = term.copy()
    q = h * h
    for k in range(1, 120):
        term = term * q / (k * (k + nu))
        total += term
    return total


def _i_asymptotic_scaled(ax: np.ndarray, nu: int) -> np.ndarray:
    """e^-x I_nu(x) for x > 30: e^x / sqrt(2 pi x) sum (-1)^k a_k / x^k, cut at its smallest term."""
    a = _hankel_coeffs(nu, 60)
    total = np.zeros_like(ax)
    last = np.full_like(ax, np.inf)
    done = np.zeros(ax.shape, bool)
    for k, c in enumerate(a):
        term = (-1) ** k * c / ax ** k
        grow = np.abs(term) > last
        done |= grow
        total = np.where(done, total, total + term)
        last = np.abs(term)
    return total / np.sqrt(2 * np.pi * ax)


def bessel_i(x: np.ndarray, nu: int, scaled: bool) -> np.ndarray:
    """I_nu(x) for nu in (0, 1), or e^-|x| I_nu(x) when scaled."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = np.empty_like(x)
    small = ax <= 30
    with np.errstate(all="ignore"):
        s = _i_series(x[small], nu)
        out[small] = s * np.exp(-ax[small]) if scaled else s
        big = ~small & ~np.isnan(x)
        v = _i_asymptotic_scaled(ax[big], nu)
        if not scaled:
            v = v * np.exp(ax[big])
        out[big] = v * (np.sign(x[big]) if nu % 2 else 1)
    out[np.isnan(x)] = np.nan
    return out


# -- modified Bessel functions of the second kind ---------------------------------------------------
def bessel_k(x: np.ndarray, nu: float, scaled: bool) -> np.ndarray:
    """K_nu(x) for x > 0 (or e^x K_nu(x) when scaled): the trapezoid rule on
    int_0^inf e^(-x (cosh t - 1)) cosh(nu t) dt, step 1/16, cut where the integrand underflows."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    pos = (x > 0) & np.isfinite(x)
    xp = x[pos]
    if xp.size:
        # t = u / sqrt(x) (for x > 1): the integrand's width shrinks like 1/sqrt(x), the step with it
        scale = np.sqrt(np.maximum(xp, 1.0))
        h = 1.0 / 16
        umax = float((scale * np.arccosh(1 + 700 / xp)).max()) + 1
        u = np.arange(0, umax + h, h)
        t = u[None, :] / scale[:, None]
        with np.errstate(all="ignore"):
            f = np.exp(-xp[:, None] * (np.cosh(t) - 1)) * np.cosh(nu * t)
        total = h / scale * (f.sum(1) - 0.5 * f[:, 0])
        out[pos] = total if scaled else total * np.exp(-xp)
    out[x == 0] = np.inf
    out[np.isposinf(x)] = 0.0
    return out


# -- Bessel functions of the first and second kinds -------------------------------------------------
def _j_quadrature(x: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """J_n(x) for every n in orders (last axis): the mean of cos(n t - x sin t) over M equally
    spaced t in [0, 2 pi), exact but for terms J_{M -+ n}(x), negligible for M > x + n + 40."""
    m = int(2 * (np.abs(x).max(initial=0) + orders.max(initial=0) + 40))
    t = 2 * np.pi * np.arange(m) / m
    phase = orders[None, :, None] * t[None, None, :] - x[:, None, None] * np.sin(t)[None, None, :]
    return np.cos(phase).mean(-1)


def _hankel(x: np.ndarray, nu: int) -> tuple[np.ndarray, np.ndarray]:
    """(J_nu, Y_nu) for x > 25 from the Hankel expansions of P and Q."""
    a = _hankel_coeffs(nu, 40)
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    for k in range(0, 40, 2):
        p += (-1) ** (k // 2) * a[k] / x ** k
        q += (-1) ** (k // 2) * a[k + 1] / x ** (k + 1)
    chi = x - (nu / 2 + 0.25) * np.pi
    amp = np.sqrt(2 / (np.pi * x))
    return amp * (p * np.cos(chi) - q * np.sin(chi)), amp * (p * np.sin(chi) + q * np.cos(chi))


def bessel_j(x: np.ndarray, nu: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = np.full(x.shape, np.nan)
    tiny = ax <= 2
    if tiny.any():  # the power series: no cancellation this close to 0
        h = ax[tiny] / 2
        term = h ** nu / math.factorial(nu)
        total = term.copy()
        for k in range(1, 30):
            term = -term * h * h / (k * (k + nu))
            total += term
        out[tiny] = total
    small = (ax > 2) & (ax <= 25)
    if small.any():
        out[small] = _j_quadrature(ax[small], np.array([nu]))[:, 0]
    big = (ax > 25) & np.isfinite(x)
    if big.any():
        out[big] = _hankel(ax[big], nu)[0]
    out[np.isinf(x)] = 0.0
    return out * np.sign(x) if nu % 2 else out


def bessel_y(x: np.ndarray, nu: int) -> np.ndarray:
    """Y0, Y1 for x > 0 (NaN below, -inf at 0): Neumann's series
    Y0 = (2/pi)(ln(x/2) + gamma) J0 - (4/pi) sum_k (-1)^k J_2k / k, and Y1 = -Y0'."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    small = (x > 0) & (x <= 25)
    xs = x[small]
    if xs.size:
        kmax = int(xs.max() / 2 + 40)
        orders = np.arange(0, 2 * kmax + 2)
        j = _j_quadrature(xs, orders)
        k = np.arange(1, kmax + 1)
        sign = (-1.0) ** k
        lg = np.log(xs / 2) + _EULER
        if nu == 0:
            out[small] = 2 / np.pi * lg * j[:, 0] - 4 / np.pi * (sign * j[:, 2 * k] / k).sum(1)
        else:
            d = (sign * (j[:, 2 * k - 1] - j[:, 2 * k + 1]) / (2 * k)).sum(1)
            out[small] = -(2 / (np.pi * xs) * j[:, 0] - 2 / np.pi * lg * j[:, 1] - 4 / np.pi * d)
    big = (x > 25) & np.isfinite(x)
    if big.any():
        out[big] = _hankel(x[big], nu)[1]
    out[x == 0] = -np.inf
    out[np.isposinf(x)] = 0.0
    return out


def airy_ai(x: np.ndarray) -> np.ndarray:
    """Ai(x): (1/pi) sqrt(x/3) K_{1/3}(2/3 x^{3/2}) above 2; the Maclaurin series (in extended
    precision) from -10 to 2; the asymptotic expansion below -10."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    big = x > 2
    if big.any():
        xb = x[big]
        out[big] = np.sqrt(xb / 3) / np.pi * bessel_k(2 / 3 * xb ** 1.5, 1 / 3, False)
    mid = (x >= -10) & (x <= 2)
    if mid.any():
        xm = x[mid].astype(np.longdouble)
        c1 = np.longdouble("0.355028053887817239260063186004183176")
        c2 = np.longdouble("0.258819403792806798405183560189203963")
        f = np.ones_like(xm)
        g = xm.copy()
        tf, tg = f.copy(), g.copy()
        x3 = xm ** 3
        for k in range(1, 60):
            tf = tf * x3 / ((3 * k - 1) * (3 * k))
            tg = tg * x3 / ((3 * k) * (3 * k + 1))
            f += tf
            g += tg
        out[mid] = (c1 * f - c2 * g).astype(np.float64)
    neg = x < -10
    if neg.any():
        z = -x[neg]
        zeta = 2 / 3 * z ** 1.5
        # u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k) u_{k-1}
        u = [1.0]
        for k in range(1, 30):
            u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
        p = sum((-1) ** k * u[2 * k] / zeta ** (2 * k) for k in range(15))
        q = sum((-1) ** k * u[2 * k + 1] / zeta ** (2 * k + 1) for k in range(14))
        ph = zeta + np.pi / 4
        out[neg] = (np.sin(ph) * p - np.cos(ph) * q) / (_SQRT_PI * z ** 0.25)
    out[np.isposinf(x)] = 0.0
    return out


# -- gamma family ------------------------------------------------------------------------------------
def _lgamma(x: np.ndarray) -> np.ndarray:
    return np.vectorize(lambda v: math.lgamma(v) if v > 0 or v != math.floor(v) else math.inf,
                        otypes=[np.float64])(x)


def gammainc(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P(a, x), Q(a, x)), the regularised lower and upper incomplete gamma functions."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    p = np.full(a.shape, np.nan)
    q = np.full(a.shape, np.nan)
    valid = (a >= 0) & (x >= 0) & ~np.isnan(a) & ~np.isnan(x)
    with np.errstate(all="ignore"):
        # edges as torch: a == 0 -> P = 1 (x > 0) or NaN; x == 0 -> P = 0; x = inf -> P = 1
        az, xz = valid & (a == 0), valid & (x == 0)
        p[az & (x > 0)], q[az & (x > 0)] = 1.0, 0.0
        p[xz & (a > 0)], q[xz & (a > 0)] = 0.0, 1.0
        xi = valid & np.isinf(x) & (a > 0)
        p[xi], q[xi] = 1.0, 0.0
        ai = valid & np.isinf(a) & np.isfinite(x)
        p[ai], q[ai] = 0.0, 1.0
        work = valid & (a > 0) & (x > 0) & np.isfinite(x) & np.isfinite(a)
        aa, xx = a[work], x[work]
        logpre = aa * np.log(xx) - xx - _lgamma(aa)
        series = xx < aa + 1
        # series: P = e^-x x^a / Gamma(a+1) sum x^n / ((a+1)...(a+n))
        as_, xs_ = aa[series], xx[series]
        term = np.ones_like(as_) / as_
        total = term.copy()
        ap = as_.copy()
        for _ in range(2000):
            ap += 1
            term = term * xs_ / ap
            total += term
            if (np.abs(term) <= np.abs(total) * 1e-17).all():
                break
        ps = np.exp(logpre[series]) * total
        # continued fraction for Q (modified Lentz)
        ac, xc = aa[~series], xx[~series]
        tiny = 1e-300
        b = xc + 1 - ac
        c = np.full_like(xc, 1 / tiny)
        d = 1 / b
        h = d.copy()
        for i in range(1, 2000):
            an = -i * (i - ac)
            b = b + 2
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1 / d
            delta = d * c
            h = h * delta
            if (np.abs(delta - 1) <= 1e-17).all():
                break
        qc = np.exp(logpre[~series]) * h
        pw, qw = np.empty_like(aa), np.empty_like(aa)
        pw[series], qw[series] = ps, 1 - ps
        pw[~series], qw[~series] = 1 - qc, qc
        p[work], q[work] = pw, qw
    return p, q


_BERNOULLI_2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
                 -174611 / 330, 854513 / 138, -236364091 / 2730]


def zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta sum_k (k + q)^-s for s > 1, by Euler-Maclaurin with 9 terms summed directly;
    inf at s == 1 and at the poles q = 0, -1, ...; NaN where torch's gives NaN."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    out = np.full(s.shape, np.nan)
    with np.errstate(all="ignore"):
        out[s == 1] = np.inf
        ok = (s > 1) & ~np.isnan(q)
        pole = ok & (q <= 0) & (q == np.floor(q))
        out[pole] = np.inf
        # q < 0 non-integer: NaN unless s is an integer (torch's cephes zeta)
        neg_ok = ok & (q < 0) & ~pole & (s == np.floor(s))
        work = ok & ((q > 0) | neg_ok)
        sw, qw = s[work], q[work]
        n = 9
        total = np.zeros_like(sw)
        for k in range(n):
            total += (qw + k) ** -sw
        a = qw + n
        total += a ** (1 - sw) / (sw - 1) + 0.5 * a ** -sw
        fact = 1.0
        rising = sw.copy()  # s (s+1) ... (s + 2j - 2)
        apow = a ** (-sw - 1)
        for j, b2j in enumerate(_BERNOULLI_2K, start=1):
            fact *= (2 * j - 1) * (2 * j) if j > 1 else 2
            total += b2j / fact * rising * apow
            rising = rising * (sw + 2 * j - 1) * (sw + 2 * j)
            apow = apow / (a * a)
        out[work] = total
    return out


def polygamma(n: int, x: np.ndarray, digamma, trigamma) -> np.ndarray:
    """psi^(n)(x): digamma and trigamma as torch computes them, then (-1)^(n+1) n! zeta(n+1, x)."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    return (-1.0) ** (n + 1) * math.gamma(n + 1) * zeta(np.full_like(x, n + 1.0), x)


# -- error function family ---------------------------------------------------------------------------
_ERFC = np.vectorize(math.erfc, otypes=[np.float64])


def erfcx(x: np.ndarray) -> np.ndarray:
    """e^(x^2) erfc(x): directly below 8, by its continued fraction above, through
    erfcx(-x) = 2 e^(x^2) - erfcx(x) for negative x."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        small = ax < 8
        out[small] = np.exp(ax[small] ** 2) * _ERFC(ax[small])
        big = ~small
        z = ax[big]
        # erfc(z) e^(z^2) = (1/sqrt(pi)) 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))
        f = z.copy()
        for k in range(60, 0, -1):
            f = z + (k / 2) / f
        out[big] = 1 / (_SQRT_PI * f)
        neg = x < 0
        out[neg] = 2 * np.exp(x[neg] ** 2) - out[neg]
    out[np.isnan(x)] = np.nan
    out[np.isposinf(x)] = 0.0
    return out


def log_ndtr(x: np.ndarray) -> np.ndarray:
    """log Phi(x): log1p(-Phi(-x)) above 0, log(erfcx(-x/sqrt2)/2) - x^2/2 below."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        pos = x > 0
        out[pos] = np.log1p(-0.5 * _ERFC(x[pos] / math.sqrt(2)))
        neg = ~pos
        t = -x[neg] / math.sqrt(2)
        out[neg] = np.log(erfcx(t) / 2) - t * t
    out[np.isnan(x)] = np.nan
    return out


def ndtri(p: np.ndarray, erfinv) -> np.ndarray:
    """The standard normal quantile: sqrt2 erfinv(2p - 1) to start (an asymptotic guess in the
    far lower tail), then Newton steps on log Phi(x) = log p below the median and on
    Q(x) = 1 - p above it."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(all="ignore"):
        x = math.sqrt(2) * erfinv(2 * p - 1)
        far = (p > 0) & (p < 1e-10)
        t = -2 * np.log(p[far])
        x[far] = -np.sqrt(t - np.log(t) - math.log(2 * math.pi))
        low = (p > 0) & (p < 0.5)
        logp = np.log(p[low])
        for _ in range(6):
            xo = x[low]
            ln = log_ndtr(xo)
            # d/dx log Phi = pdf / Phi = exp(log pdf - log Phi)
            slope = np.exp(-xo * xo / 2 - 0.5 * math.log(2 * math.pi) - ln)
            x[low] = xo - (ln - logp) / slope
        high = (p >= 0.5) & (p < 1)
        q = 1 - p[high]
        for _ in range(3):
            xo = x[high]
            step = (0.5 * _ERFC(xo / math.sqrt(2)) - q) / (np.exp(-xo * xo / 2) / math.sqrt(2 * math.pi))
            x[high] = xo + np.where(np.isfinite(step), step, 0)
    x[p == 0] = -np.inf
    x[p == 1] = np.inf
    x[(p < 0) | (p > 1)] = np.nan
    return x
