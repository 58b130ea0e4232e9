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


def _mha_case(kw, call):
    def inputs(T):
        x = leaf(T, 3, 2, 4, seed=1)
        if call == "self":
            return (x, x, x)
        if call == "kv":
            m = leaf(T, 5, 2, 4, seed=2)
            return (x, m, m)
        return (x, leaf(T, 5, 2, 4, seed=2), leaf(T, 5, 2, 4, seed=3))

    return inputs


@pytest.mark.parametrize("call", ["self", "kv", "separate"])
@pytest.mark.parametrize("fkw", [{}, {"need_weights": False}, {"average_attn_weights": False}])
def test_multihead_attention(call, fkw):
    from tests._nn_diff import check_module

    def make(nn):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(4, 2)

            def forward(self, q, k, v):
                return self.mha(q, k, v, **fkw)[0]

        return M()

    check_module(make, _mha_case({}, call))


def test_multihead_attention_masks_and_weights():
    from tests._nn_diff import check_module

    def make(nn, kind):
        T = __import__("torch") if nn.__name__.startswith("torch") else __import__("gradviz")

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(4, 2, batch_first=True)

            def forward(self, x):
                mask = T.tensor([[False, True, True], [False, False, True], [False, False, False]])
                kpm = T.tensor([[False, False, True], [False, False, False]])
                if kind == "weights":
                    return self.mha(x, x, x, attn_mask=mask, key_padding_mask=kpm)[1]
                return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]

        return M()

    for kind in ("weights", "out"):
        check_module(lambda nn, kind=kind: make(nn, kind), lambda T: (leaf(T, 2, 3, 4, seed=1),))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_layers(norm_first):
    from tests._nn_diff import check_module

    check_module(lambda nn: nn.TransformerEncoderLayer(4, 2, 8, norm_first=norm_first), lambda T: (leaf(T, 3, 2, 4),),
                 train=False)
    check_module(lambda nn: nn.TransformerDecoderLayer(4, 2, 8, norm_first=norm_first, batch_first=True),
                 lambda T: (leaf(T, 2, 3, 4), leaf(T, 2, 5, 4, seed=4)), train=False)


def test_transformer():
    from tests._nn_diff import check_module

    def make(nn):
        T = __import__("torch") if nn.__name__.startswith("torch") else __import__("gradviz")

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.t = nn.Transformer(4, 2, 2, 2, 8, dropout=0.0)

            def forward(self, src, tgt):
                mask = T.nn.Transformer.generate_square_subsequent_mask(3).to(T.float64)
                return self.t(src, tgt, tgt_mask=mask)

        return M()

    check_module(make, lambda T: (leaf(T, 5, 2, 4), leaf(T, 3, 2, 4, seed=3)))
