"""The autograd Functions torch.nn's modules apply in Python: CrossMapLRN2d (node
CrossMapLRN2dBackward), computed as torch's, channel by channel with a running window sum; and
BackwardHookFunction (node BackwardHookFunctionBackward), the identity a Module's full backward
hooks put on its inputs and outputs to catch their gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.function import Function
from gradviz.tensor import Tensor

__all__ = ["BackwardHookFunction", "CrossMapLRN2d"]


class BackwardHookFunction(Function):
    """Returns its tensors as they are (so as views with this node); those that do not require
    grad are marked non-differentiable."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *args: Any) -> Any:
        return args


def _scale(x: np.ndarray, size: int, alpha: float, k: float) -> np.ndarray:
    """k + alpha / size * the sum of squares over a window of channels, slid as torch slides it."""
    sq = x * x
    channels = x.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.zeros_like(x)
    scale[:, 0] = sq[:, :min(pre_pad, channels)].sum(axis=1)
    for c in range(1, channels):
        scale[:, c] = scale[:, c - 1]
        if c < channels - pre_pad + 1:
            scale[:, c] += sq[:, c + pre_pad - 1]
        if c > pre_pad:
            scale[:, c] -= sq[:, c - pre_pad]
    return scale * x.dtype.type(alpha / size) + x.dtype.type(k)


class CrossMapLRN2d(Function):
    @staticmethod
    def forward(ctx: Any, input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        x = input.detach().numpy()
        scale = _scale(x, size, alpha, k)
        ctx.scale = scale
        out = Tensor._wrap((scale ** -beta * x).astype(x.dtype, copy=False), input.dtype, input.device)
        ctx.save_for_backward(input, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        input, output = ctx.saved_tensors
        x, y, g = input.detach().numpy(), output.detach().numpy(), grad_output.detach().numpy()
        size, scale = ctx.size, ctx.scale
        n, channels = x.shape[:2]
        ratio_coef = 2 * ctx.alpha * ctx.beta / size
        inverse_pre_pad = int(size - (size - 1) / 2)
        grad = scale ** -ctx.beta * g
        padded = np.zeros((channels + size - 1,) + x.shape[2:], dtype=x.dtype)
        for b in range(n):
            padded[inverse_pre_pad:inverse_pre_pad + channels] = g[b] * y[b] / scale[b]
            accum = padded[:size - 1].sum(axis=0)
            for c in range(channels):
                accum = accum + padded[c + size - 1]
                grad[b, c] -= ratio_coef * x[b, c] * accum
                accum = accum - padded[c]
        return Tensor._wrap(grad.astype(x.dtype, copy=False), input.dtype, input.device), None, None, None, None
