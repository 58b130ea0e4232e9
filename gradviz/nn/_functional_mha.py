"""torch.nn.functional.multi_head_attention_forward: the op sequence torch's Python composes
(packed input projection, per-head views, scaled bmm or baddbmm with the mask, softmax,
dropout, bmm, output projection; scaled_dot_product_attention when no weights are wanted), so
the graph has torch's nodes in torch's order."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz.ops import functions as F
from gradviz.ops.nn_attention_ops import baddbmm
from gradviz.ops.nn_ops import linear
from gradviz.tensor import Tensor

__all__ = ["multi_head_attention_forward"]


def _float_mask(mask: Tensor | None, dtype: Any) -> Tensor | None:
    """A boolean mask as an additive one (-inf where True), as torch's _canonical_mask."""
    if mask is None:
        return None
    m = mask._data
    if m.dtype == np.bool_:
        return F._new(np.where(m, -np.inf, 0.0).astype(dtype), mask.device)
    return mask


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None) -> tuple:
    e = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = F.contiguous(F.squeeze(F.transpose(F.unsqueeze(F.view(proj, (*proj.shape[:-1], 3, e)), 0), 0, -2),
                                          -2))
            return F.select(proj, 0, 0), F.select(proj, 0, 1), F.select(proj, 0, 2)
        w_q, w_kv = F.split(w, [e, e * 2])
        if b is None:
            b_q = b_kv = None
        else:
            b_q, b_kv = F.split(b, [e, e * 2])
        q_proj = linear(q, w_q, b_q)
        kv = linear(k, w_kv, b_kv)
        kv = F.contiguous(F.squeeze(F.transpose(F.unsqueeze(F.view(kv, (*kv.shape[:-1], 2, e)), 0), 0, -2), -2))
        return q_proj, F.select(kv, 0, 0), F.select(kv, 0, 1)
    w_q, w_k, w_v = F.chunk(w, 3)
    b_q, b_k, b_v = (None, None, None) if b is None else F.chunk(b, 3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
                                 num_heads: int, in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Any, bias_v: Any, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
                                 key_padding_mask: Tensor | None = None, need_weights: bool = True,
                                 attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Any = None, k_proj_weight: Any = None, v_proj_weight: Any = None,
                                 static_k: Any = None, static_v: Any = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    if bias_k is not None or add_zero_attn or static_k is not None:
        raise NotImplementedError("gradviz: MultiheadAttention with bias_k/add_zero_attn/static_k is not implemented")
    batched = query.dim() == 3
    if not batched:
        query, key, value = F.unsqueeze(query, 1), F.unsqueeze(key, 1), F.unsqueeze(value, 1)
        if key_padding_mask is not None:
            key_padding_mask = F.unsqueeze(key_padding_mask, 0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    dt = query._data.dtype
    key_padding_mask = _float_mask(key_padding_mask, dt)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # sdpa builds the causal mask itself
    else:
        attn_mask = _float_mask(attn_mask, dt)
        if key_padding_mask is not None:
            is_causal = False
    if use_separate_proj_weight:  # kdim/vdim: torch's _in_projection, the bias in three chunks
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else F.chunk(in_proj_bias, 3)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)
    else:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None and attn_mask.dim() == 2:
        attn_mask = F._new(attn_mask._data[None], attn_mask.device)
    q = F.transpose(F.view(q, (tgt_len, bsz * num_heads, head_dim)), 0, 1)
    k = F.transpose(F.view(k, (k.shape[0], bsz * num_heads, head_dim)), 0, 1)
    v = F.transpose(F.view(v, (v.shape[0], bsz * num_heads, head_dim)), 0, 1)
    if key_padding_mask is not None:
        kpm = np.broadcast_to(key_padding_mask._data.reshape(bsz, 1, 1, src_len), (bsz, num_heads, 1, src_len))
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        merged = kpm if attn_mask is None else attn_mask._data + kpm
        attn_mask = F._new(np.ascontiguousarray(merged), query.device)
    if not training:
        dropout_p = 0.0
    from gradviz.nn._functional_layers import dropout

    if need_weights:
        q_scaled = F.mul(q, math.sqrt(1.0 / float(head_dim)))
        if attn_mask is not None:
            weights = baddbmm(attn_mask, q_scaled, F.transpose(k, -2, -1))
        else:
            weights = F.bmm(q_scaled, F.transpose(k, -2, -1))
        weights = F.softmax(weights, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = F.bmm(weights, v)
        out = F.reshape(F.transpose(out, 0, 1), (tgt_len * bsz, embed_dim))
        out = linear(out, out_proj_weight, out_proj_bias)
        out = F.view(out, (tgt_len, bsz, out.shape[1]))
        weights = F.view(weights, (bsz, num_heads, tgt_len, src_len))
        if average_attn_weights:
            weights = F.mean(weights, 1)
        if not batched:
            out, weights = F.squeeze(out, 1), F.squeeze(weights, 0)
        return out, weights
    from gradviz.nn._functional_attention import scaled_dot_product_attention

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = F._new(attn_mask._data[None], attn_mask.device)
        else:
            attn_mask = F._new(attn_mask._data.reshape(bsz, num_heads, -1, src_len), attn_mask.device)
    q = F.view(q, (bsz, num_heads, tgt_len, head_dim))
    k = F.view(k, (bsz, num_heads, src_len, head_dim))
    v = F.view(v, (bsz, num_heads, src_len, head_dim))
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    # torch 2.13 reshapes here: a clone and _unsafe_view (UnsafeViewBackward0), not contiguous().view
    out = F.reshape(F.permute(out, 2, 0, 1, 3), (bsz * tgt_len, embed_dim))
    out = linear(out, out_proj_weight, out_proj_bias)
    out = F.view(out, (tgt_len, bsz, out.shape[1]))
    if not batched:
        out = F.squeeze(out, 1)
    return out, None
