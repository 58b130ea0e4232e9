"""torch.alpha_dropout / feature_alpha_dropout (and their in-place forms), as torch's CPU kernel
composes them: noise = bernoulli(1 - p) (per element, or per (sample, channel) for the feature
form), then ``input * (noise * a) + b`` with b = (noise - 1) * alpha * a + alpha * a * p, which keeps
a SELU network's mean and variance; recorded as MulBackward0 then AddBackward0, as torch records."""

from __future__ import annotations

import math

from gradviz.autograd.grad_mode import no_grad
from gradviz.ops.construction import empty, zeros
from gradviz.tensor import Tensor

__all__ = ["alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_"]

_ALPHA = 1.7580993408473766  # SELU's -scale * alpha


def _alpha_dropout(input: Tensor, p: float, train: bool, feature: bool, inplace: bool) -> Tensor:  # noqa: A002
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        zero = zeros((), dtype=input.dtype)
        return input.mul_(zero) if inplace else input * zero
    shape = (input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    with no_grad():
        noise = empty(*shape, dtype=input.dtype).bernoulli_(1 - p)
        b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
        noise.mul_(a)
    out = input.mul_(noise) if inplace else input * noise
    return out.add_(b)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _alpha_dropout(input, p, train, False, False)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _alpha_dropout(input, p, train, False, True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _alpha_dropout(input, p, train, True, False)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _alpha_dropout(input, p, train, True, True)
