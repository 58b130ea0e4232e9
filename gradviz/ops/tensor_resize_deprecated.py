"""Tensor.resize and Tensor.resize_as, torch's deprecated out-of-place resizes: torch runs them as
its own autograd Function, Resize (the node ResizeBackward), which can only reshape (same number
of elements); the gradient is reshaped back."""

from __future__ import annotations

import functools
import operator
import warnings
from typing import Any

from gradviz.autograd.function import Function, FunctionCtx
from gradviz.tensor import Tensor

__all__ = ["install"]


class Resize(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, tensor: Tensor, sizes: tuple[Any, ...]) -> Tensor:  # type: ignore[override]
        ctx.sizes = sizes
        # torch multiplies what it was given: a tuple passed whole reads as one (odd) size, and fails
        ctx.numel = functools.reduce(operator.mul, sizes, 1)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in total), but the given "
                f"tensor has a size of {'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). autograd's "
                "resize can only change the shape of a given tensor, while preserving the number of elements. "
            )
        ctx.input_sizes = tuple(tensor.size())
        return tensor.contiguous().view(*sizes) if not tensor.is_contiguous() else \
            tensor.detach().contiguous().view(*sizes)

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        return grad_output.contiguous().view(ctx.input_sizes), None


def resize(self: Tensor, *sizes: Any) -> Tensor:
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return Resize.apply(self, sizes)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return Resize.apply(self, tuple(tensor.size()))


def install() -> None:
    Tensor.resize = resize  # type: ignore[attr-defined]
    Tensor.resize_as = resize_as  # type: ignore[attr-defined]
