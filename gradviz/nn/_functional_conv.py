"""torch.nn.functional's convolutions, pooling and batch norm, with torch's checks."""

from __future__ import annotations

from typing import Any

from gradviz.ops import functions as F
from gradviz.ops import nn_conv3d_ops as C3
from gradviz.ops import nn_conv_ops as C
from gradviz.ops.nn_conv_tbc_ops import conv_tbc
from gradviz.ops.nn_pad_ops import constant_pad_nd
from gradviz.tensor import Tensor

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "conv1d", "conv2d", "conv3d", "conv_tbc", "max_pool1d",
    "max_pool2d",
]


def _size_list(shape: Any) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
          groups: int, dims: int) -> Tensor:
    name = f"conv{dims}d"
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got input of size: "
            f"{_size_list(input.shape)}"
        )
    stride, dilation = C._pair(stride, dims), C._pair(dilation, dims)
    same_extra = None
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * dims
        elif padding == "same":
            ks = weight.shape[2:]
            totals = [d * (k - 1) for d, k in zip(dilation, ks)]
            padding = tuple(t // 2 for t in totals)
            # an odd total: torch pads the input's far side by one first (ConstantPadNdBackward0)
            same_extra = [v for t in reversed(totals) for v in (0, t % 2)]
        else:
            raise ValueError(f"Invalid padding string '{padding}'")
    padding = C._pair(padding, dims)
    unbatched = input.ndim == dims + 1
    x = F.unsqueeze(input, 0) if unbatched else input
    if same_extra is not None and any(same_extra):
        x = constant_pad_nd(x, same_extra, 0.0)
    c = x.shape[1]
    if weight.shape[1] * groups != c:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_size_list(weight.shape)}, expected input"
            f"{_size_list(x.shape)} to have {weight.shape[1] * groups} channels, but got {c} channels instead"
        )
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(
            f"Given weight of size {_size_list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{weight.shape[0]} elements, but got bias of size {_size_list(bias.shape)} instead"
        )
    if dims == 3:
        out = C3.convolution3d(x, weight, bias, stride, padding, dilation, groups)
    else:
        out = C.convolution(x, weight, bias, stride, padding, dilation, groups)
    return F.squeeze(out, 0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    k = C._pair(kernel_size)
    s = C._pair(stride) if stride not in (None, [], ()) else k
    p = C._pair(padding)
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise RuntimeError("pad should be at most half of effective kernel size, but got pad="
                           f"{p[0]}, kernel_size={k[0]} and dilation={C._pair(dilation)[0]}")
    out, idx = C.max_pool2d_with_indices(input, k, s, p, C._pair(dilation), ceil_mode)
    return (out, idx) if return_indices else out


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    k = C._pair(kernel_size, 1)[0]
    s = C._pair(stride, 1)[0] if stride not in (None, [], ()) else k
    x = F.unsqueeze(input, -2)
    out, idx = C.max_pool2d_with_indices(x, (1, k), (1, s), (0, C._pair(padding, 1)[0]),
                                         (1, C._pair(dilation, 1)[0]), ceil_mode)
    out = F.squeeze(out, -2)
    return (out, F.squeeze(idx, -2)) if return_indices else out


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    k = C._pair(kernel_size)
    s = C._pair(stride) if stride not in (None, [], ()) else k
    return C.avg_pool2d(input, k, s, C._pair(padding), ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    size = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    if size == (1, 1):
        # torch's shortcut: a mean over the last two dims (MeanBackward1)
        return F.mean(input, (-1, -2), keepdim=True)
    return C.adaptive_avg_pool2d(input, size)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    if training:
        size = input.shape
        count = size[0]
        for s in size[2:]:
            count *= s
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size torch.Size("
                f"{_size_list(size)})"
            )
    return C.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
