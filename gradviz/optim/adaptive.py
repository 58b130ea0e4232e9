"""torch.optim.Adagrad, RMSprop and Adadelta: single-tensor (foreach=False) updates."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.optim import _ops
from gradviz.optim._check import check
from gradviz.optim.optimizer import Optimizer, _grads_of, _lr_value, _no_grad_step, _scalar_tensor, _zeros_state

__all__ = ["Adagrad", "RMSprop", "Adadelta"]


class Adagrad(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        check(lr, lr_decay=lr_decay, weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value,
              eps=eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        # Adagrad's state exists from construction, as torch's
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar_tensor(0.0)
                state["sum"] = _zeros_state(p, initial_accumulator_value)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            lr, wd, lr_decay, eps = _lr_value(group["lr"]), group["weight_decay"], group["lr_decay"], group["eps"]
            for p, grad in _grads_of(group):
                state = self.state[p]
                step = _ops.tick(state)
                if group["maximize"]:
                    grad = -grad
                if wd != 0:
                    grad = _ops.added(grad, p._data, wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = state["sum"]
                _ops.addcmul_(state_sum, grad, grad, 1)
                std = _ops.sqrt(state_sum._data) + eps
                _ops.on_fresh(p.device, std, "add_")  # state_sum.sqrt().add_(eps)
                _ops.addcdiv_(p, grad, std, -clr)


class RMSprop(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check(lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            lr, wd, alpha, eps = _lr_value(group["lr"]), group["weight_decay"], group["alpha"], group["eps"]
            momentum, centered = group["momentum"], group["centered"]
            for p, grad in _grads_of(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["square_avg"] = _zeros_state(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_state(p)
                    if centered:
                        state["grad_avg"] = _zeros_state(p)
                if group["maximize"]:
                    grad = -grad
                _ops.tick(state)
                if wd != 0:
                    grad = _ops.added(grad, p._data, wd)
                square_avg = state["square_avg"]
                _ops.mul_(square_avg, alpha)
                _ops.addcmul_(square_avg, grad, grad, 1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    _ops.lerp_(grad_avg, grad, 1 - alpha)
                    # square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_(): addcmul out of place
                    avg = _ops.array(_ops.sqrt(_ops.addcmul(square_avg._data, grad_avg._data, grad_avg._data, -1)))
                else:
                    avg = _ops.array(_ops.sqrt(square_avg._data))  # square_avg.sqrt()
                np.add(avg, eps, out=avg)  # avg.add_(eps)
                _ops.on_fresh(p.device, avg, *(("sqrt_", "add_") if centered else ("add_",)))
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    _ops.mul_(buf, momentum)
                    _ops.addcdiv_(buf, grad, avg)
                    _ops.add_(p, buf._data, -lr)
                else:
                    _ops.addcdiv_(p, grad, avg, -lr)


class Adadelta(Optimizer):
    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check(lr, eps=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            lr, wd, rho, eps = _lr_value(group["lr"]), group["weight_decay"], group["rho"], group["eps"]
            for p, grad in _grads_of(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["square_avg"] = _zeros_state(p)
                    state["acc_delta"] = _zeros_state(p)
                _ops.tick(state)
                if group["maximize"]:
                    grad = -grad
                if wd != 0:
                    grad = _ops.added(grad, p._data, wd)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                _ops.mul_(square_avg, rho)
                _ops.addcmul_(square_avg, grad, grad, 1 - rho)
                # std = square_avg.add(eps).sqrt_(); delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                std = _ops.sqrt(square_avg._data + eps)
                delta = _ops.array(_ops.sqrt(acc_delta._data + eps))
                np.divide(delta, std, out=delta)
                np.multiply(delta, grad, out=delta)
                _ops.on_fresh(p.device, std, "sqrt_")
                _ops.on_fresh(p.device, delta, "sqrt_", "div_", "mul_")
                _ops.mul_(acc_delta, rho)
                _ops.addcmul_(acc_delta, delta, delta, 1 - rho)
                _ops.add_(p, delta, -lr)
