"""Constructor argument checks shared by the adaptive optimizers (torch's messages)."""

from __future__ import annotations

from typing import Any

from gradviz.optim.optimizer import _check_lr


def check(lr: Any, **values: float) -> None:
    _check_lr(lr)
    labels = {"eps": "epsilon value", "lr_decay": "lr_decay value", "weight_decay": "weight_decay value",
              "momentum": "momentum value", "alpha": "alpha value",
              "initial_accumulator_value": "initial_accumulator_value value"}
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {labels[name]}: {value}")
