"""More of torch.optim.lr_scheduler: PolynomialLR, CosineAnnealingWarmRestarts, ChainedScheduler
(re-exported by gradviz.optim.lr_scheduler)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gradviz.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau, _group_values, _set_group_value
from gradviz.optim.optimizer import Optimizer

__all__ = ["PolynomialLR", "CosineAnnealingWarmRestarts", "ChainedScheduler"]


class PolynomialLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        self._warn_get_lr()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        n, e = self.total_iters, self.last_epoch
        decay_factor = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [g["lr"] * decay_factor for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]  # fmt: skip


class CosineAnnealingWarmRestarts(LRScheduler):
    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:  # fmt: skip
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        self._warn_get_lr()
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]  # fmt: skip

    def step(self, epoch: Any = None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:  # a restart
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class ChainedScheduler(LRScheduler):
    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for idx, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"{name} at index {idx} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be "
                    f"specified when calling `step`, but got one at index {idx} in the given schedulers sequence."
                )
            if optimizer is not scheduler.optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                    f"{scheduler.__class__.__name__} at index {idx} has {scheduler.optimizer}, which is different "
                    f"from {optimizer.__class__.__name__}."
                )
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def state_dict(self) -> dict[str, Any]:
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = schedulers
        for idx, s in enumerate(schedulers):
            self._schedulers[idx].load_state_dict(s)
