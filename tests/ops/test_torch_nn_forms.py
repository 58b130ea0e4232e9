"""torch's top-level forms of nn ops (torch.layer_norm, torch.embedding, torch.kl_div, ...) and
Tensor.hardshrink/prelu (issue 34's coverage), against torch."""

from __future__ import annotations

import pytest
from _fns_diff import check

X = [[[0.5, -1.25, 2.0, 0.1], [1.5, 0.75, -0.5, 3.0]], [[0.25, 1.0, -2.0, -0.3], [0.2, 0.4, 0.6, -0.8]]]
Y = [[0.3, -0.2, 1.0, 0.4], [0.1, 0.9, -0.5, 0.2]]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "layer_norm": lambda T: T.layer_norm(_x(T), [4], _x(T, [1.0, 2.0, 0.5, 1.5]), _x(T, [0.1, 0.0, -0.1, 0.2])),
    "group_norm": lambda T: T.group_norm(_x(T), 1, None, None, 1e-5, True),
    "batch_norm": lambda T: T.batch_norm(_x(T), _x(T, [1.0, 2.0]), None, None, None, True, 0.1, 1e-5, True),
    "instance_norm": lambda T: T.instance_norm(_x(T), None, None, None, None, True, 0.1, 1e-5, True),
    "embedding": lambda T: T.embedding(_x(T, Y), T.tensor([[1, 0, 1]])),
    "embedding padding_idx": lambda T: T.embedding(_x(T, Y), T.tensor([1, 0, 1]), 0),
    "dropout eval": lambda T: T.dropout(_x(T), 0.5, False),
    "dropout": lambda T: T.dropout(_x(T), 0.3, True),
    "feature_dropout": lambda T: T.feature_dropout(_x(T).unsqueeze(-1), 0.5, True),
    "kl_div": lambda T: T.kl_div(_x(T).log_softmax(-1), T.tensor(X, dtype=T.float64).softmax(-1), 1),
    "kl_div default none": lambda T: T.kl_div(_x(T).log_softmax(-1), T.tensor(X, dtype=T.float64).softmax(-1)),
    "kl_div sum log_target": lambda T: T.kl_div(_x(T), _x(T).detach() * 0.5, 2, log_target=True),
    "max_pool1d": lambda T: T.max_pool1d(_x(T), 2),
    "max_pool2d": lambda T: T.max_pool2d(_x(T).unsqueeze(0), 2, 1),
    "binary_cross_entropy_with_logits": lambda T: T.binary_cross_entropy_with_logits(
        _x(T), T.tensor(X, dtype=T.float64).sigmoid(), None, None, 2),
    "cosine_embedding_loss": lambda T: T.cosine_embedding_loss(_x(T, Y), _x(T, Y[::-1]), T.tensor([1.0, -1.0]), 0.1, 0),
    "hinge_embedding_loss": lambda T: T.hinge_embedding_loss(_x(T, Y), T.tensor([[1.0, -1.0, 1.0, -1.0]] * 2)),
    "margin_ranking_loss": lambda T: T.margin_ranking_loss(_x(T, Y[0]), _x(T, Y[1]), T.tensor([1.0, -1.0, 1.0, 1.0])),
    "poisson_nll_loss": lambda T: T.poisson_nll_loss(_x(T, Y), _x(T, Y).detach().abs(), True, False, 1e-8, 1),
    "triplet_margin_loss": lambda T: T.triplet_margin_loss(_x(T, Y), _x(T, Y[::-1]), _x(T, Y) * 2),
    "triplet_margin_loss mean": lambda T: T.triplet_margin_loss(_x(T, Y), _x(T, Y[::-1]), _x(T, Y) * 2, 0.5, 2.0,
                                                                1e-6, True, 1),
    "hinge_embedding_loss sum": lambda T: T.hinge_embedding_loss(_x(T, Y), T.tensor([[1.0, -1.0, 1.0, -1.0]] * 2),
                                                                 0.5, 2),
    "constant_pad_nd": lambda T: T.constant_pad_nd(_x(T, Y), [1, 2], 0.5),
    "Tensor.hardshrink": lambda T: _x(T).hardshrink(0.6),
    "Tensor.prelu": lambda T: _x(T).prelu(_x(T, [0.25, 0.1])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name], rtol=1e-10, atol=1e-12)


NATIVE = {
    "native_layer_norm": lambda T: T.native_layer_norm(_x(T), [4], _x(T, [1.0, 2.0, 0.5, 1.5]), None, 1e-5),
    "native_batch_norm": lambda T: (lambda rm, rv: (T.native_batch_norm(_x(T), None, None, rm, rv, True, 0.1, 1e-5),
                                                    rm, rv))(T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)),
    "native_batch_norm eval": lambda T: T.native_batch_norm(_x(T), _x(T, [1.0, 2.0]), None,
                                                            T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64),
                                                            False, 0.1, 1e-5),
}
POOL = {
    "avg_pool1d": lambda T: T.avg_pool1d(_x(T), 3, 1),
    "avg_pool1d padding ceil": lambda T: T.avg_pool1d(_x(T), 2, 2, 1, True, False),
    "adaptive_avg_pool1d": lambda T: T.adaptive_avg_pool1d(_x(T), 3),
    "max_pool1d_with_indices": lambda T: T.max_pool1d_with_indices(_x(T), 2, 1),
    "embedding_renorm_": lambda T: (lambda w: (T.embedding_renorm_(w, T.tensor([0, 2, 0]), 1.0, 2.0), w)[1])(
        T.tensor([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0]], dtype=T.float64)),
}
NATIVE.update(POOL)
CASES.update(NATIVE)


@pytest.mark.parametrize("name", list(NATIVE))
def test_native_norms_match_torch(name):
    check(NATIVE[name], rtol=1e-10, atol=1e-12)
