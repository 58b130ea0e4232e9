"""torch's top-level forms of nn ops (torch.layer_norm, torch.embedding, torch.kl_div, ...): the
same ops as gradviz.nn.functional's, under torch's ATen signatures (reductions as the integers
0 none, 1 mean, 2 sum; embedding's weight first; the cudnn flags ignored), and the Tensor methods
hardshrink and prelu. gradviz/_api.py publishes them at the top level."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz.nn import functional as _F
from gradviz.ops import nn_pad_ops as _nn_pad_ops
from gradviz.ops.inplace_write import bump_version
from gradviz.tensor import Tensor

__all__ = [
    "batch_norm", "binary_cross_entropy_with_logits", "constant_pad_nd", "cosine_embedding_loss", "dropout",
    "dropout_", "embedding", "feature_dropout", "feature_dropout_", "group_norm", "hinge_embedding_loss",
    "instance_norm", "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d", "max_pool2d", "native_batch_norm",
    "native_layer_norm", "poisson_nll_loss", "triplet_margin_loss",
    "adaptive_avg_pool1d", "avg_pool1d", "embedding_renorm_", "max_pool1d_with_indices",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r: Any) -> str:
    return _REDUCTIONS[r] if isinstance(r, int) else r


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    return _F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    return _F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,  # noqa: A002
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool = True) -> Tensor:
    return _F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                  running_mean: Tensor | None, running_var: Tensor | None, use_input_stats: bool, momentum: float,
                  eps: float, cudnn_enabled: bool = True) -> Tensor:
    return _F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    return _F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _F.dropout(input, p, train, inplace=True)


def _feature(input: Tensor, p: float, train: bool, inplace: bool) -> Tensor:  # noqa: A002
    # whole channels (dim 1) dropped, for any number of spatial dims
    fn = {3: _F.dropout1d, 4: _F.dropout2d, 5: _F.dropout3d}.get(input.ndim, _F.dropout2d)
    return fn(input, p, train, inplace)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _feature(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _feature(input, p, train, True)


def kl_div(input: Tensor, target: Tensor, reduction: Any = 0, *, log_target: bool = False) -> Tensor:  # noqa: A002
    with warnings.catch_warnings():  # the 'mean' warning is nn.functional's, not the ATen op's
        warnings.filterwarnings("ignore", message="reduction: 'mean' divides", category=UserWarning)
        return _F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return _F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return _F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     pos_weight: Tensor | None = None, reduction: Any = 0) -> Tensor:
    return _F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                               pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: Any = 0) -> Tensor:
    return _F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: Any = 0) -> Tensor:  # noqa: A002
    return _F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: Any = 0) -> Tensor:
    return _F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,  # noqa: A002
                     reduction: Any) -> Tensor:
    return _F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, reduction: Any = 0) -> Tensor:
    return _F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:  # noqa: A002
    return _nn_pad_ops.constant_pad_nd(input, tuple(pad), value)


def _stats(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, np.ndarray]:
    """The mean and 1/sqrt(biased var + eps) over axes (kept as size 1)."""
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean, 1 / np.sqrt(var + eps)


def _plain(data: np.ndarray, like: Tensor) -> Tensor:
    return Tensor(np.ascontiguousarray(data.astype(like._data.dtype)), like.device)


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,  # noqa: A002
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm's output, mean, rstd), the statistics over the normalized dims kept as size 1."""
    k = len(normalized_shape)
    mean, rstd = _stats(input._data.astype(np.float64), tuple(range(input.ndim - k, input.ndim)), eps)
    out = _F.layer_norm(input, normalized_shape, weight, bias, eps)
    return out, _plain(mean, input), _plain(rstd, input)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm's output, the batch mean, its 1/std) in training; empty statistics otherwise."""
    axes = (0, *range(2, input.ndim))
    if training:
        mean, invstd = _stats(input._data.astype(np.float64), axes, eps)
        save_mean, save_invstd = _plain(mean.reshape(-1), input), _plain(invstd.reshape(-1), input)
    else:
        save_mean = save_invstd = _plain(np.zeros(0), input)
    out = _F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return out, save_mean, save_invstd


def _one(v: Any) -> Any:
    return v[0] if isinstance(v, (tuple, list)) else v


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """avg_pool2d over a unit height, as torch composes it (SqueezeBackward1 over AvgPool2DBackward0)."""
    k = _one(kernel_size)
    st = _one(stride) if stride not in ((), None) else k
    out = _F.avg_pool2d(input.unsqueeze(-2), (1, k), (1, st), (0, _one(padding)), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return _F.adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size))).squeeze(-2)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
                            dilation: Any = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    return _F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """The rows of weight that indices name scaled down, in place, to a norm of at most max_norm
    (without recording: torch's runs under no_grad in embedding)."""
    rows = np.unique(indices._data.reshape(-1))
    w = weight._data
    norms = (np.abs(w[rows].astype(np.float64)) ** norm_type).sum(-1) ** (1.0 / norm_type)
    scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    w[rows] = (w[rows] * scale[:, None]).astype(w.dtype)
    bump_version(weight, "embedding_renorm_")
    return weight


def install_methods() -> None:
    """Tensor.hardshrink and Tensor.prelu: nn.functional's ops as methods, as torch has them."""
    Tensor.hardshrink = lambda self, lambd=0.5: _F.hardshrink(self, lambd)
    Tensor.prelu = lambda self, weight: _F.prelu(self, weight)
