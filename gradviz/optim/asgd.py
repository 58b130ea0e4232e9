"""torch.optim.ASGD: averaged stochastic gradient descent, as torch 2.13's single-tensor code (the
one torch runs for CPU parameters)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.optim import _ops
from gradviz.optim._check import check
from gradviz.optim.optimizer import Optimizer, _grads_of, _lr_value, _no_grad_step, _scalar_tensor, _zeros_state

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            lr, lambd, alpha, t0 = _lr_value(group["lr"]), group["lambd"], group["alpha"], group["t0"]
            for p, grad in _grads_of(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["eta"] = _scalar_tensor(lr)
                    state["mu"] = _scalar_tensor(1.0)
                    state["ax"] = _zeros_state(p)
                if group["maximize"]:
                    grad = -grad
                step = _ops.tick(state)
                if group["weight_decay"] != 0:
                    grad = _ops.added(grad, p._data, group["weight_decay"])
                eta = float(state["eta"]._data)  # torch's _get_value: the float32 count as a number
                _ops.mul_(p, 1 - lambd * eta)
                _ops.add_(p, grad, -eta)
                ax, mu = state["ax"], state["mu"]
                if float(mu._data) != 1:
                    _ops.add_(ax, (p._data - ax._data) * mu._data)
                else:
                    _ops.copy_(ax, p._data)
                _ops.copy_(state["eta"], np.float64(lr / ((1 + lambd * lr * step) ** alpha)))
                _ops.copy_(mu, np.float64(1 / max(1, step - t0)))
