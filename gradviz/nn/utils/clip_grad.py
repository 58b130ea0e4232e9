"""Gradient clipping, in place and without history, as torch's clip_grad_norm_ computes it:
the norm of the per-tensor norms, then every gradient times min(1, max_norm / (norm + 1e-6))."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import no_grad
from gradviz.device import module_of
from gradviz.ops import functions as F
from gradviz.ops.inplace_write import bump_version
from gradviz.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm"]


def _tensors(parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _norm(a: np.ndarray, p: float) -> Any:
    a = np.abs(a)
    if p == math.inf:
        return a.max() if a.size else a.dtype.type(0)
    if p == -math.inf:
        return a.min()
    if p == 0:
        return a.dtype.type(np.count_nonzero(a))
    if p == 2:
        return np.sqrt(np.sum(a * a, dtype=a.dtype))
    return np.sum(a**p, dtype=a.dtype) ** (1.0 / p)


def get_total_norm(tensors: Any, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Any = None) -> Tensor:
    ts = [t for t in _tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if not ts:
        return _zero()
    dt = ts[0]._data.dtype
    xm = module_of(ts[0]._data)  # the norms stay where the gradients are
    norms = xm.stack([F._as_array(_norm(t._data, norm_type), dt) for t in ts])
    total = F._as_array(_norm(norms, norm_type), dt)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return F._new(total, ts[0].device)


def _zero() -> Tensor:
    from gradviz.ops.construction import tensor

    return tensor(0.0)


def _groups(grads: list[Tensor]) -> list[list[Tensor]]:
    """The gradients grouped by (device, dtype), as torch's foreach paths take them (groups in the
    order each first appears; torch's own order of several groups is its hash map's)."""
    groups: dict[tuple[Any, Any], list[Tensor]] = {}
    for g in grads:
        groups.setdefault((g.device, g.dtype), []).append(g)
    return list(groups.values())


def _foreach(foreach: Any) -> bool:
    """Whether torch would take its foreach path: foreach=None does on CPU and CUDA tensors, the
    only devices gradviz has."""
    return foreach is None or bool(foreach)


def _clip_grads_with_norm_(parameters: Any, max_norm: float, total_norm: Tensor, foreach: Any = None) -> None:
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    coef = float(max_norm) / (total_norm._data + 1e-6)
    coef = np.minimum(coef, 1.0).astype(total_norm._data.dtype)
    # torch._foreach_mul_(grads, coef) over each group, or g.mul_(coef) for each (foreach=False)
    op = "_foreach_mul_" if _foreach(foreach) else "mul_"
    with no_grad():
        for group in _groups(grads):
            for g in group:
                g._data *= coef.astype(g._data.dtype)
                bump_version(g, op)


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, total_norm: Tensor,
                          foreach: Any = None) -> None:
    """torch.nn.utils.clip_grads_with_norm_: scale the gradients by min(1, max_norm / (total_norm +
    1e-6)), total_norm given (get_total_norm's, usually)."""
    _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    params = _tensors(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    _clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Any, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Any = None) -> Tensor:
    import warnings

    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: Any = None) -> None:
    clip_value = float(clip_value)
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    with no_grad():
        for group in _groups(grads):
            if _foreach(foreach):
                # torch._foreach_clamp_min_(group, -c), then torch._foreach_clamp_max_(group, c)
                for g in group:
                    np.maximum(g._data, g._data.dtype.type(-clip_value), out=g._data)
                    bump_version(g, "_foreach_clamp_min_")
                for g in group:
                    np.minimum(g._data, g._data.dtype.type(clip_value), out=g._data)
                    bump_version(g, "_foreach_clamp_max_")
            else:
                for g in group:
                    np.clip(g._data, -clip_value, clip_value, out=g._data)
                    bump_version(g, "clamp_")
