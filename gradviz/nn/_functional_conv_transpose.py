"""torch.nn.functional's transposed convolutions and pixel (un)shuffle, with torch's checks."""

from __future__ import annotations

from typing import Any

from gradviz.ops import functions as F
from gradviz.ops import nn_conv3d_ops as C3
from gradviz.ops import nn_conv_transpose_ops as T
from gradviz.tensor import Tensor

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "pixel_shuffle", "pixel_unshuffle"]


def _size_list(shape: Any) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _expand(name: str, v: Any, dims: int) -> tuple[int, ...]:
    """An int or a list of 1 or ``dims`` ints, as torch's convolution argument parsing accepts."""
    if isinstance(v, str):
        raise TypeError(f"conv_transpose{dims}d(): argument '{name}' must be tuple of ints, not str")
    vals = [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)]
    if len(vals) == 1:
        vals = vals * dims
    if len(vals) != dims:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {dims} values to match the convolution "
            f"dimensions, but got {name}={_size_list(vals)}"
        )
    return tuple(vals)


def _conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                    output_padding: Any, groups: int, dilation: Any, dims: int) -> Tensor:
    name = f"conv_transpose{dims}d"
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got input of size: "
            f"{_size_list(input.shape)}"
        )
    stride, padding = _expand("stride", stride, dims), _expand("padding", padding, dims)
    output_padding, dilation = _expand("output_padding", output_padding, dims), _expand("dilation", dilation, dims)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    # torch checks a 1-d op as the 2-d one it runs (a height of 1), and says so
    s2, op2, d2 = ((1,) * (2 - dims) + stride, (0,) * (2 - dims) + output_padding, (1,) * (2 - dims) + dilation)
    if dims == 3 and any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            f"output_padding_depth: {output_padding[0]} output_padding_height: {output_padding[1]} "
            f"output_padding_width: {output_padding[2]} stride_depth: {stride[0]} stride_height: {stride[1]} "
            f"stride_width: {stride[2]} dilation_depth: {dilation[0]} dilation_height: {dilation[1]} "
            f"dilation_width: {dilation[2]}"
        )
    if dims < 3 and any(op >= s and op >= d for op, s, d in zip(op2, s2, d2)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            f"output_padding_height: {op2[0]} output_padding_width: {op2[1]} stride_height: {s2[0]} "
            f"stride_width: {s2[1]} dilation_height: {d2[0]} dilation_width: {d2[1]}"
        )
    if weight.ndim != dims + 2:
        raise RuntimeError(
            f"Expected {dims + 2}-dimensional weight for {name}, but got {weight.ndim}-dimensional weight of size "
            f"{_size_list(weight.shape)}"
        )
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.shape[0] % groups != 0:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of "
            f"size [{_size_list(weight.shape)}] instead"
        )
    unbatched = input.ndim == dims + 1
    x = F.unsqueeze(input, 0) if unbatched else input
    c = x.shape[1]
    if weight.shape[0] != c:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size_list(weight.shape)}, expected input{_size_list(x.shape)} "
            f"to have {weight.shape[0]} channels, but got {c} channels instead"
        )
    o = weight.shape[1] * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size_list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{o} elements, but got bias of size {_size_list(bias.shape)} instead"
        )
    if dims == 3:
        out = C3.convolution3d(x, weight, bias, stride, padding, dilation, groups, True, output_padding)
    else:
        out = T.conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation)
    return F.squeeze(out, 0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): one PixelShuffleBackward0 node."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c = input.shape[-3]
    if c % (r * r) != 0:
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            f"but input.size(-3)={c} is not divisible by {r * r}"
        )
    return T.pixel_shuffle(input, r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W): one PixelUnshuffleBackward0 node."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    h, w = input.shape[-2], input.shape[-1]
    if h % r != 0:
        raise RuntimeError(
            f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h} is not "
            f"divisible by {r}"
        )
    if w % r != 0:
        raise RuntimeError(
            f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w} is not "
            f"divisible by {r}"
        )
    return T.pixel_unshuffle(input, r)
