"""torch.nn.functional's layers: linear, dropout, embedding, layer_norm, activations, one_hot,
and the losses composed of other ops (l1_loss, kl_div) or fused in torch (smooth_l1, huber,
binary cross entropy)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import functions as F
from gradviz.ops import nn_loss_ops as L
from gradviz.ops.nn_embedding_bag_ops import embedding_bag as _embedding_bag
from gradviz.ops.nn_ops import embedding as _embedding
from gradviz.ops.nn_ops import gelu, layer_norm, leaky_relu, linear, silu
from gradviz.tensor import Tensor

__all__ = [
    "embedding_bag",
    "bilinear", "binary_cross_entropy", "binary_cross_entropy_with_logits", "dropout", "embedding", "gelu",
    "huber_loss", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear", "one_hot", "sigmoid", "silu",
    "smooth_l1_loss", "tanh",
]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction: str, size_average: Any = None, reduce: Any = None) -> int:
    if size_average is not None or reduce is not None:
        # torch's legacy flags: reduce=False wins, then size_average=False means sum
        if reduce is False:
            return 0
        return 1 if size_average is not False else 2
    try:
        return _REDUCTIONS[reduction]
    except KeyError:
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _noise_mask(shape: tuple[int, ...], keep: float) -> np.ndarray:
    from gradviz.random import default_generator

    return default_generator.rng.random(shape) < keep


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """torch's CPU dropout: ``input * noise`` with noise = bernoulli(1 - p) / (1 - p): a
    MulBackward0 node whose second edge (the noise) is empty."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = F.zeros_for((), input.dtype, input.device)
        return input.mul_(zero) if inplace else F.mul(input, zero)
    with no_grad():
        noise = F.zeros_for(tuple(input.shape), input.dtype, input.device)
        if hasattr(Tensor, "bernoulli_"):
            noise.bernoulli_(1 - p)
        else:
            noise._data[...] = _noise_mask(tuple(input.shape), 1 - p)
        noise.div_(1 - p)
    return input.mul_(noise) if inplace else F.mul(input, noise)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _embedding(input, weight, padding_idx, scale_grad_by_freq, sparse)


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """torch.embedding_renorm_ under no_grad: each row that input names (once, however often it
    is named) whose norm_type-norm exceeds max_norm scaled in place to max_norm / (norm + 1e-7);
    one version bump of weight, as torch's one in-place kernel."""
    w = weight._data
    for i in np.unique(np.asarray(input._data).ravel()):
        row = w[i]
        norm = float(np.linalg.norm(row.astype(np.float64).ravel(), ord=norm_type))
        if norm > max_norm:
            w[i] = row * w.dtype.type(max_norm / (norm + 1e-7))
    weight._version_counter[0] += 1
    return weight


def tanh(input: Tensor) -> Tensor:
    return F.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return F.sigmoid(input)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    t = tensor._data
    if t.size and t.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(t.max()) + 1 if t.size else 0
    elif t.size and t.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (t[..., None] == np.arange(num_classes)).astype(np.int64)
    return F._new(out, tensor.device)


# -- losses ------------------------------------------------------------------------------------


def _sz(shape: Any) -> str:
    return "torch.Size([" + ", ".join(str(int(d)) for d in shape) + "])"


def _check_sizes(input: Tensor, target: Tensor, stacklevel: int = 3) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({_sz(target.shape)}) that is different to the input size ({_sz(input.shape)}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=stacklevel,
        )


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Any = None) -> Tensor:
    """|input - target|, reduced: torch composes it (SubBackward0, AbsBackward0, MeanBackward0)."""
    _check_sizes(input, target)
    red = _reduction(reduction, size_average, reduce)
    loss = F.abs(F.sub(input, target))
    if red == 1:
        return F.mean(loss)
    if red == 2:
        return F.sum(loss)
    return loss


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    _check_sizes(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)  # torch's shortcut, composed of other ops
    return L.smooth_l1_loss(input, target, _reduction(reduction, size_average, reduce), beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Tensor:
    _check_sizes(input, target)
    return L.huber_loss(input, target, _reduction(reduction), delta)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({_sz(target.shape)}) that is different to the input size ({_sz(input.shape)}) is "
            "deprecated. Please ensure they have the same size."
        )
    return L.binary_cross_entropy(input, target, weight, red)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    red = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({_sz(target.shape)}) must be the same as input size ({_sz(input.shape)})"
        )
    return L.binary_cross_entropy_with_logits(input, target, weight, pos_weight, red)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """torch's composition: xlogy(target, target) - target * input (or exp(target) * (target -
    input) for a log target), then the reduction."""
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' "
            "divides only by the batch size, and aligns with the KL div math definition.'mean' will be changed "
            "to behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
    red_name = "sum" if reduction == "batchmean" else reduction
    red = _reduction(red_name, size_average, reduce)
    # torch's C++ evaluates the right operand first (its nodes' order); xlogy is an op, so a
    # target that requires grad gets its gradient (XlogyBackward0)
    if log_target:
        diff = F.sub(target, input)
        loss = F.mul(F.exp(target), diff)
    else:
        prod = F.mul(target, input)
        loss = F.sub(F.xlogy(target, target), prod)
    if red == 1:
        out = F.mean(loss)
    elif red == 2:
        out = F.sum(loss)
    else:
        out = loss
    if reduction == "batchmean" and input.ndim != 0:
        out = F.div(out, input.shape[0])
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x1^T W_o x2 (+ b_o) for each output o: torch's views around one TrilinearBackward0 node,
    the bias added after (AddBackward0)."""
    from gradviz.ops.nn_ops import trilinear_bilinear

    lead = tuple(input1.shape[:-1])
    x1 = F.view(input1, (-1, input1.shape[-1]))
    x2 = F.view(input2, (-1, input2.shape[-1]))
    y = F.view(trilinear_bilinear(x1, weight, x2), lead + (weight.shape[0],))
    return y if bias is None else F.add(y, bias)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings: 1-d input cut into bags at ``offsets``, or a
    2-d input whose rows are the bags; one EmbeddingBagBackward0 node."""
    if weight.dtype == _dtype.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {offsets.type()}")
        offsets = F.arange(0, input.numel(), input.shape[1], dtype=input.dtype, device=input.device)
        input = F.reshape(input, -1)
        if per_sample_weights is not None:
            per_sample_weights = F.reshape(per_sample_weights, -1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    modes = {"sum": 0, "mean": 1, "max": 2}
    if mode not in modes:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        raise NotImplementedError("gradviz: embedding_bag with max_norm is not implemented")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _embedding_bag(weight, input, offsets, scale_grad_by_freq, modes[mode], per_sample_weights,
                          include_last_offset, padding_idx)
