"""A convolution's backward as an op of its own, for create_graph=True (a gradient penalty, R1
regularisation, Hessian-vector products through a CNN): torch's convolution_backward, recorded as
ConvolutionBackwardBackward0 with inputs (grad_output, input, weight) and outputs (grad_input,
grad_weight, grad_bias), and its derivative, torch's _convolution_double_backward.

The three first-order gradients are linear in the output's gradient gO and in the weight W, and
bilinear in gO and the input x: grad_input = convT(gO, W), grad_weight = wgrad(x, gO),
grad_bias = sum(gO). So given gradients ggI, ggW, ggb for them:
  d/d gO = conv(ggI, W) + conv(x, ggW) + ggb   (a convolution's forward, twice, and a bias)
  d/d W  = wgrad(ggI, gO)                       (a weight gradient with ggI as the input)
  d/d x  = convT(gO, ggW)                       (an input gradient with ggW as the weight)
each written with gradviz's recorded ops, so a third derivative works the same way.
"""

from __future__ import annotations

from typing import Any

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_conv_ops import conv_grad_arrays, convolution
from gradviz.ops.nn_ops import _cached_outputs, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap


def _user_params(saved: dict) -> tuple:
    """The stride, padding and dilation convolution() takes: a 1-d convolution's back to 1-tuples."""
    if saved["one_d"]:
        return (saved["stride"][1],), (saved["padding"][1],), (saved["dilation"][1],)
    return saved["stride"], saved["padding"], saved["dilation"]


def convolution_backward(grad: Tensor, input: Tensor, weight: Tensor, saved: dict,  # noqa: A002
                         need: tuple[bool, bool, bool]) -> list[Tensor | None]:
    """(grad_input, grad_weight, grad_bias) of a convolution with ``saved``'s parameters, those
    ``need`` marks; one ConvolutionBackwardBackward0 node over (grad, input, weight) when a graph
    is being built."""
    gd, x, w = grad._data, input._data, weight._data
    one_d = saved["one_d"]
    if one_d:
        gd, x, w = gd[:, :, None, :], x[:, :, None, :], w[:, :, None, :]
    arrays = conv_grad_arrays(gd, x, w, None, saved["stride"], saved["padding"], saved["dilation"], saved["groups"],
                              need)
    dev = grad.device
    outs: list[Tensor | None] = []
    for a, like in zip(arrays, (input, weight, None)):
        if a is None:
            outs.append(None)
            continue
        if one_d and like is not None:
            a = a[:, :, 0, :]
        outs.append(_wrap(a if a.flags.c_contiguous else a.copy(), grad.dtype, dev))
    if _grad_state.enabled and (_requires(grad) or _requires(input) or _requires(weight)):
        # every output position holds a tensor (torch's undefined ones: never handed to anyone)
        shapes = (x.shape if not one_d else input.shape, weight.shape, (weight.shape[0],))
        placeholders = [o if o is not None else _wrap(_zeros(s, gd), grad.dtype, dev) for o, s in zip(outs, shapes)]
        params = {k: saved[k] for k in ("stride", "padding", "dilation", "groups", "one_d")}
        record(_CONV_BACKWARD, (grad, input, weight), placeholders, {
            "grad_output": SavedVariable(grad), "input": SavedVariable(input), "weight": SavedVariable(weight),
            **params,
        })
    return outs


def _zeros(shape: tuple, like: Any) -> Any:
    from gradviz.device import module_of

    xm = module_of(like)
    return xm.broadcast_to(xm.zeros((), dtype=like.dtype), shape)


def convolution_backward_of(n: Any, g: Tensor) -> list[Tensor | None]:
    """A ConvolutionBackward0 node's three gradients as recorded tensors, computed once per
    incoming gradient (each of its three formulas asks)."""
    cache = n.saved.get("_graph_parts")
    if cache is None or cache[0] is not g:
        edges = n.next_edges
        need = (edges[0][0] is not None, edges[1][0] is not None, edges[2][0] is not None)
        cache = (g, convolution_backward(g, n["input"], n["weight"], n.saved, need))
        n.saved["_graph_parts"] = cache
    return cache[1]


def _double_backward(n: Any, grads: list) -> list[Tensor | None]:
    """torch's _convolution_double_backward: the gradients of (grad_output, input, weight)."""
    ggi, ggw, ggb = grads
    saved = n.saved
    go, x, w = n["grad_output"], n["input"], n["weight"]
    stride, padding, dilation = _user_params(saved)
    groups = saved["groups"]
    edges = n.next_edges
    g_go = g_x = g_w = None
    if edges[0][0] is not None:
        if ggi is not None:
            g_go = convolution(ggi, w, None, stride, padding, dilation, groups)
        if ggw is not None:
            t = convolution(x, ggw, None, stride, padding, dilation, groups)
            g_go = t if g_go is None else F.add(g_go, t)
        if ggb is not None:
            b = F.reshape(ggb, (1, -1) + (1,) * (go.ndim - 2))
            g_go = F.expand(b, tuple(go.shape)) if g_go is None else F.add(g_go, b)
    if edges[1][0] is not None and ggw is not None:
        g_x = convolution_backward(go, x, ggw, saved, (True, False, False))[0]
    if edges[2][0] is not None and ggi is not None:
        g_w = convolution_backward(go, ggi, w, saved, (False, True, False))[1]
    return [g_go, g_x, g_w]


_CONV_BACKWARD = _register("convolution_backward", D(
    "ConvolutionBackwardBackward0", tuple(_cached_outputs(_double_backward, i) for i in range(3)), multi_output=True,
        forward=TR,
), graph=True)
