"""torch.nn.utils.parametrizations: orthogonal, weight_norm and spectral_norm as parametrizations
(gradviz/nn/utils/parametrize.py), with torch's originals, buffers, random draws and graphs."""

from __future__ import annotations

from enum import Enum, auto
from typing import Any

from gradviz._finfo import finfo
from gradviz.autograd.grad_mode import no_grad
from gradviz.nn.functional import normalize
from gradviz.nn.modules.conv_transpose import _ConvTransposeNd
from gradviz.nn.modules.module import Module
from gradviz.nn.utils import parametrize
from gradviz.ops import functions as F
from gradviz.ops.linalg_more import householder_product as linalg_householder_product
from gradviz.ops.linalg_more import matrix_exp
from gradviz.ops.linalg_solvers import solve
from gradviz.ops.nn_weight_norm_ops import _weight_norm, norm_except_dim
from gradviz.ops.tensor_more import geqrf
from gradviz.random._api import randn
from gradviz.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = F.eye(k, dtype=q.dtype, device=q.device)
    return bool(F.allclose(F.matmul(q.mH, q), eye, atol=10.0 * n * finfo(q.dtype).eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR, its columns' signs chosen so that R's diagonal is positive."""
    x, tau = geqrf(a)
    q = linalg_householder_product(x, tau)
    q *= F.unsqueeze(F.sgn(F.diagonal(x, 0, -2, -1)), -2)
    return q


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps a matrix to an orthogonal one (of its shape): the exponential or Cayley transform of
    a skew-symmetric matrix made of its lower triangle, or a Householder product; with
    ``use_trivialization``, times a ``base`` that assignments move (the original starts at -I)."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = F.tril(x)
            if n != k:
                x = F.cat([x, F.expand(x.new_zeros(n, n - k), *x.shape[:-2], -1, -1)], -1)
            a = F.sub(x, x.mH)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = matrix_exp(a)
            else:
                eye = F.eye(n, dtype=a.dtype, device=a.device)
                q = solve(F.add(eye, a, alpha=-0.5), F.add(eye, a, alpha=0.5))
            if n != k:
                q = q[..., :k]
        else:
            a = F.tril(x, -1)
            tau = 2.0 / (1.0 + F.sum(F.mul(a, a), -2))
            q = linalg_householder_product(a, tau)
            q = q * F.unsqueeze(F.diagonal(x, 0, -2, -1).int(), -2)
        if hasattr(self, "base"):
            q = F.matmul(self.base, q)
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(q)

    def _right_inverse(self, q: Tensor) -> Tensor:
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        q_init = q
        n, k = q.shape[-2], q.shape[-1]
        transpose = n < k
        if transpose:
            q = q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            a, tau = geqrf(q)
            diag = F.diagonal(a, 0, -2, -1)
            diag.sign_()
            diag[F.eq(tau, 0.0)] *= -1
            return a.mT if transpose else a
        if n == k:
            q = _make_orthogonal(q) if not _is_orthogonal(q) else F.clone(q)
        else:
            extra = randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype, device=q.device)
            q = _make_orthogonal(F.cat([q, extra], -1))
        self.base = q
        neg_id = F.zeros_like(q_init)
        F.diagonal(neg_id, 0, -2, -1).fill_(-1.0)
        return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """``module.<name>`` (a matrix or a batch) made orthogonal (unitary): "matrix_exp" for square
    or complex ones by default, "householder" otherwise, or "cayley"."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """``module.<name>`` as g * v / ||v||: originals ``original0`` (g, the norms along ``dim``)
    and ``original1`` (v); a state_dict of the old hook (``<name>_g``, ``<name>_v``) still loads."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat(state_dict: dict, prefix: str, local_metadata: Any, strict: bool, missing_keys: list,
               unexpected_keys: list, error_msgs: list) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(compat)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            # u and v drawn as torch draws them (the same generator calls), then 15 steps of the
            # power method so that the first forward starts from a good estimate
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = F.permute(weight, self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return F.flatten(weight, 1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # in place in the buffers (out=), without history, as torch's
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = normalize(F.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                self._v = normalize(F.mv(weight_mat.H, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = F.clone(self._u)
        v = F.clone(self._v)
        sigma = F.vdot(u, F.mv(weight_mat, v))
        return F.div(weight, sigma)

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """``module.<name>`` divided by its largest singular value, estimated by power iteration
    (one step per forward in training mode); dim 1 for transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
