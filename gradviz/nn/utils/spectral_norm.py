"""torch.nn.utils.spectral_norm, the forward-pre-hook form: parameter ``<name>_orig``, buffers
``<name>_u`` and ``<name>_v`` (the power method's vectors), and ``<name>`` recomputed before each
forward as ``<name>_orig / sigma``."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from gradviz.autograd.grad_mode import no_grad
from gradviz.nn.functional import normalize
from gradviz.nn.modules.conv_transpose import _ConvTransposeNd
from gradviz.nn.modules.module import Module
from gradviz.nn.parameter import Parameter
from gradviz.ops import functions as F
from gradviz.tensor import Tensor

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "remove_spectral_norm",
           "spectral_norm"]


class SpectralNorm:
    """The hook: one power-method step per forward in training mode, then weight / sigma."""

    _version: int = 1
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        mat = weight
        if self.dim != 0:
            mat = F.permute(mat, self.dim, *[d for d in range(mat.ndim) if d != self.dim])
        return F.reshape(mat, mat.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # into the buffers in place (out=), so that the next forward starts from them
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = normalize(F.mv(F.t(weight_mat), u), dim=0, eps=self.eps, out=v)
                    u = normalize(F.mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                u = F.clone(u)
                v = F.clone(v)
        sigma = F.dot(u, F.mv(weight_mat, v))
        return F.div(weight, sigma)

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat: Tensor, u: Tensor, target_sigma: Tensor) -> Tensor:
        # v such that u = normalize(W v), scaled so that u . W v == target_sigma (an old
        # state_dict that saved the weight but not v)
        w = weight_mat._data
        v = F._new(np.linalg.pinv(w.T @ w) @ w.T @ u._data, u.device)
        return v.mul_(target_sigma / F.dot(u, F.mv(weight_mat, v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Loads a state_dict saved before version 1 (``<name>`` saved, ``<name>_v`` not): v solved
    from the weight and u."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool, missing_keys: list,
                 unexpected_keys: list, error_msgs: list) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v")) \
                and weight_key not in state_dict:
            return
        missing = False
        for suffix in ("_orig", "", "_u"):
            if weight_key + suffix not in state_dict:
                missing = True
                if strict:
                    missing_keys.append(weight_key + suffix)
        if missing:
            return
        with no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            weight = state_dict.pop(weight_key)
            sigma = F.mean(F.div(weight_orig, weight))
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, state_dict[weight_key + "_u"], sigma)


class SpectralNormStateDictHook:
    """Records the hook's version in the state_dict's metadata."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


T_module = TypeVar("T_module", bound=Module)


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> T_module:
    """Divide ``module.<name>`` by its spectral norm before each forward (dim 1 for transposed
    convolutions, else 0)."""
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold the normalised weight back into one parameter ``<name>`` and drop the hooks."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in module._state_dict_hooks.items():
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    # The load pre-hook stays, as in torch (whose registry wraps the hook, so its removal loop
    # never finds it): a state_dict saved after the removal then fails to load, as there.
    return module
