"""torch's top-level spellings of nn ops (``torch.dropout``, ``torch.batch_norm``, ``torch.kl_div``,
...): the aten signatures, which differ from torch.nn.functional's (positional ``train`` flags,
``weight`` before ``indices`` in ``embedding``, ``reduction`` as aten's int: 0 none, 1 mean, 2
sum). Each calls gradviz.nn.functional's op, so it records the graph torch.nn.functional records
(which in torch calls these very functions)."""

from __future__ import annotations

from typing import Any

from gradviz.autograd.grad_mode import no_grad
from gradviz.nn import _functional_dropout as _drop
from gradviz.nn import functional as F
from gradviz.nn.modules.rnn import _gru_cell, _lstm_cell, _rnn_cell
from gradviz.ops.construction import empty
from gradviz.tensor import Tensor

__all__ = [
    "batch_norm", "binary_cross_entropy_with_logits", "constant_pad_nd", "cosine_embedding_loss", "dropout",
    "dropout_", "embedding", "feature_dropout", "feature_dropout_", "group_norm", "hinge_embedding_loss",
    "instance_norm", "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "poisson_nll_loss", "triplet_margin_loss", "native_layer_norm", "native_batch_norm",
    "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "convolution",
]

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}
# aten declares ``reduction=Mean``, but torch 2.13's Python binding reads that default as 0: called
# without it, torch.kl_div, torch.hinge_embedding_loss... do not reduce. The defaults below are 0.


def _red(reduction: int) -> str:
    try:
        return _REDUCTION[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _check_p(p: float) -> None:
    # aten's check: a RuntimeError (torch.nn.functional's own check raises ValueError first)
    if p < 0.0 or p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's parameter names
    _check_p(p)
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    _check_p(p)
    return F.dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    _check_p(p)
    return _drop._feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    _check_p(p)
    return _drop._feature_dropout(input, p, train, True)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,  # noqa: A002
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,  # noqa: A002
                  running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-05, cudnn_enable: bool = True) -> Tensor:
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-05, cudnn_enabled: bool = True) -> Tensor:
    return F.group_norm(input, num_groups, weight, bias, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """aten's order (weight first); a negative padding_idx means none, as aten reads it."""
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     pos_weight: Tensor | None = None, reduction: int = 0) -> Tensor:
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_red(reduction), pos_weight=pos_weight)


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False) -> Tensor:  # noqa: A002
    """aten's kl_div: its mean is over every element, without torch.nn.functional's warning;
    ``log_target`` is keyword-only."""
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    red = _red(reduction)
    return loss.mean() if red == "mean" else loss.sum() if red == "sum" else loss


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_red(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0) -> Tensor:  # noqa: A002
    return F.hinge_embedding_loss(input, target, margin, reduction=_red(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_red(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,  # noqa: A002
                     reduction: int) -> Tensor:
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_red(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-06, swap: bool = False, reduction: int = 0) -> Tensor:
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_red(reduction))


def _stride(stride: Any) -> Any:
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
                            dilation: Any = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True)


def constant_pad_nd(input: Tensor, pad: Any, value: float = 0) -> Tensor:  # noqa: A002
    return F.pad(input, list(pad), mode="constant", value=value)


def native_layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(output, mean, rstd): the statistics over the normalized dims, kept as size-1 dims; they
    are not differentiable outputs (torch's mean and rstd have no grad_fn)."""
    out = F.layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    with no_grad():
        x = input.detach()
        mean = x.mean(dims, keepdim=True)
        rstd = (x.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(output, save_mean, save_invstd): the batch's statistics when training, empty tensors when
    not (torch saves nothing then)."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return out, empty(0, dtype=input.dtype), empty(0, dtype=input.dtype)
    dims = tuple(d for d in range(input.dim()) if d != 1)
    with no_grad():
        x = input.detach()
        mean = x.mean(dims)
        invstd = (x.var(dims, unbiased=False) + eps).rsqrt()
    return out, mean, invstd


def _cell_params(w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None) -> tuple:
    return (w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,  # noqa: A002
                  b_hh: Tensor | None = None) -> Tensor:
    return _rnn_cell(input, hx, _cell_params(w_ih, w_hh, b_ih, b_hh), "tanh", False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,  # noqa: A002
                  b_hh: Tensor | None = None) -> Tensor:
    return _rnn_cell(input, hx, _cell_params(w_ih, w_hh, b_ih, b_hh), "relu", False)


def lstm_cell(input: Tensor, hx: Any, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,  # noqa: A002
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``hx`` is the pair (h, c); returns (hy, cy)."""
    h, c = hx
    return _lstm_cell(input, h, c, _cell_params(w_ih, w_hh, b_ih, b_hh), False)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,  # noqa: A002
             b_hh: Tensor | None = None) -> Tensor:
    return _gru_cell(input, hx, _cell_params(w_ih, w_hh, b_ih, b_hh), False)


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,  # noqa: A002
                dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Tensor:
    """aten's convolution: conv1d/conv2d (or the transposed ones) by the input's rank."""
    rank = input.dim() - 2
    if rank not in (1, 2):
        raise NotImplementedError(f"gradviz has no torch.convolution for {input.dim()}-D input (conv3d)")
    if transposed:
        fn = F.conv_transpose1d if rank == 1 else F.conv_transpose2d
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = F.conv1d if rank == 1 else F.conv2d
    return fn(input, weight, bias, stride, padding, dilation, groups)
