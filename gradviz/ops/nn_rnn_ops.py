"""The recurrent layers' own node: the oneDNN LSTM layer (MkldnnRnnLayerBackward0), which torch's CPU
LSTM runs for float32: one node per layer and direction, whose backward is backpropagation
through time over the whole sequence."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import module_of
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap


# -- the oneDNN LSTM layer -------------------------------------------------------------------


def _sig(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def mkldnn_lstm_layer(input: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
                      hx: Tensor, cx: Tensor, reverse: bool) -> tuple[Tensor, Tensor, Tensor]:
    """One LSTM layer over a (T, B, I) sequence: (output (T, B, H), h_T, c_T)."""
    x = input._data
    dt = x.dtype
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_hh._data.shape[1]
    xm = module_of(x)  # numpy, or cupy for device data: the state is made where x is
    wi, wh = w_ih._data.astype(np.float64), w_hh._data.astype(np.float64)
    bias = xm.zeros(4 * hidden)
    if b_ih is not None:
        bias = bias + b_ih._data
    if b_hh is not None:
        bias = bias + b_hh._data
    h = hx._data.astype(np.float64)
    c = cx._data.astype(np.float64)
    out = xm.empty((steps, batch, hidden))
    hs, cs, acts = [], [], []
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    proj = x.astype(np.float64) @ wi.T + bias
    for t in order:
        a = proj[t] + h @ wh.T
        i, f, g, o = _sig(a[:, :hidden]), _sig(a[:, hidden:2 * hidden]), np.tanh(a[:, 2 * hidden:3 * hidden]), \
            _sig(a[:, 3 * hidden:])
        hs.append(h)
        cs.append(c)
        c = f * c + i * g
        h = o * np.tanh(c)
        acts.append((i, f, g, o, c))
        out[t] = h
    outs = [_wrap(out.astype(dt), input.dtype, input.device), _wrap(h.astype(dt), input.dtype, input.device),
            _wrap(c.astype(dt), input.dtype, input.device)]
    inputs = (input, w_ih, w_hh, b_ih, b_hh, hx, cx)
    if _grad_state.enabled and any(_requires(t) for t in inputs):
        record(_MKLDNN_LSTM, inputs, outs, {
            "input": SavedVariable(input), "weight0": SavedVariable(w_ih), "weight1": SavedVariable(w_hh),
            "hs": hs, "cs": cs, "acts": acts, "reverse": reverse, "has_biases": (b_ih is not None, b_hh is not None),
        })
    return outs[0], outs[1], outs[2]


def _lstm_bptt(n: Any, grads: list) -> tuple:
    saved = n.saved
    cache = saved.get("_parts")
    if cache is not None and cache[0] is grads:
        return cache[1]
    x = n["input"]._data
    wi, wh = n["weight0"]._data.astype(np.float64), n["weight1"]._data.astype(np.float64)
    steps, batch = x.shape[0], x.shape[1]
    hidden = wh.shape[1]
    gout, ghy, gcy = (None if g is None else g._data.astype(np.float64) for g in grads)
    xm = module_of(x)
    dh_next = xm.zeros((batch, hidden)) if ghy is None else ghy
    dc_next = xm.zeros((batch, hidden)) if gcy is None else gcy
    dx = xm.zeros(x.shape)
    dwi, dwh, db = xm.zeros(wi.shape), xm.zeros(wh.shape), xm.zeros(4 * hidden)
    order = list(range(steps - 1, -1, -1) if saved["reverse"] else range(steps))
    for k in range(steps - 1, -1, -1):
        t = order[k]
        i, f, g, o, c = saved["acts"][k]
        h_prev, c_prev = saved["hs"][k], saved["cs"][k]
        dh = dh_next if gout is None else dh_next + gout[t]
        tc = np.tanh(c)
        dc = dc_next + dh * o * (1 - tc * tc)
        da = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                             dh * tc * o * (1 - o)], axis=1)
        dx[t] = da @ wi
        dwi += da.T @ x[t]
        dwh += da.T @ h_prev
        db += da.sum(0)
        dh_next = da @ wh
        dc_next = dc * f
    parts = (dx, dwi, dwh, db, db, dh_next, dc_next)
    saved["_parts"] = (grads, parts)
    return parts


def _lstm_part(i: int) -> Any:
    def grad(n: Any, grads: list) -> Tensor | None:
        if i in (3, 4) and not n.saved["has_biases"][i - 3]:
            return None
        like = next(g for g in grads if g is not None)
        return _out(_lstm_bptt(n, grads)[i].astype(like._data.dtype), like)

    return grad


_MKLDNN_LSTM = _register("mkldnn_rnn_layer", D(
    "MkldnnRnnLayerBackward0", tuple(_lstm_part(i) for i in range(7)), multi_output=True, forward=TR,
))


# -- transpose_ ----------------------------------------------------------------------------------


def transposed_in_place(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """What torch's ``out.transpose_(dim0, dim1)`` leaves on an op's fresh output: the same
    values transposed, with history TransposeBackward1. Returned as a new tensor (the callers
    own the only reference to the old one)."""
    out = _wrap(np.swapaxes(input._data, dim0, dim1), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_TRANSPOSE1, (input,), [out], {"dim0": dim0, "dim1": dim1})
    return out


_TRANSPOSE1 = _register("transpose_", D("TransposeBackward1", (
    lambda n, g: F.transpose(g, n["dim0"], n["dim1"]),
), forward=TR), graph=True)
