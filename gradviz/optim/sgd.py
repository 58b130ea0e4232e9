"""torch.optim.SGD: the single-tensor (foreach=False) update, operation for operation."""

from __future__ import annotations

from typing import Any

from gradviz.optim import _ops
from gradviz.optim.optimizer import Optimizer, _grads_of, _lr_value, _no_grad_step, _takes_foreach
from gradviz.tensor import Tensor, make_tensor

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
            if _takes_foreach(group):
                self._foreach_step(group)
                continue
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

    def _foreach_step(self, group: dict[str, Any]) -> None:
        """torch's multi-tensor loop (foreach=True), for each (device, dtype) group of parameters:
        the same arithmetic as the single-tensor loop, its writes made list by list and named as
        the _foreach_* ops make them. With nesterov, torch adds the buffers into the gradient
        list in place: p.grad itself, when neither maximize nor weight decay made new ones."""
        lr = _lr_value(group["lr"])
        wd, momentum, dampening = group["weight_decay"], group["momentum"], group["dampening"]
        groups: dict[tuple[Any, Any], list[Tensor]] = {}
        for p in group["params"]:
            if p._grad is not None:
                groups.setdefault((p.device, p.dtype), []).append(p)
        for params in groups.values():
            grads = [p._grad for p in params]
            if group["maximize"]:
                grads = [make_tensor(_ops.array(-g._data), g.device) for g in grads]  # torch._foreach_neg
            if wd != 0:
                if group["maximize"]:
                    for g, p in zip(grads, params, strict=True):
                        _ops.add_(g, p._data, wd, op="_foreach_add_")
                else:
                    grads = [make_tensor(_ops.array(_ops.added(g._data, p._data, wd)), g.device)
                             for g, p in zip(grads, params, strict=True)]
            if momentum != 0:
                bufs = [self.state[p].get("momentum_buffer") for p in params]
                if all(b is not None for b in bufs):
                    for b in bufs:
                        _ops.mul_(b, momentum, op="_foreach_mul_")
                    for b, g in zip(bufs, grads, strict=True):
                        _ops.add_(b, g._data, 1 - dampening, op="_foreach_add_")
                else:
                    for i, (p, g) in enumerate(zip(params, grads, strict=True)):
                        if bufs[i] is None:
                            bufs[i] = self.state[p]["momentum_buffer"] = make_tensor(_ops.fresh(g._data), p.device)
                        else:
                            _ops.mul_(bufs[i], momentum)
                            _ops.add_(bufs[i], g._data, 1 - dampening)
                if group["nesterov"]:
                    for g, b in zip(grads, bufs, strict=True):
                        _ops.add_(g, b._data, momentum, op="_foreach_add_")
                else:
                    grads = bufs
            for p, g in zip(params, grads, strict=True):
                _ops.add_(p, g._data, -lr, op="_foreach_add_")
