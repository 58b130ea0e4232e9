"""torch.optim.Adam and its family (AdamW, Adamax, NAdam, RAdam): single-tensor updates, as torch 2.13."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from gradviz.optim import _ops
from gradviz.optim._check import check
from gradviz.optim.optimizer import (
    Optimizer,
    _grads_of,
    _lr_value,
    _no_grad_step,
    _scalar_tensor,
    _takes_foreach,
    _zeros_state,
)
from gradviz.tensor import Tensor, make_tensor

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]


def _check_betas(betas: Any) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_beta_types(betas: Any) -> None:
    if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
        raise ValueError("betas must be either both floats or both Tensors")


def _inplace_affine(root: Any, divisor: float, eps: float) -> Any:
    """root / divisor + eps, reusing root's memory when it is an array."""
    if not hasattr(root, "shape") or root.shape == ():
        return root / root.dtype.type(divisor) + root.dtype.type(eps)
    np.divide(root, root.dtype.type(divisor), out=root)
    np.add(root, root.dtype.type(eps), out=root)
    return root


def _state_of(opt: Optimizer, p: Tensor, moments: tuple[str, ...],
              scalars: tuple[tuple[str, float], ...] = ()) -> dict[str, Any]:
    """p's state, made on first use: ``step``, then ``scalars``' 0-dim tensors, then a zero
    tensor like p for each of ``moments``, in that order (state_dict's)."""
    state = opt.state[p]
    if len(state) == 0:
        state["step"] = _scalar_tensor(0.0)
        for name, value in scalars:
            state[name] = _scalar_tensor(value)
        for name in moments:
            state[name] = _zeros_state(p)
    return state


def _adam_steps(opt: Optimizer, group: dict[str, Any], moments: tuple[str, ...],
                scalars: tuple[tuple[str, float], ...] = (), before_moment: Any = None) -> Any:
    """The steps the Adam family shares, for each of the group's params with a gradient, as
    torch's single-tensor loops: the state made on first use (``step``, then ``scalars``' 0-dim
    tensors, then a zero tensor like p for each of ``moments``, in that order: state_dict's), the
    gradient negated under maximize, the step counted, weight decay (decoupled: p scaled; else
    added to the gradient), ``before_moment(state, step)`` when given (NAdam's mu_product), and
    the first moment ``exp_avg`` moved toward the gradient. Yields (p, grad, state, step) for the
    optimizer's own update."""
    beta1 = group["betas"][0]
    lr, wd = _lr_value(group["lr"]), group["weight_decay"]
    for p, grad in _grads_of(group):
        state = _state_of(opt, p, moments, scalars)
        if group["maximize"]:
            grad = -grad
        step = _ops.tick(state)
        if wd != 0:
            if group.get("decoupled_weight_decay", False):  # Adamax has no such option
                _ops.mul_(p, 1 - lr * wd)
            else:
                grad = _ops.added(grad, p._data, wd)
        if before_moment is not None:
            before_moment(state, step)
        _ops.lerp_(state["exp_avg"], grad, 1 - beta1)
        yield p, grad, state, step


def _second_moment(exp_avg_sq: Tensor, grad: Any, beta2: float) -> None:
    """exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad², in place, as torch's mul_ then addcmul_."""
    _ops.mul_(exp_avg_sq, beta2)
    _ops.addcmul_(exp_avg_sq, grad, grad, 1 - beta2)


class Adam(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check(lr, eps=eps)
        _check_betas(betas)
        check(lr, weight_decay=weight_decay)
        _check_beta_types(betas)
        betas = tuple(_lr_value(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
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
            lr, eps, amsgrad = _lr_value(group["lr"]), group["eps"], group["amsgrad"]
            moments = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
            if _takes_foreach(group):
                self._foreach_step(group, moments)
                continue
            for p, grad, state, step in _adam_steps(self, group, moments):
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                _second_moment(exp_avg_sq, grad, beta2)
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
                _ops.on_fresh(p.device, denom, "add_")
                _ops.addcdiv_(p, exp_avg._data, denom, -step_size)


    def _foreach_step(self, group: dict[str, Any], moments: tuple[str, ...]) -> None:
        """torch's multi-tensor loop (foreach=True), for each (device, dtype) group of parameters:
        the single-tensor loop's arithmetic, its writes made list by list and named as the
        _foreach_* ops make them, the denominators fresh tensors written in place."""
        (beta1, beta2), lr, eps = group["betas"], _lr_value(group["lr"]), group["eps"]
        wd, amsgrad = group["weight_decay"], group["amsgrad"]
        groups: dict[tuple[Any, Any], list[Tensor]] = {}
        for p, _ in _grads_of(group):
            _state_of(self, p, moments)
            groups.setdefault((p.device, p.dtype), []).append(p)
        for params in groups.values():
            states = [self.state[p] for p in params]
            grads = [p._grad._data for p in params]
            if group["maximize"]:
                grads = [_ops.array(-g) for g in grads]  # torch._foreach_neg: new tensors
            steps = [float(_ops.add_(s["step"], 1, op="_foreach_add_")._data) for s in states]
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    for p in params:
                        _ops.mul_(p, 1 - lr * wd, op="_foreach_mul_")
                elif group["maximize"]:  # added into the negated gradients, in place
                    grads = [_ops.array(_ops.added(g, p._data, wd)) for g, p in zip(grads, params, strict=True)]
                    for g, p in zip(grads, params, strict=True):
                        _ops.on_fresh(p.device, g, "_foreach_add_")
                else:
                    grads = [_ops.added(g, p._data, wd) for g, p in zip(grads, params, strict=True)]
            for s, g in zip(states, grads, strict=True):
                _ops.lerp_(s["exp_avg"], g, 1 - beta1, op="_foreach_lerp_")
            for s in states:
                _ops.mul_(s["exp_avg_sq"], beta2, op="_foreach_mul_")
            for s, g in zip(states, grads, strict=True):
                _ops.addcmul_(s["exp_avg_sq"], g, g, 1 - beta2, op="_foreach_addcmul_")
            if amsgrad:
                for s in states:
                    _ops.maximum_(s["max_exp_avg_sq"], s["exp_avg_sq"]._data, op="_foreach_maximum_")
            roots = [s["max_exp_avg_sq" if amsgrad else "exp_avg_sq"] for s in states]
            denoms = [make_tensor(_ops.array(_ops.sqrt(r._data)), r.device) for r in roots]  # torch._foreach_sqrt
            for d, step in zip(denoms, steps, strict=True):
                _ops.div_(d, (1 - beta2**step) ** 0.5, op="_foreach_div_")
            for d in denoms:
                _ops.add_(d, eps, op="_foreach_add_")
            for p, s, d, step in zip(params, states, denoms, steps, strict=True):
                _ops.addcdiv_(p, s["exp_avg"]._data, d._data, (lr / (1 - beta1**step)) * -1, op="_foreach_addcdiv_")


class AdamW(Adam):
    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def _check_adam_like(lr: Any, betas: Any, eps: float, weight_decay: float) -> None:
    check(lr, eps=eps)
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    check(lr, weight_decay=weight_decay)


class Adamax(Optimizer):
    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_adam_like(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            (beta1, beta2), lr, eps = group["betas"], _lr_value(group["lr"]), group["eps"]
            for p, grad, state, step in _adam_steps(self, group, ("exp_avg", "exp_inf")):
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                # torch.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                _ops.mul_(exp_inf, beta2)
                bound = np.abs(grad) + grad.dtype.type(eps)
                _ops.on_fresh(p.device, bound, "add_")
                _ops.maximum_(exp_inf, bound)
                clr = lr / (1 - beta1**step)
                _ops.addcdiv_(p, exp_avg._data, exp_inf._data, -clr)


def _mu_product_step(beta1: float, momentum_decay: float, state: dict[str, Any], step: float) -> None:
    """NAdam's mu_product *= mu, made before the moments as torch's."""
    _ops.mul_(state["mu_product"], beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay)))


class NAdam(Optimizer):
    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_like(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            (beta1, beta2), lr, eps = group["betas"], _lr_value(group["lr"]), group["eps"]
            momentum_decay = group["momentum_decay"]

            mu_product_step = functools.partial(_mu_product_step, beta1, momentum_decay)
            steps = _adam_steps(self, group, ("exp_avg", "exp_avg_sq"), (("mu_product", 1.0),), mu_product_step)
            for p, grad, state, step in steps:
                bias_correction2 = 1 - beta2**step
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                _second_moment(exp_avg_sq, grad, beta2)
                denom = _ops.sqrt(exp_avg_sq._data / exp_avg_sq._data.dtype.type(bias_correction2))
                denom = denom + denom.dtype.type(eps)
                _ops.on_fresh(p.device, denom, "add_")
                mp = float(state["mu_product"]._data)
                _ops.addcdiv_(p, grad, denom, -lr * (1.0 - mu) / (1.0 - mp))
                _ops.addcdiv_(p, exp_avg._data, denom, -lr * mu_next / (1.0 - mp * mu_next))


class RAdam(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_like(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            (beta1, beta2), lr, eps = group["betas"], _lr_value(group["lr"]), group["eps"]
            for p, grad, state, step in _adam_steps(self, group, ("exp_avg", "exp_avg_sq")):
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                _second_moment(exp_avg_sq, grad, beta2)
                dt = exp_avg._data.dtype.type
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                corrected = exp_avg._data / dt(bias_correction1)
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
                update = corrected * dt(lr)
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    # torch's float / tensor is the tensor's reciprocal times the float
                    adaptive = (dt(1) / (_ops.sqrt(exp_avg_sq._data) + dt(eps))) * dt(bias_correction2**0.5)
                    update = (update * adaptive) * dt(rect)
                _ops.add_(p, update, -1.0)
