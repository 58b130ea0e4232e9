"""Convolution, pooling and batch norm with torch's nodes: ConvolutionBackward0,
MaxPool2DWithIndicesBackward0, AvgPool2DBackward0, AdaptiveAvgPool2DBackward0 and
NativeBatchNormBackward0; their rows join the derivative table.

Convolution is im2col: a strided view of the padded input gathers each output position's
receptive field into a matrix (one copy), and one batched matmul per group does the rest. The
backward is two matmuls and a col2im that adds each kernel offset's slice back (a loop over
the kernel's kh * kw offsets, not over positions). 1-d ops run as 2-d ones with a height of 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _blas
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import as_strided, module_of
from gradviz.ops._common import _ascontiguous
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _cached_part, _out, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap


def _pair(v: Any, n: int = 2) -> tuple[int, ...]:
    if isinstance(v, (tuple, list)):
        return tuple(int(x) for x in v)
    return (int(v),) * n


# -- convolution -------------------------------------------------------------------------------


def _windows(xp: np.ndarray, kh: int, kw: int, ho: int, wo: int, stride: tuple, dilation: tuple) -> np.ndarray:
    """(N, C, kh, kw, ho, wo) strided view of the padded input: each output position's field."""
    n, c, _, _ = xp.shape
    sn, sc, sh, sw = xp.strides
    return as_strided(xp, (n, c, kh, kw, ho, wo),  # the array's own module: cupy's for device data
                      (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]),
                      writeable=False)


def _pad(x: np.ndarray, padding: tuple, value: float = 0.0) -> np.ndarray:
    ph, pw = padding
    if not ph and not pw:
        return x
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil: bool = False) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    if ceil:
        o = -(-span // s) + 1
        if (o - 1) * s >= size + p:  # the last window must start inside the input or left padding
            o -= 1
        return o
    return span // s + 1


def _columns(x: Any, kh: int, kw: int, ho: int, wo: int, stride: tuple, padding: tuple, dilation: tuple,
             groups: int) -> Any:
    """(groups, K, N * L), channel-major: one copy of the receptive fields, and every product
    after it (forward, the weight's gradient, the input's) one matmul per group on contiguous or
    transposed operands, with no further copy of this, the largest array."""
    n, c = x.shape[:2]
    cols = _ascontiguous(_windows(_pad(x, padding), kh, kw, ho, wo, stride, dilation).transpose(1, 2, 3, 0, 4, 5))
    return cols.reshape(groups, c // groups * kh * kw, n * ho * wo)


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
                groups: int) -> Tensor:
    """A batched 1-d or 2-d convolution (N, C, [H,] W); one ConvolutionBackward0 node."""
    x, w = input._data, weight._data
    one_d = x.ndim == 3
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, padding, dilation = (1, stride[0]), (0, padding[0]), (1, dilation[0])
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho = _out_size(h, kh, stride[0], padding[0], dilation[0])
    wo = _out_size(wd, kw, stride[1], padding[1], dilation[1])
    if ho <= 0 or wo <= 0:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({h + 2 * padding[0]} x {wd + 2 * padding[1]}). Kernel "
            f"size: ({dilation[0] * (kh - 1) + 1} x {dilation[1] * (kw - 1) + 1}). Kernel size can't be greater "
            "than actual input size"
        )
    xm = module_of(x)  # numpy, or cupy for device data: new arrays are made where x is
    k = cg * kh * kw
    og = o // groups
    cols = _columns(x, kh, kw, ho, wo, stride, padding, dilation, groups)
    wm = w.reshape(groups, og, k)
    y = _blas.stack_matmul(wm, cols).reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    # torch's output is contiguous (N, O, H, W): the copy back from channel-major adds the bias
    if bias is not None:
        y = np.add(y, bias._data.reshape(1, o, 1, 1), out=xm.empty((n, o, ho, wo), dtype=y.dtype))
    else:
        y = _ascontiguous(y)
    if one_d:
        y = y.reshape(n, o, wo)
    out = _wrap(y, input.dtype, input.device)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_CONV, (input, weight, bias), [out], {
            "input": SavedVariable(input), "weight": SavedVariable(weight), "cols": cols,
            "stride": stride, "padding": padding, "dilation": dilation, "groups": groups,
            "bias_defined": bias is not None, "one_d": one_d,
        })
    return out


def _saved_arrays(n: Any, g: Tensor) -> tuple:
    """A convolution node's saved fields, gradient, input and weight as arrays; a 1-d one's lifted
    to 2-d (a unit height), as its forward computed it."""
    saved = n.saved
    gd = g._data
    x, w = n["input"]._data, n["weight"]._data
    if saved["one_d"]:
        x, w, gd = x[:, :, None, :], w[:, :, None, :], gd[:, :, None, :]
    return saved, gd, x, w


def _conv_grads(n: Any, g: Tensor) -> tuple:
    saved, gd, x, w = _saved_arrays(n, g)
    edges = n.next_edges
    dx, gw, gb = conv_grad_arrays(gd, x, w, saved["cols"], saved["stride"], saved["padding"], saved["dilation"],
                                  saved["groups"], (edges[0][0] is not None, edges[1][0] is not None,
                                                    saved["bias_defined"]))
    if saved["one_d"]:
        dx = None if dx is None else dx[:, :, 0, :]
        gw = None if gw is None else gw[:, :, 0, :]
    return dx, gw, gb


def conv_grad_arrays(gd: Any, x: Any, w: Any, cols: Any, stride: tuple, padding: tuple, dilation: tuple,
                     groups: int, need: tuple) -> tuple:
    """A 2-d convolution's (input, weight, bias) gradients from its output's, as arrays; only those
    ``need`` marks (torch's output_mask). ``cols``: the input's columns, or None to make them."""
    nb, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho, wo = gd.shape[2], gd.shape[3]
    og = o // groups
    k = cg * kh * kw
    xm = module_of(gd)
    # the gradient channel-major, as the columns are: (groups, og, N * L)
    gm = _ascontiguous(gd.transpose(1, 0, 2, 3)).reshape(groups, og, nb * ho * wo)
    gw = dx = None
    if need[1]:
        if cols is None:
            cols = _columns(x, kh, kw, ho, wo, stride, padding, dilation, groups)
        gw = _blas.stack_matmul(gm, cols.transpose(0, 2, 1)).reshape(w.shape)
    if need[0]:  # as torch's output_mask: no input gradient nobody takes
        # input: W^T grad, folded back onto the padded input (col2im), one strided add per kernel
        # offset, channel-major as the columns are (contiguous adds), transposed back at the end
        dcols = _blas.stack_matmul(w.reshape(groups, og, k).transpose(0, 2, 1), gm).reshape(c, kh, kw, nb, ho, wo)
        ph, pw = padding
        dxp = xm.zeros((c, nb, h + 2 * ph, wd + 2 * pw), dtype=x.dtype)
        sh, sw = stride
        dh, dw = dilation
        for i in range(kh):
            for j in range(kw):
                dxp[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw] += dcols[:, i, j]
        dx = dxp[:, :, ph:ph + h, pw:pw + wd].transpose(1, 0, 2, 3)
    gb = gd.sum(axis=(0, 2, 3)) if need[2] else None
    return dx, gw, gb


def _conv_part(i: int) -> Any:
    """Gradient i of a ConvolutionBackward0: from arrays, or, when a create_graph backward builds
    a graph, from torch's convolution_backward op (ConvolutionBackwardBackward0,
    gradviz/ops/nn_conv_double_ops.py), the three computed once per incoming gradient."""
    arrays = _cached_part(_conv_grads, i)

    def grad(n: Any, g: Tensor) -> Tensor | None:
        if not _grad_state.enabled:
            return arrays(n, g)
        return _conv_double.convolution_backward_of(n, g)[i]

    return grad


_CONV = _register("convolution", D("ConvolutionBackward0", (_conv_part(0), _conv_part(1), _conv_part(2)), forward=TR),
                  graph=True)


# -- pooling -------------------------------------------------------------------------------------


def _offset_slice(i: int, j: int, ho: int, wo: int, stride: tuple, dilation: tuple) -> tuple:
    """The (.., ho, wo) strided slice of a padded plane that kernel offset (i, j) sees."""
    r, c = i * dilation[0], j * dilation[1]
    return (..., slice(r, r + stride[0] * (ho - 1) + 1, stride[0]), slice(c, c + stride[1] * (wo - 1) + 1, stride[1]))


def max_pool2d_with_indices(input: Tensor, kernel_size: tuple, stride: tuple, padding: tuple, dilation: tuple,
                            ceil_mode: bool) -> tuple[Tensor, Tensor]:
    """Each window's maximum and its index in the unpadded plane, as torch's CPU kernel picks it:
    the first among equals in row-major kernel order, and a NaN over any number (the last NaN, as
    its ``val > max || isnan(val)`` keeps replacing). One pass per kernel offset over output-sized
    strided slices; the winning offset is kept as a small integer and turned into indices once."""
    x = input._data
    h, wd = x.shape[-2:]
    kh, kw = kernel_size
    ho = _out_size(h, kh, stride[0], padding[0], dilation[0], ceil_mode)
    wo = _out_size(wd, kw, stride[1], padding[1], dilation[1], ceil_mode)
    # pad to cover every window (ceil_mode windows may run past the padded input)
    need_h = (ho - 1) * stride[0] + dilation[0] * (kh - 1) + 1
    need_w = (wo - 1) * stride[1] + dilation[1] * (kw - 1) + 1
    ph, pw = padding
    lead = [(0, 0)] * (x.ndim - 2)
    extra_h, extra_w = max(need_h - h - ph, ph), max(need_w - wd - pw, pw)
    xp = x if not (ph or pw or extra_h or extra_w) else \
        np.pad(x, lead + [(ph, extra_h), (pw, extra_w)], constant_values=-np.inf)
    # each window's top-left corner as an index in the unpadded plane; offset k adds its own
    xm = module_of(x)
    base = (xm.arange(ho)[:, None] * stride[0] - ph) * wd + (xm.arange(wo)[None, :] * stride[1] - pw)
    best = xp[_offset_slice(0, 0, ho, wo, stride, dilation)].copy()
    # masked copies (copyto's where=, np.where) branch on a random mask and take ~40x a plain pass:
    # the value is a maximum (numpy's propagates NaN, as torch's test does), and since k only grows,
    # the winning offset is max(won, k where this offset won, else 0)
    wdt = np.int16 if kh * kw > 127 else np.int8
    won = xm.zeros(best.shape, dtype=wdt)
    better = xm.empty(best.shape, dtype=bool)
    step = xm.empty(best.shape, dtype=wdt)
    nan = xm.empty(best.shape, dtype=bool) if np.issubdtype(x.dtype, np.floating) else None
    for k in range(1, kh * kw):
        i, j = divmod(k, kw)
        v = _ascontiguous(xp[_offset_slice(i, j, ho, wo, stride, dilation)])
        np.greater(v, best, out=better)
        if nan is not None:
            np.logical_or(better, np.isnan(v, out=nan), out=better)
        np.maximum(best, v, out=best)
        np.multiply(better, wdt(k), out=step)
        np.maximum(won, step, out=won)
    offsets = xm.asarray([i * dilation[0] * wd + j * dilation[1] for i in range(kh) for j in range(kw)], np.int64)
    idx = offsets.take(won)
    idx += base
    out = _wrap(best, input.dtype, input.device)
    ind = _wrap(idx, _INT64, input.device)
    if _grad_state.enabled and _requires(input):
        record(_MAXPOOL, (input,), [out], {
            "self": SavedVariable(input), "result1": ind, "kernel_size": kernel_size, "stride": stride,
            "dilation": dilation,
        })
    return out, ind


def _maxpool_grad(n: Any, g: Tensor) -> Tensor:
    """Each window's gradient put at its maximum (the saved indices): a scatter when windows do
    not overlap (every input element in one window at most), a summing bincount when they do."""
    x = n["self"]._data
    saved = n.saved
    (kh, kw), stride, dilation = saved["kernel_size"], saved["stride"], saved["dilation"]
    idx = saved["result1"]._data
    gd = g._data
    plane = x.shape[-1] * x.shape[-2]
    lead = x.size // plane if plane else 0
    xm = module_of(x)
    flat = idx.reshape(lead, -1) + (xm.arange(lead, dtype=np.int64) * plane)[:, None]
    if stride[0] >= dilation[0] * (kh - 1) + 1 and stride[1] >= dilation[1] * (kw - 1) + 1:
        dx = xm.zeros(x.size, dtype=x.dtype)
        dx[flat.ravel()] = gd.ravel()
    else:
        dx = xm.bincount(flat.ravel(), weights=gd.ravel(), minlength=x.size).astype(x.dtype, copy=False)
    return _out(dx.reshape(x.shape), g)


def _graph_or_arrays(arrays: Any, as_op: str) -> Any:
    """A pooling backward from arrays, or, when a create_graph backward builds a graph, as torch's
    recorded backward op (gradviz/ops/nn_backward_ops.py)."""

    def grad(n: Any, g: Tensor) -> Tensor:
        if not _grad_state.enabled:
            return arrays(n, g)
        return getattr(_backward_ops, as_op)(n, g, arrays)

    return grad


_MAXPOOL = _register("max_pool2d_with_indices", D("MaxPool2DWithIndicesBackward0", (
    _graph_or_arrays(_maxpool_grad, "max_pool2d_backward"),), forward=TR), graph=True)


def avg_pool2d(input: Tensor, kernel_size: tuple, stride: tuple, padding: tuple, ceil_mode: bool,
               count_include_pad: bool, divisor_override: int | None) -> Tensor:
    x = input._data
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    n, c, h, wd = x.shape
    kh, kw = kernel_size
    if padding[0] > kh // 2 or padding[1] > kw // 2:
        raise RuntimeError("pad should be at most half of effective kernel size, but got pad="
                           f"{padding[0]}, kernel_size={kh} and dilation=1")
    ho = _out_size(h, kh, stride[0], padding[0], 1, ceil_mode)
    wo = _out_size(wd, kw, stride[1], padding[1], 1, ceil_mode)
    if ho < 1 or wo < 1:
        raise RuntimeError(f"Given input size: ({c}x{h}x{wd}). Calculated output size: ({c}x{ho}x{wo}). "
                           "Output size is too small")
    xp = _pad_for_windows(x, padding, _extra(h, kh, stride[0], padding[0], ho),
                          _extra(wd, kw, stride[1], padding[1], wo))
    win = _windows(xp, kh, kw, ho, wo, stride, (1, 1))
    s = win.sum(axis=(2, 3))
    xm = module_of(x)
    div = _divisors(xm, h, wd, kernel_size, stride, padding, ho, wo, count_include_pad, divisor_override)
    y = (s / div).astype(x.dtype, copy=False)
    if unbatched:
        y = y[0]
    out = _wrap(_ascontiguous(y), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_AVGPOOL, (input,), [out], {
            "self": SavedVariable(input), "kernel_size": kernel_size, "stride": stride, "padding": padding,
            "ceil_mode": ceil_mode, "count_include_pad": count_include_pad, "divisor_override": divisor_override,
        })
    return out


def _extra(size: int, k: int, s: int, p: int, o: int) -> int:
    """Zeros after the input so every window fits: p, or more when ceil_mode's last window runs past."""
    return max(p, (o - 1) * s + k - size - p)


def _pad_for_windows(x: np.ndarray, padding: tuple, extra_h: int, extra_w: int) -> np.ndarray:
    ph, pw = padding
    if not (ph or pw or extra_h or extra_w):
        return x
    return np.pad(x, ((0, 0), (0, 0), (ph, extra_h), (pw, extra_w)))


def _divisors(xm: Any, h: int, w: int, k: tuple, s: tuple, p: tuple, ho: int, wo: int, include_pad: bool,
              override: int | None) -> Any:
    """torch's divide factor per window: the window clipped to the padded input (count_include_pad;
    only ceil_mode's last windows are clipped there) or to the input itself. An array of them
    is made in xm, the data's module."""
    if override:
        return float(override)
    hs = np.arange(ho) * s[0] - p[0]
    ws = np.arange(wo) * s[1] - p[1]
    he, we = np.minimum(hs + k[0], h + p[0]), np.minimum(ws + k[1], w + p[1])
    if include_pad:
        hc, wc = he - hs, we - ws
    else:
        hc = np.minimum(he, h) - np.maximum(hs, 0)
        wc = np.minimum(we, w) - np.maximum(ws, 0)
    if (hc == k[0]).all() and (wc == k[1]).all():
        return float(k[0] * k[1])
    return xm.asarray((hc[:, None] * wc[None, :]).astype(np.float64))


def _avgpool_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    gd = g._data
    if x.ndim == 3:
        x, gd = x[None], gd[None]
    nb, c, h, wd = x.shape
    (kh, kw), (sh, sw), (ph, pw) = n["kernel_size"], n["stride"], n["padding"]
    ho, wo = gd.shape[2], gd.shape[3]
    xm = module_of(gd)
    div = _divisors(xm, h, wd, (kh, kw), (sh, sw), (ph, pw), ho, wo, n["count_include_pad"], n["divisor_override"])
    gs = (gd / div).astype(x.dtype, copy=False)
    dxp = xm.zeros((nb, c, h + ph + _extra(h, kh, sh, ph, ho), wd + pw + _extra(wd, kw, sw, pw, wo)), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] += gs
    dx = dxp[:, :, ph:ph + h, pw:pw + wd]
    if n["self"]._data.ndim == 3:
        dx = dx[0]
    return _out(_ascontiguous(dx), g)


_AVGPOOL = _register("avg_pool2d", D("AvgPool2DBackward0", (_graph_or_arrays(_avgpool_grad, "avg_pool2d_backward"),),
    forward=TR),
                     graph=True)


def _adaptive_bounds(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def adaptive_avg_pool2d(input: Tensor, output_size: tuple) -> Tensor:
    x = input._data
    h, wd = x.shape[-2:]
    oh = h if output_size[0] is None else output_size[0]
    ow = wd if output_size[1] is None else output_size[1]
    bh, bw = _adaptive_bounds(h, oh), _adaptive_bounds(wd, ow)
    y = module_of(x).empty(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i, (h0, h1) in enumerate(bh):
        for j, (w0, w1) in enumerate(bw):
            y[..., i, j] = x[..., h0:h1, w0:w1].mean(axis=(-1, -2))
    out = _wrap(y, input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_ADAPTIVE, (input,), [out], {"self": SavedVariable(input), "output_size": (oh, ow)})
    return out


def _adaptive_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    gd = g._data
    oh, ow = n["output_size"]
    h, wd = x.shape[-2:]
    dx = module_of(gd).zeros(x.shape, dtype=x.dtype)
    for i, (h0, h1) in enumerate(_adaptive_bounds(h, oh)):
        for j, (w0, w1) in enumerate(_adaptive_bounds(wd, ow)):
            dx[..., h0:h1, w0:w1] += (gd[..., i, j] / ((h1 - h0) * (w1 - w0)))[..., None, None]
    return _out(dx, g)


_ADAPTIVE = _register("adaptive_avg_pool2d", D("AdaptiveAvgPool2DBackward0", (
    _graph_or_arrays(_adaptive_grad, "adaptive_avg_pool2d_backward"),), forward=TR), graph=True)


# -- batch norm --------------------------------------------------------------------------------


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float, eps: float) -> Tensor:
    """Normalise over every dim but the channels (dim 1); in training, update the running
    statistics in place (the unbiased variance), as torch's CPU kernel does."""
    x = input._data
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1] * x.ndim
    shape[1] = x.shape[1]
    if training:
        mean = x.mean(axis=axes, dtype=x.dtype)
        xc = x - mean.reshape(shape)
        var = (xc * xc).mean(axis=axes, dtype=x.dtype)
        invstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
        count = x.size // x.shape[1]
        if running_mean is not None:
            running_mean._data[...] = momentum * mean + (1 - momentum) * running_mean._data
            running_mean._version_counter[0] += 1
        if running_var is not None:
            unbiased = var * (count / max(count - 1, 1))
            running_var._data[...] = momentum * unbiased + (1 - momentum) * running_var._data
            running_var._version_counter[0] += 1
    else:
        mean = running_mean._data
        invstd = (1.0 / np.sqrt(running_var._data + eps)).astype(x.dtype, copy=False)
        xc = x - mean.reshape(shape)
    y = xc * invstd.reshape(shape)
    if weight is not None:
        y = y * weight._data.reshape(shape)
    if bias is not None:
        y = y + bias._data.reshape(shape)
    out = _out(y.astype(x.dtype, copy=False), input)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_BATCH_NORM, (input, weight, bias), [out], {
            "input": SavedVariable(input), "weight": None if weight is None else SavedVariable(weight),
            "mean": mean, "invstd": invstd, "training": training, "has_bias": bias is not None,
        })
    return out


def _bn_grads(n: Any, g: Tensor) -> tuple:
    saved = n.saved
    cache = saved.get("_parts")
    if cache is not None and cache[0] is g:
        return cache[1]
    x = n["input"]._data
    gd = g._data
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1] * x.ndim
    shape[1] = x.shape[1]
    mean, invstd = saved["mean"].reshape(shape), saved["invstd"].reshape(shape)
    w = n["weight"]
    wd = w._data.reshape(shape) if w is not None else 1.0
    xhat = (x - mean) * invstd
    if saved["training"]:
        m = x.size // x.shape[1]
        dxhat = gd * wd
        sum_d = dxhat.sum(axis=axes).reshape(shape)
        sum_dx = (dxhat * xhat).sum(axis=axes).reshape(shape)
        dx = invstd / m * (m * dxhat - sum_d - xhat * sum_dx)
    else:
        dx = gd * wd * invstd
    dw = (gd * xhat).sum(axis=axes) if w is not None else None
    db = gd.sum(axis=axes) if saved["has_bias"] else None
    parts = (dx, dw, db)
    saved["_parts"] = (g, parts)
    return parts


def _bn_part(i: int) -> Any:
    def grad(n: Any, g: Tensor) -> Tensor | None:
        if _grad_state.enabled:  # create_graph: NativeBatchNormBackwardBackward0 (nn_norm_double_ops)
            from gradviz.ops.nn_norm_double_ops import batch_norm_backward_of

            return batch_norm_backward_of(n, g, _bn_grads(n, g))[i]
        part = _bn_grads(n, g)[i]
        return None if part is None else _out(part.astype(g._data.dtype, copy=False), g)

    return grad


_BATCH_NORM = _register("native_batch_norm", D("NativeBatchNormBackward0", (_bn_part(0), _bn_part(1), _bn_part(2)),
    forward=TR),
                        graph=True)

from gradviz import _dtype as _dt  # noqa: E402 - after the rows, as the other ops files order it

_INT64 = _dt.int64

# the convolution's backward as an op, for create_graph (its row joins the table at import)
from gradviz.ops import nn_backward_ops as _backward_ops  # noqa: E402 - the pools' backward ops
from gradviz.ops import nn_conv_double_ops as _conv_double  # noqa: E402, F401
