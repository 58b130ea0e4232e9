"""torch.nn.functional.scaled_dot_product_attention, with torch's CPU choice of kernel: the fused
flash kernel (one node) for 4-d inputs without dropout, else the math composition (scaled
matmuls, the mask added, _safe_softmax, dropout, matmul)."""

from __future__ import annotations

import math

import numpy as np

from gradviz.ops import functions as F
from gradviz.ops.nn_attention_ops import flash_attention_cpu, safe_softmax
from gradviz.tensor import Tensor

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    fused = (query.ndim == 4 and key.ndim == 4 and value.ndim == 4 and dropout_p == 0.0
             and all(t._data.strides[-1] == t._data.itemsize for t in (query, key, value)))
    if fused:
        return flash_attention_cpu(query, key, value, attn_mask, is_causal, scale)
    from gradviz.nn._functional_layers import dropout

    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    root = math.sqrt(sc)
    q = F.mul_scalar(query, root)
    mask = None
    length, source = query.shape[-2], key.shape[-2]
    if is_causal:
        keep = np.tril(np.ones((length, source), dtype=bool))
        mask = F._new(np.where(keep, 0.0, -np.inf).astype(query._data.dtype), query.device)
    elif attn_mask is not None:
        m = attn_mask._data
        if m.dtype == np.bool_:
            mask = F._new(np.where(m, 0.0, -np.inf).astype(query._data.dtype), query.device)
        else:
            mask = attn_mask
    attn = F.matmul(q, F.mul_scalar(F.transpose(key, -2, -1), root))
    if mask is not None:
        attn = F.add(attn, mask)
    attn = safe_softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return F.matmul(attn, value)
