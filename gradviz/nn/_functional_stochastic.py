"""torch.nn.functional's random activations and dropouts: alpha_dropout, feature_alpha_dropout,
rrelu and gumbel_softmax, drawing what torch draws, in its order (so seeded runs agree)."""

from __future__ import annotations

import math
import warnings

from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import functions as F
from gradviz.ops.nn_shuffle_pdist_rrelu_ops import rrelu_with_noise, rrelu_with_noise_
from gradviz.random._api import bernoulli_, exponential_
from gradviz.tensor import Tensor

__all__ = ["alpha_dropout", "feature_alpha_dropout", "gumbel_softmax", "rrelu", "rrelu_"]

# SELU's negative saturation value, -lambda * alpha: what alpha dropout sets dropped units to
_ALPHA = 1.7580993408473766


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool) -> Tensor:
    """ATen's _dropout_impl with alpha: input * (mask * a) + b, keeping SELU's mean and variance."""
    _check_p(p)
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = F.zeros_for((), input.dtype, input.device)
        return input.mul_(zero) if inplace else F.mul(input, zero)
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    with no_grad():
        noise = F.zeros_for(shape, input.dtype, input.device)
        bernoulli_(noise, 1 - p)
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = F.add(F.mul(F.add(noise, -1), _ALPHA * a), _ALPHA * a * p)
        noise.mul_(a)
    out = input.mul_(noise) if inplace else F.mul(input, noise)
    return out.add_(b)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    return _alpha_dropout(input, p, training, inplace, feature=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training,
    (lower + upper) / 2 otherwise."""
    if inplace:
        return rrelu_with_noise_(input, lower, upper, training)
    return rrelu_with_noise(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu_with_noise_(input, lower, upper, training)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); with ``hard``, the one-hot of its argmax
    in the forward and the soft gradient in the backward (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    with no_grad():
        draws = exponential_(F.empty_like(logits))
    gumbels = F.neg(F.log(draws))
    gumbels = F.div(F.add(logits, gumbels), tau)
    y_soft = F.softmax(gumbels, dim)
    if not hard:
        return y_soft
    index = F.max(y_soft, dim, keepdim=True)[1]
    y_hard = F.zeros_like(logits).scatter_(dim, index, F.ones_like(index, dtype=logits.dtype))
    return F.add(F.sub(y_hard, y_soft.detach()), y_soft)
