"""torch.optim.Rprop: resilient backpropagation, as torch 2.13's single-tensor code."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.optim import _ops
from gradviz.optim._check import check
from gradviz.optim.optimizer import Optimizer, _grads_of, _lr_value, _no_grad_step, _scalar_tensor, _zeros_state

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            (etaminus, etaplus), (step_size_min, step_size_max) = group["etas"], group["step_sizes"]
            for p, grad in _grads_of(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["prev"] = _zeros_state(p)
                    state["step_size"] = _zeros_state(p, _lr_value(group["lr"]))
                if group["maximize"]:
                    grad = -grad
                _ops.tick(state)
                prev, step_size = state["prev"], state["step_size"]
                dt = step_size._data.dtype.type
                # sign = grad.mul(prev).sign(), then three masked assignments into it, each mask
                # read from the sign as changed so far
                sign = _ops.array(np.sign(grad * prev._data))
                sign[sign > 0] = dt(etaplus)
                sign[sign < 0] = dt(etaminus)
                sign[sign == 0] = dt(1)
                _ops.on_fresh(p.device, sign, "__setitem__", "__setitem__", "__setitem__")
                _ops.mul_(step_size, sign)
                _ops.clamp_(step_size, dt(step_size_min), dt(step_size_max))
                # grad = grad.clone(); grad[sign.eq(etaminus)] = 0
                grad = _ops.fresh(grad)
                grad[sign == dt(etaminus)] = dt(0)
                _ops.on_fresh(p.device, grad, "__setitem__")
                _ops.addcmul_(p, np.sign(grad), step_size._data, -1)
                _ops.copy_(prev, grad)
