"""torch.optim.Adam and AdamW: the single-tensor (foreach=False) update, operation for operation."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.optim import _ops
from gradviz.optim._check import check
from gradviz.optim.optimizer import Optimizer, _grads_of, _lr_value, _no_grad_step, _scalar_tensor, _zeros_state
from gradviz.tensor import Tensor

__all__ = ["Adam", "AdamW"]


def _check_betas(betas: Any) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_beta_types(betas: Any) -> None:
    if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):  # fmt: skip
        raise ValueError("betas must be either both floats or both Tensors")


def _inplace_affine(root: Any, divisor: float, eps: float) -> Any:
    """root / divisor + eps, reusing root's memory when it is an array."""
    if not hasattr(root, "shape") or root.shape == ():
        return root / root.dtype.type(divisor) + root.dtype.type(eps)
    np.divide(root, root.dtype.type(divisor), out=root)
    np.add(root, root.dtype.type(eps), out=root)
    return root


class Adam(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:  # fmt: skip
        check(lr, eps=eps)
        _check_betas(betas)
        check(lr, weight_decay=weight_decay)
        _check_beta_types(betas)
        betas = tuple(_lr_value(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}  # fmt: skip
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                               ("differentiable", False), ("fused", None), ("decoupled_weight_decay", False)):
                group.setdefault(key, value)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps, amsgrad = _lr_value(group["lr"]), group["weight_decay"], group["eps"], group["amsgrad"]
            for p, grad in _grads_of(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["exp_avg"] = _zeros_state(p)
                    state["exp_avg_sq"] = _zeros_state(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_state(p)
                if group["maximize"]:
                    grad = -grad
                step_t, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
                _ops.add_(step_t, 1)
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        _ops.mul_(p, 1 - lr * wd)
                    else:
                        grad = _ops.added(grad, p._data, wd)
                _ops.lerp_(exp_avg, grad, 1 - beta1)
                _ops.mul_(exp_avg_sq, beta2)
                _ops.addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
                step = float(step_t._data)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                if amsgrad:
                    mx = state["max_exp_avg_sq"]
                    _ops.maximum_(mx, exp_avg_sq._data)
                    denom = _ops.sqrt(mx._data)
                else:
                    denom = _ops.sqrt(exp_avg_sq._data)
                # (sqrt / bias_correction2_sqrt).add_(eps), in place on the fresh root
                denom = _inplace_affine(denom, bias_correction2_sqrt, eps)
                _ops.addcdiv_(p, exp_avg._data, denom, -step_size)


class AdamW(Adam):
    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:  # fmt: skip
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
