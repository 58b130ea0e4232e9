"""3-d convolutions, plain and transposed (N, C, D, H, W): one ConvolutionBackward0 node each, as
torch records them. Computed one kernel offset at a time: each offset's strided slice of the
padded input meets that offset's weights in one contraction per group (the same loop, run the
other way, scatters the transposed convolution's output and the input's gradient)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []


def _slices(offset: tuple, outs: tuple, stride: tuple, dilation: tuple) -> tuple:
    return (slice(None), slice(None)) + tuple(
        slice(k * d, k * d + s * (o - 1) + 1, s) for k, o, s, d in zip(offset, outs, stride, dilation))


def _forward(x: np.ndarray, w: np.ndarray, stride: tuple, padding: tuple, dilation: tuple, groups: int) -> np.ndarray:
    """The convolution of x (N, C, *S) with w (O, C/groups, *K)."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    outs = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, st, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))
    if any(v <= 0 for v in outs):
        raise RuntimeError(
            "Calculated padded input size per channel: (" + " x ".join(str(s + 2 * p) for s, p in zip(x.shape[2:],
                                                                                                   padding))
            + "). Kernel size: (" + " x ".join(str(d * (k - 1) + 1) for k, d in zip(kernel, dilation))
            + "). Kernel size can't be greater than actual input size"
        )
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    og = o // groups
    y = np.zeros((n, groups, og) + outs, dtype=x.dtype)
    wg = w.reshape((groups, og, cg) + kernel)
    for off in itertools.product(*(range(k) for k in kernel)):
        xs = xp[_slices(off, outs, stride, dilation)].reshape((n, groups, cg) + outs)
        y += np.einsum("ngc...,goc->ngo...", xs, wg[(...,) + off])
    return y.reshape((n, o) + outs)


def _scatter(gy: np.ndarray, w: np.ndarray, in_spatial: tuple, stride: tuple, padding: tuple, dilation: tuple,
             groups: int) -> np.ndarray:
    """The adjoint of _forward in x: gy (N, O, *outs) spread back over (N, C, *in_spatial)."""
    n = gy.shape[0]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    outs = gy.shape[2:]
    og = o // groups
    padded = tuple(s + 2 * p for s, p in zip(in_spatial, padding))
    # room for windows that run past the padded input (a transposed convolution's output_padding)
    room = tuple(max(ps, (ot - 1) * st + d * (k - 1) + 1) for ps, ot, st, d, k in zip(padded, outs, stride, dilation,
                                                                                      kernel))
    dxp = np.zeros((n, groups, cg) + room, dtype=gy.dtype)
    gg = gy.reshape((n, groups, og) + outs)
    wg = w.reshape((groups, og, cg) + kernel)
    for off in itertools.product(*(range(k) for k in kernel)):
        sl = _slices(off, outs, stride, dilation)
        dxp[(slice(None),) + sl] += np.einsum("ngo...,goc->ngc...", gg, wg[(...,) + off])
    crop = (slice(None), slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_spatial))
    return np.ascontiguousarray(dxp[crop]).reshape((n, groups * cg) + in_spatial)


def _weight_grad(x: np.ndarray, gy: np.ndarray, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 groups: int) -> np.ndarray:
    """d(sum gy * conv(x, w))/dw, shape (O, C/groups, *kernel)."""
    n, c = x.shape[:2]
    o = gy.shape[1]
    outs = gy.shape[2:]
    cg, og = c // groups, o // groups
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    gg = gy.reshape(n, groups, og, -1)
    gw = np.zeros((groups, og, cg) + tuple(kernel), dtype=x.dtype)
    for off in itertools.product(*(range(k) for k in kernel)):
        xs = xp[_slices(off, outs, stride, dilation)].reshape(n, groups, cg, -1)
        gw[(...,) + off] = np.einsum("ngcl,ngol->goc", xs, gg)
    return gw.reshape((o, cg) + tuple(kernel))


def convolution3d(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple, padding: tuple, dilation: tuple,
                  groups: int, transposed: bool = False, output_padding: tuple = (0, 0, 0)) -> Tensor:
    """A batched 3-d convolution, or its transpose (weight (C, O/groups, *K)), with bias."""
    x, w = input._data, weight._data
    if transposed:
        # the transposed weight (C, O/groups, *K) is the weight of the plain convolution from the
        # output's channels to the input's, whose input gradient this is
        kernel = w.shape[2:]
        spatial = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                        zip(x.shape[2:], stride, padding, dilation, kernel, output_padding))
        y = _scatter(x, w, spatial, stride, padding, dilation, groups)
    else:
        y = _forward(x, w, stride, padding, dilation, groups)
    if bias is not None:
        y = y + bias._data.reshape((1, -1) + (1,) * (y.ndim - 2))
    out = _out(np.ascontiguousarray(y.astype(x.dtype, copy=False)), input)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_CONV3D, (input, weight, bias), [out], {
            "input": SavedVariable(input), "weight": SavedVariable(weight), "stride": stride, "padding": padding,
            "dilation": dilation, "groups": groups, "transposed": transposed, "bias_defined": bias is not None,
        })
    return out


def _grads(n: Any, g: Tensor) -> tuple:
    s = n.saved
    x, w, gd = n["input"]._data, n["weight"]._data, g._data
    stride, padding, dilation, groups = s["stride"], s["padding"], s["dilation"], s["groups"]
    if s["transposed"]:
        # y = conv^T(x, w): dx is the plain convolution of gy; dw pairs gy's windows with x
        dx = _forward(gd, w, stride, padding, dilation, groups)
        dw = _weight_grad(gd, x, w.shape[2:], stride, padding, dilation, groups)
    else:
        dx = _scatter(gd, w, x.shape[2:], stride, padding, dilation, groups)
        dw = _weight_grad(x, gd, w.shape[2:], stride, padding, dilation, groups)
    db = gd.sum(axis=(0,) + tuple(range(2, gd.ndim))) if s["bias_defined"] else None
    return dx, dw, db


def _part(i: int) -> Any:
    def grad(n: Any, g: Tensor) -> Tensor | None:
        cache = n.saved.get("_parts")
        if cache is None or cache[0] is not g:
            cache = (g, _grads(n, g))
            n.saved["_parts"] = cache
        part = cache[1][i]
        return None if part is None else _out(np.ascontiguousarray(part).astype(g._data.dtype, copy=False), g)

    return grad


_CONV3D = _register("convolution3d", D("ConvolutionBackward0", (_part(0), _part(1), _part(2))))
