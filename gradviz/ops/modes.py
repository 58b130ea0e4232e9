"""torch.inference_mode: grad mode off inside the block (its tensors record no graph), as a
context manager and a decorator, with or without parentheses."""

from __future__ import annotations

import threading
from typing import Any

import gradviz.autograd as _autograd
from gradviz.autograd.grad_mode import _DecoratorContext, _report
from gradviz.autograd.grad_mode import _state as _grad_state

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "inference_mode", "is_inference_mode_enabled",
]

_inference = threading.local()


class inference_mode(_DecoratorContext):  # noqa: N801 - torch's name
    """``inference_mode(mode=True)``: no graph inside the block when mode is true. torch's
    inference tensors also refuse later autograd use; gradviz's are plain tensors."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        if callable(mode) and not isinstance(mode, bool):
            mode = True
        self.mode = bool(mode)

    def _args(self) -> tuple:
        return (self.mode,)

    def __enter__(self) -> None:
        self.prev = _grad_state.grad, _grad_state.enabled, getattr(_inference, "on", False)
        if self.mode:
            # torch's inference mode turns forward AD off too (a dual level's tangents stop)
            _grad_state.grad = _grad_state.enabled = False
        _inference.on = self.mode
        _report("inference_mode", True, _grad_state.grad)

    def __exit__(self, *exc: object) -> None:
        _grad_state.grad, _grad_state.enabled, _inference.on = self.prev
        _report("inference_mode", False, _grad_state.grad)

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)


def is_inference_mode_enabled() -> bool:
    return getattr(_inference, "on", False)




# torch.autograd.inference_mode is torch.inference_mode; gradviz.autograd cannot import the ops
_autograd.inference_mode = inference_mode
