"""Layer and batch norm's backward as ops of their own, for create_graph=True (a WGAN-GP critic
with layer or instance normalisation, a transformer's Hessian-vector products): torch's
native_layer_norm_backward and native_batch_norm_backward, recorded as
NativeLayerNormBackwardBackward0 (edges grad_out, input, mean, rstd, weight, bias) and
NativeBatchNormBackwardBackward0 (grad_out, input, weight, running_mean, running_var), the
statistics' edges empty as in torch, each with outputs (grad_input, grad_weight, grad_bias), and
their derivatives in closed form (torch's layer_norm_double_backward and
batchnorm_double_backward compute the same quantities).

Over the normalised axes (N elements), with xhat = (x - mean) * r, a = grad_out * weight and
P(v) = v - mean(v) - xhat * mean(v * xhat) (symmetric; r * P(u) is the input's cotangent for a
cotangent u on xhat), the first backward is gI = r * P(a), gW = sum(grad_out * xhat),
gB = sum(grad_out). For incoming ggI, ggW, ggB the scalar ggI.gI + ggW.gW + ggB.gB has
  d/d grad_out = weight * r * P(ggI) + ggW * xhat + ggB
  d/d weight   = sum of grad_out * r * P(ggI)
  d/d x        = r * P(u) - (S - T m) r^2 xhat / N,
where u = ggW * grad_out - r (m ggI + T a / N), S = ggI.(a - mean(a)), T = ggI.xhat, m = mean(a xhat).
Batch norm in eval mode normalises with the running statistics, constants: P is the identity
and the r-terms vanish.
"""

from __future__ import annotations

from typing import Any

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import module_of
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _cached_outputs, _layer_norm_grads, _out, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap


def layer_norm_backward_of(n: Any, grads: list) -> list[Tensor | None]:
    """A NativeLayerNormBackward0's three gradients as recorded tensors, once per incoming gradient."""
    cache = n.saved.get("_graph_parts")
    g = grads[0]
    if cache is not None and cache[0] is g:
        return cache[1]
    arrays = _layer_norm_grads(n, grads)
    outs = [None if a is None else _out(a.astype(g._data.dtype, copy=False), g) for a in arrays]
    x, w, b = n["input"], n["weight"], n["bias"]
    if _requires(g) or _requires(x) or _requires(w):
        xm = module_of(g._data)
        shapes = (x.shape, None if w is None else w.shape, None if b is None else b.shape)
        placeholders = [o if o is not None else _wrap(xm.broadcast_to(xm.zeros((), g._data.dtype), s or (0,)),
                                                        g.dtype, g.device) for o, s in zip(outs, shapes)]
        record(_LN_BACKWARD, (g, x, None, None, w, b), placeholders, {
            "grad_out": SavedVariable(g), "input": SavedVariable(x), "mean": n["mean"].detach(),
            "rstd": n["rstd"].detach(), "weight": None if w is None else SavedVariable(w),
            "normalized_shape": n.saved["normalized_shape"],
        })
    n.saved["_graph_parts"] = (g, outs)
    return outs


def norm_double_backward(go: Any, x: Any, mean: Any, r: Any, wd: Any, ggi: Any, ggw: Any, ggb: Any, axes: tuple,
                         w_axes: tuple, training: bool, need: tuple) -> tuple:
    """(d grad_out, d input, d weight) of a normalisation's backward, as arrays. ``axes``: the axes
    normalised over (mean and r broadcast along them); ``w_axes``: those the weight's gradient
    sums over; ``training``: mean and r are the input's own (else constants: running stats);
    ``wd``, ``ggi``, ``ggw``, ``ggb`` broadcast to x (None where absent); ``need``: which of the
    three are wanted."""
    size = 1
    for ax in axes:
        size *= x.shape[ax]
    xhat = (x - mean) * r
    a = go * wd if wd is not None else go

    def mean_(v: Any) -> Any:
        return v.mean(axis=axes, keepdims=True)

    def proj(v: Any) -> Any:
        return v - mean_(v) - xhat * mean_(v * xhat) if training else v

    d_go = d_x = d_w = None
    u: Any = 0
    d_x_extra: Any = 0
    if ggi is not None:
        p = r * proj(ggi)
        d_go = p * wd if wd is not None else p
        if wd is not None and need[2]:
            d_w = (go * p).sum(axis=w_axes)
        if training:
            s = (ggi * (a - mean_(a))).sum(axis=axes, keepdims=True)
            t = (ggi * xhat).sum(axis=axes, keepdims=True)
            m = mean_(a * xhat)
            u = -r * (m * ggi + t * a / size)
            d_x_extra = -(s - t * m) * r * r * xhat / size
    if ggw is not None:
        d_go = ggw * xhat if d_go is None else d_go + ggw * xhat
        u = u + ggw * go
    if ggb is not None:
        d_go = (ggb + 0 * x) if d_go is None else d_go + ggb
    # with constant statistics (eval), only ggW reaches x (through xhat)
    if need[1] and (ggw is not None or (training and ggi is not None)):
        d_x = r * proj(u) + d_x_extra
    return d_go, d_x, d_w


def _double_backward(n: Any, grads: list) -> list[Any]:
    if _grad_state.enabled:
        raise NotImplementedError("gradviz: a third derivative through NativeLayerNormBackwardBackward0 is not "
                                  "implemented")
    ggi, ggw, ggb = (None if t is None else t._data for t in grads)
    go, x = n["grad_out"]._data, n["input"]._data
    w = n["weight"]
    k = len(n.saved["normalized_shape"])
    axes = tuple(range(x.ndim - k, x.ndim))
    edges = n.next_edges
    d = norm_double_backward(go, x, n["mean"]._data, n["rstd"]._data, None if w is None else w._data, ggi, ggw, ggb,
                             axes, tuple(range(x.ndim - k)), True,
                             (edges[0][0] is not None, edges[1][0] is not None, edges[4][0] is not None))
    like = next(t for t in grads if t is not None)
    d_go, d_x, d_w = (None if v is None else _out(v.astype(x.dtype, copy=False), like) for v in d)
    return [d_go, d_x, None, None, d_w, None]


# edges: grad_out, input, mean, rstd, weight, bias (torch's: mean and rstd non-differentiable,
# always without an edge; bias gets no gradient)
_LN_BACKWARD = _register("native_layer_norm_backward", D(
    "NativeLayerNormBackwardBackward0",
    (_cached_outputs(_double_backward, 0), _cached_outputs(_double_backward, 1), None, None,
     _cached_outputs(_double_backward, 4), None), multi_output=True, forward=TR,
), graph=True)


# -- batch norm -----------------------------------------------------------------------------------


def batch_norm_backward_of(n: Any, g: Tensor, parts: tuple) -> list[Tensor | None]:
    """A NativeBatchNormBackward0's gradients (``parts``, as arrays) as recorded tensors."""
    cache = n.saved.get("_graph_parts")
    if cache is not None and cache[0] is g:
        return cache[1]
    outs = [None if a is None else _out(a.astype(g._data.dtype, copy=False), g) for a in parts]
    x, w = n["input"], n["weight"]
    if _requires(g) or _requires(x) or _requires(w):
        xm = module_of(g._data)
        c = x.shape[1]
        zero = xm.zeros((), g._data.dtype)
        placeholders = [o if o is not None else _wrap(xm.broadcast_to(zero, s), g.dtype, g.device)
                        for o, s in zip(outs, (x.shape, (c,), (c,)))]
        saved = n.saved
        record(_BN_BACKWARD, (g, x, w, None, None), placeholders, {
            "grad_out": SavedVariable(g), "input": SavedVariable(x), "weight": None if w is None else SavedVariable(w),
            "save_mean": saved["mean"], "save_invstd": saved["invstd"], "train": saved["training"],
        })
    n.saved["_graph_parts"] = (g, outs)
    return outs


def _bn_double_backward(n: Any, grads: list) -> list[Any]:
    if _grad_state.enabled:
        raise NotImplementedError("gradviz: a third derivative through NativeBatchNormBackwardBackward0 is not "
                                  "implemented")
    ggi, ggw, ggb = (None if t is None else t._data for t in grads)
    go, x = n["grad_out"]._data, n["input"]._data
    shape = [1] * x.ndim
    shape[1] = x.shape[1]
    w = n["weight"]

    def per_channel(v: Any) -> Any:
        return None if v is None else v.reshape(shape)

    axes = (0,) + tuple(range(2, x.ndim))
    edges = n.next_edges
    d = norm_double_backward(go, x, per_channel(n.saved["save_mean"]), per_channel(n.saved["save_invstd"]),
                             per_channel(None if w is None else w._data), ggi, per_channel(ggw), per_channel(ggb),
                             axes, axes, n.saved["train"],
                             (edges[0][0] is not None, edges[1][0] is not None, edges[2][0] is not None))
    like = next(t for t in grads if t is not None)
    d_go, d_x, d_w = (None if v is None else _out(v.astype(x.dtype, copy=False), like) for v in d)
    return [d_go, d_x, d_w, None, None]


_BN_BACKWARD = _register("native_batch_norm_backward", D(
    "NativeBatchNormBackwardBackward0", (*(_cached_outputs(_bn_double_backward, i) for i in range(3)), None, None),
    multi_output=True, forward=TR,
), graph=True)
