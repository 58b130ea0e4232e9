"""torch.nn.utils.parametrizations: weight_norm and spectral_norm as parametrizations
(gradviz/nn/utils/parametrize.py), with torch's originals, buffers, random draws and graphs."""

from __future__ import annotations

from typing import Any

from gradviz.autograd.grad_mode import no_grad
from gradviz.nn.functional import normalize
from gradviz.nn.modules.conv_transpose import _ConvTransposeNd
from gradviz.nn.modules.module import Module
from gradviz.nn.utils import parametrize
from gradviz.ops import functions as F
from gradviz.ops.nn_weight_norm_ops import _weight_norm, norm_except_dim
from gradviz.tensor import Tensor

__all__ = ["spectral_norm", "weight_norm"]


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
