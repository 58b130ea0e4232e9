"""Attention's nodes: _safe_softmax (SafeSoftmaxBackward0, the softmax of torch's math attention,
0 on rows that are all -inf) and the fused CPU flash attention
(ScaledDotProductFlashAttentionForCpuBackward0), which torch runs for 4-d inputs without
dropout: one node with an edge for each of query, key and value."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor


def _softmax_rows(x: np.ndarray, dim: int) -> np.ndarray:
    m = np.max(x, axis=dim, keepdims=True)
    finite = np.isfinite(m)
    e = np.exp(x - np.where(finite, m, 0))
    s = e.sum(axis=dim, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(s > 0, e / np.where(s > 0, s, 1), 0)
    return y.astype(x.dtype, copy=False)


def safe_softmax(input: Tensor, dim: int) -> Tensor:
    dim = dim % input.ndim
    out = _out(_softmax_rows(input._data, dim), input)
    if _grad_state.enabled and _requires(input):
        record(_SAFE_SOFTMAX, (input,), [out], {"result": SavedVariable(out, True), "dim": dim})
    return out


_SAFE_SOFTMAX = _register("_safe_softmax", D("SafeSoftmaxBackward0", (
    lambda n, g: F.softmax_backward_data(g, n["result"], n["dim"]),
), forward=TR), graph=True)


def _mask_bias(mask: Tensor | None, is_causal: bool, shape: tuple, dtype: Any) -> np.ndarray | None:
    """The additive mask: -inf where a boolean mask is False (or above the diagonal when causal)."""
    length, source = shape[-2], shape[-1]
    bias = None
    if is_causal:
        bias = np.where(np.tril(np.ones((length, source), dtype=bool)), 0.0, -np.inf).astype(dtype)
    if mask is not None:
        m = mask._data
        b = np.where(m, 0.0, -np.inf).astype(dtype) if m.dtype == np.bool_ else m.astype(dtype)
        bias = b if bias is None else bias + b
    return bias


def flash_attention_cpu(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool,
                        scale: float | None) -> Tensor:
    qd, kd, vd = q._data, k._data, v._data
    sc = 1.0 / math.sqrt(qd.shape[-1]) if scale is None else scale
    s = np.matmul(qd, np.swapaxes(kd, -1, -2)) * sc
    bias = _mask_bias(mask, is_causal, s.shape, s.dtype)
    if bias is not None:
        s = s + bias
    p = _softmax_rows(s, -1)
    o = np.matmul(p, vd)
    if o.ndim == 4 and o.shape == qd.shape:
        # torch's CPU kernel lays its output out in memory as the query is laid out: after
        # MultiheadAttention's head views, permuting it back to sequence-major is contiguous (no
        # copy, no CloneBackward0)
        buf = np.empty_like(qd)
        buf[...] = o
        o = buf
    out = _out(o, q)
    if _grad_state.enabled and (_requires(q) or _requires(k) or _requires(v)):
        record(_FLASH, (q, k, v), [out], {
            "query": SavedVariable(q), "key": SavedVariable(k), "value": SavedVariable(v), "p": p, "scale": sc,
        })
    return out


def _flash_grads(n: Any, g: Tensor) -> tuple:
    cache = n.saved.get("_parts")
    if cache is not None and cache[0] is g:
        return cache[1]
    q, k, v = n["query"]._data, n["key"]._data, n["value"]._data
    p, sc = n.saved["p"], n.saved["scale"]
    gd = g._data
    dv = np.matmul(np.swapaxes(p, -1, -2), gd)
    dp = np.matmul(gd, np.swapaxes(v, -1, -2))
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = np.matmul(ds, k) * sc
    dk = np.matmul(np.swapaxes(ds, -1, -2), q) * sc
    parts = (dq, dk, dv)
    n.saved["_parts"] = (g, parts)
    return parts


def _flash_part(i: int) -> Any:
    return lambda n, g: _out(_flash_grads(n, g)[i].astype(g._data.dtype, copy=False), g)


_FLASH = _register("_scaled_dot_product_flash_attention_for_cpu", D(
    "ScaledDotProductFlashAttentionForCpuBackward0", (_flash_part(0), _flash_part(1), _flash_part(2)),
))


# -- baddbmm -------------------------------------------------------------------------------------


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor) -> Tensor:
    """input + batch1 @ batch2 (beta = alpha = 1): BaddbmmBackward0, edges (input, batch1, batch2)."""
    data = np.matmul(batch1._data, batch2._data) + input._data
    out = _out(data, batch1)
    if _grad_state.enabled and (_requires(input) or _requires(batch1) or _requires(batch2)):
        record(_BADDBMM, (input, batch1, batch2), [out], {
            "self_shape": input._data.shape, "batch1": SavedVariable(batch1), "batch2": SavedVariable(batch2),
        })
    return out


# Its own row: torch.baddbmm (gradviz/ops/linalg.py) saves beta and alpha; attention's has both 1.
_BADDBMM = _register("attention_baddbmm", D("BaddbmmBackward0", (
    lambda n, g: F.sum_to(g, n["self_shape"]),
    lambda n, g: F.bmm(g, F.transpose(n["batch2"], 1, 2)),
    lambda n, g: F.bmm(F.transpose(n["batch1"], 1, 2), g),
), order=(1, 2, 0), forward=TR), graph=True)
