"""More losses, composed as torch composes them, so each records the nodes torch's does: the
ATen composites (cosine_embedding, hinge_embedding, margin_ranking, poisson_nll, triplet_margin:
C++, where a Python number in ``x + margin`` is a Scalar: AddBackward1) and torch.nn.functional's
Python ones (gaussian_nll, multilabel_soft_margin: ``0.5 * x`` wraps the number: MulBackward0).
soft_margin_loss has torch's own kernel and node (SoftMarginLossBackward0)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.nn._functional_activations import logsigmoid
from gradviz.nn._functional_layers import _reduction
from gradviz.nn._functional_pad import pairwise_distance
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_REDUCTION, Derivative, node_class, record, save
from gradviz.tensor import Tensor

__all__ = [
    "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "multilabel_soft_margin_loss", "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss",
]


def _apply_reduction(loss: Tensor, red: int) -> Tensor:
    """ATen's apply_loss_reduction: mean() or sum() of the whole, or the elements."""
    if red == 1:
        return F.mean(loss)
    if red == 2:
        return F.sum(loss)
    return loss


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: "
                           f"{list(target.shape)} ")
    out = F.add_scalar(F.mul(F.neg(target), F.sub(input1, input2)), margin)
    return _apply_reduction(F.clamp_min_(out, 0), red)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None,  # noqa: A002
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    zeros = F.zeros_like(input)
    margin_clamp = F.clamp_min_(F.sub(F.full_like(input, margin), input), 0)  # C++'s Scalar - Tensor
    output_margin = F.where(F.ne(target, 1), margin_clamp, zeros)
    output_self = F.where(F.ne(target, -1), input, zeros)
    return _apply_reduction(F.add(output_margin, output_self), red)


_EPSILON = 1e-12


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"cosine_embedding_loss : Input1 and Input2 should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}")
    targ_dim = 1 if input1.ndim == 2 else 0
    prod_sum = F.sum(F.mul(input1, input2), targ_dim)
    mag_square1 = F.add_scalar(F.sum(F.mul(input1, input1), targ_dim), _EPSILON)
    mag_square2 = F.add_scalar(F.sum(F.mul(input2, input2), targ_dim), _EPSILON)
    denom = F.sqrt_(F.mul(mag_square1, mag_square2))
    cos = F.div(prod_sum, denom)
    zeros = F.zeros_like(cos)
    pos = F.sub(F.full_like(cos, 1), cos)  # C++'s Scalar - Tensor: a tensor of the number, minus
    neg = F.clamp_min_(F.sub_scalar(cos, margin), 0)
    output_pos = F.where(F.eq(target, 1), pos, zeros)
    output_neg = F.where(F.eq(target, -1), neg, zeros)
    return _apply_reduction(F.add(output_pos, output_neg), red)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,  # noqa: A002
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = F.sub(F.exp(input), F.mul(target, input))
    else:
        loss = F.sub(input, F.mul(target, F.log(F.add_scalar(input, eps))))
    if full:
        stirling = F.add(F.sub(F.mul(target, F.log(target)), target),
                         F.mul_scalar(F.log(F.mul_scalar(target, 2 * math.pi)), 0.5))
        loss = F.add_(loss, F.masked_fill(stirling, F.le(target, 1), 0))
    return _apply_reduction(loss, red)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_swap = pairwise_distance(positive, negative, p, eps)
        dist_neg = F.minimum(dist_neg, dist_swap)
    out = F.clamp_min(F.sub(F.add_scalar(dist_pos, margin), dist_neg), 0)
    return _apply_reduction(out, red)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,  # noqa: A002
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """torch.nn.functional's Python: var cloned and clamped under no_grad, then
    0.5 * (log(var) + (input - target)**2 / var)."""
    if not isinstance(var, Tensor):
        var = F.full_like(input, var)
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = F.unsqueeze(var, -1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool(F.any(F.lt(var, 0)).item()):
        raise ValueError("var has negative entry/entries")
    var = F.clone(var)
    with no_grad():
        F.clamp_(var, min=eps)
    loss = F.mul(F.add(F.log(var), F.div(F.pow(F.sub(input, target), 2), var)), 0.5)
    if full:
        loss = F.add(loss, 0.5 * math.log(2 * math.pi))
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    loss = F.neg(F.add(F.mul(target, logsigmoid(input)), F.mul(F.rsub(target, 1), logsigmoid(F.neg(input)))))
    if weight is not None:
        loss = F.mul(loss, weight)
    class_dim = input.ndim - 1
    loss = F.div(F.sum(loss, class_dim), input.shape[class_dim])
    return F.mean(loss) if red == 1 else F.sum(loss) if red == 2 else loss


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)), reduced: torch's own kernel (SoftMarginLossBackward0)."""
    red = _reduction(reduction, size_average, reduce)
    if _grad_state.enabled and target._tracked:
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. "
                           "This input cannot have requires_grad True.")
    x, y = input._data, target._data
    with np.errstate(all="ignore"):
        loss = np.log1p(np.exp(-y * x)).astype(x.dtype, copy=False)
    data = loss.mean() if red == 1 else loss.sum() if red == 2 else loss
    out = F._new(np.asarray(data, dtype=x.dtype), input.device)
    if _grad_state.enabled and input._tracked:
        # torch differentiates the input only: one edge
        record(_SOFT_MARGIN, (input,), [out], {"self": save(input), "target": save(target), "reduction": red})
    return out


def _soft_margin_grad(n: Any, g: Tensor) -> Tensor:
    x, y, red = n["self"], n["target"], n["reduction"]
    z = F.exp(F.mul(F.neg(y), x))
    grad = F.div(F.mul(F.neg(y), z), F.add_scalar(z, 1.0))
    if red == 1:
        grad = F.div_scalar(grad, x.numel())
    return F.mul(grad, g)


_SOFT_MARGIN = node_class(Derivative("SoftMarginLossBackward0", (_soft_margin_grad,), forward=AUTO_REDUCTION))

