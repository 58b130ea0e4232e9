"""conv_tbc: a 1-d convolution over (time, batch, channel) input, with its one node
ConvTbcBackward0 (edges to the input, the weight (K, C_in, C_out) and the bias)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__ = ["conv_tbc"]


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """out[t] = bias + sum over k of input[t + k - pad] @ weight[k] (zeros outside the input)."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    x, w = input._data, weight._data
    k = w.shape[0]
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    t_out = xp.shape[0] - k + 1
    y = np.broadcast_to(bias._data, (t_out, x.shape[1], w.shape[2])).copy()
    for i in range(k):
        y += xp[i:i + t_out] @ w[i]
    out = _out(y.astype(x.dtype, copy=False), input)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_TBC, (input, weight, bias), [out], {"self": SavedVariable(input), "weight": SavedVariable(weight),
                                                    "pad": pad})
    return out


def _grads(n: Any, g: Tensor) -> tuple:
    x, w, pad = n["self"]._data, n["weight"]._data, n.saved["pad"]
    gd = g._data
    k = w.shape[0]
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    t_out = gd.shape[0]
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for i in range(k):
        dxp[i:i + t_out] += gd @ w[i].T
        dw[i] = np.einsum("tbc,tbo->co", xp[i:i + t_out], gd)
    return dxp[pad:pad + x.shape[0]], dw, gd.sum(axis=(0, 1))


def _part(i: int) -> Any:
    def grad(n: Any, g: Tensor) -> Tensor:
        cache = n.saved.get("_parts")
        if cache is None or cache[0] is not g:
            cache = (g, _grads(n, g))
            n.saved["_parts"] = cache
        return _out(np.ascontiguousarray(cache[1][i]).astype(g._data.dtype, copy=False), g)

    return grad


_TBC = _register("conv_tbc", D("ConvTbcBackward0", (_part(0), _part(1), _part(2))))
