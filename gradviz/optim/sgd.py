"""torch.optim.SGD: the single-tensor (foreach=False) update, operation for operation."""

from __future__ import annotations

from typing import Any

from gradviz.optim import _ops
from gradviz.optim.optimizer import Optimizer, _grads_of, _lr_value, _no_grad_step
from gradviz.tensor import make_tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_no_grad_step
    def step(self) -> None:
        for group in self.param_groups:
            lr = _lr_value(group["lr"])
            wd, momentum, dampening = group["weight_decay"], group["momentum"], group["dampening"]
            for p, grad in _grads_of(group):
                if group["maximize"]:
                    grad = -grad
                if wd != 0:
                    grad = _ops.added(grad, p._data, wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = make_tensor(_ops.fresh(grad), p.device)
                    else:
                        _ops.mul_(buf, momentum)
                        _ops.add_(buf, grad, 1 - dampening)
                    state["momentum_buffer"] = buf
                    grad = _ops.added(grad, buf._data, momentum) if group["nesterov"] else buf._data
                _ops.add_(p, grad, -lr)
