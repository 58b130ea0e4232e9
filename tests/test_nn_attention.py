"""scaled_dot_product_attention against torch 2.13 (its CPU kernel choice, nodes and values)."""

from __future__ import annotations

import pytest

from tests._nn_diff import check_fn, leaf, same_error


def _qkv(T, *shape):
    return [leaf(T, *shape, seed=s) for s in (1, 2, 3)]


@pytest.mark.parametrize("shape", [(2, 2, 3, 4), (2, 3, 4), (3, 4)])
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"}, {"scale": 0.3}])
def test_sdpa(shape, kw):
    def fn(T):
        q, k, v = _qkv(T, *shape)
        extra = {k_: v_ for k_, v_ in kw.items() if k_ != "mask"}
        if kw.get("mask") == "bool":
            extra["attn_mask"] = T.tensor([[True, False, True], [True, True, False], [False, True, True]])
        elif kw.get("mask") == "float":
            extra["attn_mask"] = leaf(T, 3, 3, seed=9, requires_grad=False)
        return T.nn.functional.scaled_dot_product_attention(q, k, v, **extra), [q, k, v]

    check_fn(fn)


def test_sdpa_errors():
    same_error(lambda T: T.nn.functional.scaled_dot_product_attention(
        T.zeros(1, 2, 3), T.zeros(1, 2, 3), T.zeros(1, 2, 3), attn_mask=T.zeros(2, 2), is_causal=True))
