"""Transposed convolution and pixel shuffle with torch's nodes: ConvolutionBackward0 (torch
records a transposed convolution as the same node as a convolution, ``transposed=True``),
PixelShuffleBackward0 and PixelUnshuffleBackward0; their rows join the derivative table.

A transposed convolution is the input-gradient of a convolution: its forward is one matmul per
group and a col2im (one strided add per kernel offset). Its backward is a convolution's forward:
the output gradient's receptive fields gathered once (im2col) serve both the input's gradient
(the convolution of the gradient with the same weight) and the weight's (one matmul with the
input). 1-d ops run as 2-d ones with a height of 1, as in nn_conv_ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _blas
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import module_of
from gradviz.ops._common import _ascontiguous
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_conv_ops import _pad, _saved_arrays, _windows
from gradviz.ops.nn_ops import _cached_part, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap


def transposed_size(size: int, k: int, s: int, p: int, d: int, op: int) -> int:
    """torch's output length of a transposed convolution along one dim."""
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple, padding: tuple,
                   output_padding: tuple, groups: int, dilation: tuple) -> Tensor:
    """A batched 1-d or 2-d transposed convolution (N, C, [H,] W) with a (C, O / groups, [kh,] kw)
    weight; one ConvolutionBackward0 node."""
    x, w = input._data, weight._data
    one_d = x.ndim == 3
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, padding, dilation = (1, stride[0]), (0, padding[0]), (1, dilation[0])
        output_padding = (0, output_padding[0])
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    o = og * groups
    cg = c // groups
    ho = transposed_size(h, kh, stride[0], padding[0], dilation[0], output_padding[0])
    wo = transposed_size(wd, kw, stride[1], padding[1], dilation[1], output_padding[1])
    if ho <= 0 or wo <= 0:
        raise RuntimeError(
            f"Given input size per channel: ({h} x {wd}). Calculated output size per channel: ({ho} x {wo}). "
            "Output size is too small"
        )
    xm = module_of(x)
    # W^T x per group, channel-major: (groups, og * kh * kw, N * H * W)
    xg = _ascontiguous(x.transpose(1, 0, 2, 3)).reshape(groups, cg, n * h * wd)
    cols = _blas.stack_matmul(w.reshape(groups, cg, og * kh * kw).transpose(0, 2, 1), xg).reshape(o, kh, kw, n, h, wd)
    ph, pw = padding
    sh, sw = stride
    dh, dw = dilation
    # col2im onto the output with its padding (the full span plus output_padding, which only
    # the bias reaches), then the padding cut away
    yp = xm.zeros((o, n, ho + 2 * ph, wo + 2 * pw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            yp[:, :, i * dh:i * dh + sh * (h - 1) + 1:sh, j * dw:j * dw + sw * (wd - 1) + 1:sw] += cols[:, i, j]
    y = yp[:, :, ph:ph + ho, pw:pw + wo].transpose(1, 0, 2, 3)
    if bias is not None:
        y = np.add(y, bias._data.reshape(1, o, 1, 1), out=xm.empty((n, o, ho, wo), dtype=x.dtype))
    else:
        y = _ascontiguous(y)
    if one_d:
        y = y.reshape(n, o, wo)
    out = _wrap(y, input.dtype, input.device)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_CONV_T, (input, weight, bias), [out], {
            "input": SavedVariable(input), "weight": SavedVariable(weight), "stride": stride, "padding": padding,
            "dilation": dilation, "output_padding": output_padding, "groups": groups, "transposed": True,
            "bias_defined": bias is not None, "one_d": one_d,
        })
    return out


def _conv_t_grads(n: Any, g: Tensor) -> tuple:
    saved, gd, x, w = _saved_arrays(n, g)
    groups, stride, padding, dilation = saved["groups"], saved["stride"], saved["padding"], saved["dilation"]
    nb, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    edges = n.next_edges
    # the gradient's receptive fields, as a convolution's forward gathers its input's: the
    # windows land on the input's h x wd grid (output_padding < stride or dilation ensures it)
    gp = _pad(gd, padding)
    cols = _ascontiguous(_windows(gp, kh, kw, h, wd, stride, dilation).transpose(1, 2, 3, 0, 4, 5))
    cols = cols.reshape(groups, og * kh * kw, nb * h * wd)
    dx = gw = None
    if edges[0][0] is not None:
        dx = _blas.stack_matmul(w.reshape(groups, cg, og * kh * kw), cols).reshape(c, nb, h, wd).transpose(1, 0, 2, 3)
    if edges[1][0] is not None:
        xg = _ascontiguous(x.transpose(1, 0, 2, 3)).reshape(groups, cg, nb * h * wd)
        gw = _blas.stack_matmul(xg, cols.transpose(0, 2, 1)).reshape(w.shape)
    gb = gd.sum(axis=(0, 2, 3)) if saved["bias_defined"] else None
    if saved["one_d"]:
        dx = None if dx is None else dx[:, :, 0, :]
        gw = None if gw is None else gw[:, :, 0, :]
    return dx, gw, gb


_CONV_T = _register("convolution_transposed", D("ConvolutionBackward0", (
    _cached_part(_conv_t_grads, 0), _cached_part(_conv_t_grads, 1), _cached_part(_conv_t_grads, 2),
), forward=TR))


# -- pixel shuffle -----------------------------------------------------------------------------


def _shuffle(x: Any, r: int) -> Any:
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r), contiguous."""
    *lead, c, h, w = x.shape
    oc = c // (r * r)
    k = len(lead)
    y = x.reshape(*lead, oc, r, r, h, w).transpose(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return _ascontiguous(y).reshape(*lead, oc, h * r, w * r)


def _unshuffle(x: Any, r: int) -> Any:
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W), contiguous."""
    *lead, c, h, w = x.shape
    oh, ow = h // r, w // r
    k = len(lead)
    y = x.reshape(*lead, c, oh, r, ow, r).transpose(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return _ascontiguous(y).reshape(*lead, c * r * r, oh, ow)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    out = _wrap(_shuffle(input._data, upscale_factor), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_PIXEL_SHUFFLE, (input,), [out], {"upscale_factor": upscale_factor})
    return out


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    out = _wrap(_unshuffle(input._data, downscale_factor), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_PIXEL_UNSHUFFLE, (input,), [out], {"downscale_factor": downscale_factor})
    return out


# Each backward is the other op, as in torch: under create_graph=True it records that op's node.
_PIXEL_SHUFFLE = _register("pixel_shuffle", D("PixelShuffleBackward0", (
    lambda n, g: pixel_unshuffle(g, n["upscale_factor"]),
), forward=TR), graph=True)
_PIXEL_UNSHUFFLE = _register("pixel_unshuffle", D("PixelUnshuffleBackward0", (
    lambda n, g: pixel_shuffle(g, n["downscale_factor"]),
), forward=TR), graph=True)
