"""torch.optim.swa_utils: weight averaging (SWA and EMA) of a model, the SWALR schedule, and
update_bn's pass that re-estimates BatchNorm statistics.

AveragedModel keeps a deep copy of the model and an ``n_averaged`` buffer; its first
update_parameters copies the model's parameters in, later ones average them in with the given
function. On CPU torch averages one parameter at a time with ``a + (p - a) / (n + 1)`` (its
foreach path is for accelerators only), and the EMA helpers lerp; both are what is done here, so
the averages are torch's to the bit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import gradviz
from gradviz.autograd.grad_mode import no_grad
from gradviz.nn.modules.module import Module
from gradviz.nn.modules.normalization import _BatchNorm
from gradviz.optim.lr_scheduler import LRScheduler, _format_param
from gradviz.optim.optimizer import Optimizer
from gradviz.tensor import Tensor

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]

ParamList = list[Tensor] | tuple[Tensor, ...]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _floating(t: Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[ParamList, ParamList, Any], None]:
    """In-place EMA of a list of parameters: a lerp towards the model's by 1 - decay."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params: ParamList, current_params: ParamList, _: Any) -> None:
        if _floating(ema_params[0]):
            for e, c in zip(ema_params, current_params, strict=True):
                e.lerp_(c, 1 - decay)
        else:
            for e, c in zip(ema_params, current_params, strict=True):
                e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[ParamList, ParamList, Any], None]:
    """In-place equal-weight running average of a list of parameters."""

    @no_grad()
    def swa_update(averaged: ParamList, current: ParamList, num_averaged: Tensor | int) -> None:
        if _floating(averaged[0]):
            for a, c in zip(averaged, current, strict=True):
                a.lerp_(c, float(1 / (num_averaged + 1)))
        else:
            for a, c in zip(averaged, current, strict=True):
                diff = c - a
                if isinstance(num_averaged, Tensor):
                    a.addcdiv_(diff, num_averaged + 1)
                else:
                    a.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """EMA of one parameter: decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """Equal-weight running average of one parameter: a + (p - a) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A running average (SWA by default, or the given avg_fn / multi_avg_fn) of a model's
    parameters, and of its buffers too with use_buffers=True (else the buffers are copied)."""

    def __init__(self, model: Module, device: Any = None,
                 avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[[ParamList, ParamList, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", gradviz.tensor(0, dtype=gradviz.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        mine = (itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers
                else self.parameters())
        theirs = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()
        averaged: list[Tensor] = []
        current: list[Tensor] = []
        first = bool(self.n_averaged == 0)
        for a, p in zip(mine, theirs, strict=False):
            p_ = p.detach().to(a.device)
            averaged.append(a.detach())
            current.append(p_)
            if first:
                a.detach().copy_(p_)
        if self.n_averaged > 0:
            with no_grad():
                if self.multi_avg_fn is not None:
                    for group_a, group_c in _by_device_and_dtype(averaged, current):
                        self.multi_avg_fn(group_a, group_c, self.n_averaged.to(group_a[0].device))
                else:
                    fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                    for a, p_ in zip(averaged, current, strict=True):
                        a.copy_(fn(a, p_, self.n_averaged.to(a.device)))
        if not self.use_buffers:
            for b_mine, b_theirs in zip(self.module.buffers(), model.buffers(), strict=True):
                b_mine.detach().copy_(b_theirs.detach().to(b_mine.device))
        self.n_averaged += 1


def _by_device_and_dtype(averaged: list[Tensor], current: list[Tensor]) -> list[tuple[list[Tensor], list[Tensor]]]:
    """The pairs grouped as torch groups them for a multi_avg_fn: by (device, dtype), in first-seen order."""
    groups: dict[tuple[Any, Any], tuple[list[Tensor], list[Tensor]]] = {}
    for a, c in zip(averaged, current, strict=True):
        g = groups.setdefault((str(a.device), a.dtype), ([], []))
        g[0].append(a)
        g[1].append(c)
    return list(groups.values())


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """One pass over loader in train mode, each BatchNorm's running statistics reset and then
    accumulated as a plain average (momentum None); momenta and the training flag restored."""
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to its swa_lr over anneal_epochs steps ("cos" or "linear"), then
    holds it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: Any, swa_lr: Any, alpha: float) -> Any:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        self._warn_get_lr()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs,
                                                                          strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
