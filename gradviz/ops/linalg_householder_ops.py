"""What orthogonal parametrizations are made of: ``matrix_exp`` (LinalgMatrixExpBackward0),
``linalg_householder_product`` (LinalgHouseholderProductBackward0) and ``geqrf`` (QR in LAPACK's
compact form, not differentiable, as in torch). Real and complex for matrix_exp, real for the
Householder product; batches loop over their matrices."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []


def _expm(a: np.ndarray) -> np.ndarray:
    """exp of each matrix of a stack: scaled until its 1-norm is below 1/2, a Taylor series to
    convergence (past float64's precision), then squared back."""
    out = np.empty_like(a)
    for idx in np.ndindex(*a.shape[:-2]):
        m = a[idx]
        norm = np.abs(m).sum(axis=-2).max() if m.size else 0.0
        s = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0.5 else 0
        x = m / (2.0 ** s)
        term = np.eye(m.shape[-1], dtype=m.dtype)
        total = term.copy()
        for k in range(1, 40):
            term = term @ x / k
            total = total + term
            if np.abs(term).max(initial=0.0) <= 1e-18 * np.abs(total).max(initial=1.0):
                break
        for _ in range(s):
            total = total @ total
        out[idx] = total
    return out


def matrix_exp(a: Tensor) -> Tensor:
    """torch.linalg.matrix_exp: the exponential of each square matrix of ``a``."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they are "
                           f"{a.shape[-2] if a.ndim >= 2 else 1} by {a.shape[-1] if a.ndim else 1} matrices")
    out = _out(_expm(a._data), a)
    if _grad_state.enabled and _requires(a):
        record(_MATRIX_EXP, (a,), [out], {"self": SavedVariable(a)})
    return out


def _matrix_exp_grad(n: Any, g: Tensor) -> Tensor:
    # the Fréchet derivative of exp at A^H in direction g: the upper-right block of the
    # exponential of [[A^H, g], [0, A^H]]
    a = np.conj(np.swapaxes(n["self"]._data, -1, -2))
    k = a.shape[-1]
    big = np.zeros(a.shape[:-2] + (2 * k, 2 * k), dtype=np.result_type(a, g._data))
    big[..., :k, :k] = a
    big[..., k:, k:] = a
    big[..., :k, k:] = g._data
    return _out(_expm(big)[..., :k, k:].astype(g._data.dtype, copy=False), g)


_MATRIX_EXP = _register("linalg_matrix_exp", D("LinalgMatrixExpBackward0", (_matrix_exp_grad,)))


def _reflector(a: np.ndarray, i: int) -> np.ndarray:
    v = a[:, i].copy()
    v[:i] = 0
    v[i] = 1
    return v


def _householder(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """H_1 ... H_k times the first n columns of the identity, H_i = I - tau_i v_i v_i^H."""
    m, n = a.shape
    x = np.eye(m, n, dtype=a.dtype)
    for i in reversed(range(tau.shape[0])):
        v = _reflector(a, i)
        x = x - tau[i] * np.outer(v, np.conj(v) @ x)
    return x


def linalg_householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product: the first n columns of the product of the Householder
    reflectors stored below a's diagonal, scaled by tau."""
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    if a.shape[-2] < a.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > a.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    x = np.empty_like(a._data)
    for idx in np.ndindex(*a.shape[:-2]):
        x[idx] = _householder(a._data[idx], tau._data[idx])
    out = _out(x, a)
    if _grad_state.enabled and (_requires(a) or _requires(tau)):
        record(_HOUSEHOLDER, (a, tau), [out], {"input": SavedVariable(a), "tau": SavedVariable(tau)})
    return out


def _householder_grads(a: np.ndarray, tau: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reverse mode through X_{i-1} = H_i X_i (real): the gradient reaching each H_i gives tau_i's
    and v_i's (whose entries below the diagonal are a's)."""
    m, n = a.shape
    k = tau.shape[0]
    xs = [np.eye(m, n, dtype=a.dtype)]
    for i in reversed(range(k)):
        v = _reflector(a, i)
        xs.append(xs[-1] - tau[i] * np.outer(v, v @ xs[-1]))
    xs.reverse()  # xs[i] = H_{i+1} ... H_k E (0-based reflectors i..k-1 applied)
    ga, gtau = np.zeros_like(a), np.zeros_like(tau)
    gx = g
    for i in range(k):
        v = _reflector(a, i)
        x_in = xs[i + 1]
        gh = gx @ x_in.T
        gtau[i] = -(v @ gh @ v)
        gv = -tau[i] * ((gh + gh.T) @ v)
        ga[i + 1:, i] = gv[i + 1:]
        gx = gx - tau[i] * np.outer(v, v @ gx)
    return ga, gtau


def _householder_part(i: int) -> Any:
    def grad(n: Any, g: Tensor) -> Tensor:
        a, tau = n["input"]._data, n["tau"]._data
        if np.iscomplexobj(a):
            raise NotImplementedError("gradviz: the gradient of a complex householder_product is not implemented")
        out = np.zeros_like(a) if i == 0 else np.zeros_like(tau)
        for idx in np.ndindex(*a.shape[:-2]):
            out[idx] = _householder_grads(a[idx], tau[idx], g._data[idx])[i]
        return _out(out, g)

    return grad


_HOUSEHOLDER = _register("linalg_householder_product", D(
    "LinalgHouseholderProductBackward0", (_householder_part(0), _householder_part(1)),
))


def geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """torch.geqrf: (a, tau) of LAPACK's geqrf, R on and above the diagonal, the reflectors below."""
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    m, n = a.shape[-2:]
    h = np.empty_like(a._data)
    tau = np.empty(a.shape[:-2] + (min(m, n),), dtype=a._data.dtype)
    for idx in np.ndindex(*a.shape[:-2]):
        raw, t = np.linalg.qr(a._data[idx], mode="raw")
        h[idx] = raw.T
        tau[idx] = t
    return _out(h, a), _out(tau, a)
