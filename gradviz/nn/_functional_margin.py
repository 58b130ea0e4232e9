"""torch.nn.functional's margin losses with fused nodes (multi_margin_loss,
multilabel_margin_loss), triplet_margin_with_distance_loss (torch's Python), the CTC loss, pdist, and channel_shuffle
(torch.channel_shuffle itself, as in torch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz.nn._functional_layers import _reduction
from gradviz.nn._functional_pad import pairwise_distance
from gradviz.ops import functions as F
from gradviz.ops import nn_ctc_ops as C
from gradviz.ops import nn_margin_loss_ops as M
from gradviz.ops import nn_shuffle_pdist_rrelu_ops as S
from gradviz.ops.channel_shuffle import channel_shuffle  # torch's F.channel_shuffle is torch.channel_shuffle
from gradviz.tensor import Tensor

__all__ = ["channel_shuffle", "ctc_loss", "multi_margin_loss", "multilabel_margin_loss", "pdist",
           "triplet_margin_with_distance_loss"]

_NAMES = {0: "none", 1: "mean", 2: "sum"}


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    red = _NAMES[_reduction(reduction, size_average, reduce)]
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    return M.multi_margin_loss(input, target, p, margin, weight, red)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                           reduction: str = "mean") -> Tensor:
    return M.multilabel_margin_loss(input, target, _NAMES[_reduction(reduction, size_average, reduce)])


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)), with d pairwise_distance by default; with ``swap``,
    d(a, n) is min(d(a, n), d(p, n))."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
            f"got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs"
        )
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = F.minimum(dist_neg, dist(positive, negative))
    loss = F.clamp_min(F.sub(margin + dist_pos, dist_neg), 0)
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance between each pair of rows (the upper triangle, row by row)."""
    return S.pdist(F.contiguous(input), p)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of (T, N, C) log-probabilities (or (T, C), unbatched) against the targets:
    one CtcLossBackward0, then torch's reduction (the mean over target lengths, then the batch)."""

    def as_list(v: Any) -> list[int]:
        return [int(x) for x in (v.tolist() if isinstance(v, Tensor) else v)]

    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = F.unsqueeze(log_probs, 1)
        targets = F.unsqueeze(targets, 0)
    il, tl = as_list(input_lengths), as_list(target_lengths)
    res = C.ctc_loss(log_probs, targets, il, tl, blank, zero_infinity)
    if zero_infinity:
        res = F.where(F.eq(res, float("inf")), F.zeros_for((), res.dtype, res.device), res)
    if unbatched:
        res = F.squeeze(res, 0)
    if reduction == "mean":
        lengths = F.clamp_min(F.tensor(np.asarray(tl, dtype=res.dtype.np)), 1)
        return F.mean(F.div(res, lengths))
    if reduction == "sum":
        return F.sum(res)
    return res
