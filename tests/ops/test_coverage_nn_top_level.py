"""torch's top-level (aten) spellings of nn ops, differentially against torch 2.13: values, the
output's grad_fn name, gradients, and the errors of misuse (coverage2, issue 34)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import gradviz

_rng = np.random.default_rng(0)
X = _rng.standard_normal((2, 3, 5))
Y = _rng.standard_normal((2, 3, 5))
Z = _rng.standard_normal((2, 3, 5))
T01 = _rng.random((2, 3, 5))
SIGN = np.sign(_rng.standard_normal((2,)))
W3 = _rng.standard_normal(3)
B3 = _rng.standard_normal(3)
EMB = _rng.standard_normal((6, 4))
IDX = np.array([[0, 2, 5], [2, 2, 1]])


def _t(T: Any, a: np.ndarray, grad: bool = True) -> Any:
    return T.tensor(a, dtype=T.float64, requires_grad=grad)


# name -> program(T) returning (output tensor, leaves whose grads to compare)
PROGRAMS: dict[str, Callable[[Any], tuple[Any, list]]] = {}


def program(fn: Callable[[Any], tuple[Any, list]]) -> Callable[[Any], tuple[Any, list]]:
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def dropout_train(T: Any) -> tuple:
    T.manual_seed(3)
    x = _t(T, X)
    return T.dropout(x, 0.4, True), [x]


@program
def dropout_eval(T: Any) -> tuple:
    x = _t(T, X)
    return T.dropout(x * 1, 0.4, False), [x]


@program
def dropout_inplace(T: Any) -> tuple:
    T.manual_seed(4)
    x = _t(T, X)
    return T.dropout_(x * 1, 0.5, True), [x]


@program
def feature_dropout(T: Any) -> tuple:
    T.manual_seed(5)
    x = _t(T, X)
    return T.feature_dropout(x, 0.5, True), [x]


@program
def feature_dropout_inplace(T: Any) -> tuple:
    T.manual_seed(6)
    x = _t(T, X)
    return T.feature_dropout_(x * 2, 0.3, True), [x]


@program
def batch_norm_train(T: Any) -> tuple:
    x, w, b = _t(T, X), _t(T, W3), _t(T, B3)
    rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
    out = T.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5, False)
    return out, [x, w, b, rm, rv]


@program
def batch_norm_eval(T: Any) -> tuple:
    x, w = _t(T, X), _t(T, W3)
    rm, rv = T.zeros(3, dtype=T.float64) + 0.5, T.ones(3, dtype=T.float64) * 2
    return T.batch_norm(x, w, None, rm, rv, False, 0.1, 1e-5, True), [x, w]


@program
def instance_norm(T: Any) -> tuple:
    x, w, b = _t(T, X), _t(T, W3), _t(T, B3)
    return T.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False), [x, w, b]


@program
def layer_norm(T: Any) -> tuple:
    x = _t(T, X)
    w = _t(T, np.linspace(0.5, 1.5, 5))
    return T.layer_norm(x, [5], w, None, 1e-5, True), [x, w]


@program
def group_norm(T: Any) -> tuple:
    x = _t(T, _rng_fixed((2, 4, 3)))
    w, b = _t(T, np.arange(4.0)), _t(T, np.ones(4))
    return T.group_norm(x, 2, w, b), [x, w, b]


def _rng_fixed(shape: tuple) -> np.ndarray:
    return np.sin(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape)


@program
def embedding(T: Any) -> tuple:
    w = _t(T, EMB)
    return T.embedding(w, T.tensor(IDX)), [w]


@program
def embedding_padding(T: Any) -> tuple:
    w = _t(T, EMB)
    return T.embedding(w, T.tensor(IDX), 2), [w]


@program
def bce_with_logits(T: Any) -> tuple:
    x = _t(T, X)
    return T.binary_cross_entropy_with_logits(x, T.tensor(T01), None, None, 1), [x]


@program
def bce_with_logits_weighted_none(T: Any) -> tuple:
    x = _t(T, X)
    pw = _t(T, np.full(5, 2.0), False)
    return T.binary_cross_entropy_with_logits(x, T.tensor(T01), _t(T, T01, False), pw, 0), [x]


@program
def kl_div_mean(T: Any) -> tuple:
    x = _t(T, np.log(T01 + 0.1))
    return T.kl_div(x, T.tensor(T01), 1), [x]


@program
def kl_div_sum_log_target(T: Any) -> tuple:
    x, y = _t(T, X), _t(T, Y)
    return T.kl_div(x, y, 2, log_target=True), [x, y]


@program
def kl_div_none(T: Any) -> tuple:
    x = _t(T, X)
    return T.kl_div(x, T.tensor(T01)), [x]  # torch's binding: no reduction by default


@program
def cosine_embedding_loss(T: Any) -> tuple:
    a, b = _t(T, X[:, :, 0]), _t(T, Y[:, :, 0])
    return T.cosine_embedding_loss(a, b, T.tensor(SIGN), 0.1, 2), [a, b]


@program
def hinge_embedding_loss(T: Any) -> tuple:
    x = _t(T, X)
    return T.hinge_embedding_loss(x, T.tensor(np.sign(Y)), 0.5), [x]


@program
def hinge_embedding_loss_mean(T: Any) -> tuple:
    x = _t(T, X)
    return T.hinge_embedding_loss(x, T.tensor(np.sign(Y)), 0.5, 1), [x]


@program
def cosine_embedding_loss_default(T: Any) -> tuple:
    a, b = _t(T, X[:, :, 0]), _t(T, Y[:, :, 0])
    return T.cosine_embedding_loss(a, b, T.tensor(SIGN)), [a, b]


@program
def margin_ranking_loss(T: Any) -> tuple:
    a, b = _t(T, X[0, 0]), _t(T, Y[0, 0])
    return T.margin_ranking_loss(a, b, T.tensor(np.sign(Z[0, 0])), 0.2, 0), [a, b]


@program
def poisson_nll_loss(T: Any) -> tuple:
    x = _t(T, X)
    return T.poisson_nll_loss(x, T.tensor(T01 * 3), True, False, 1e-8, 1), [x]


@program
def poisson_nll_loss_full(T: Any) -> tuple:
    x = _t(T, T01 + 0.5)
    return T.poisson_nll_loss(x, T.tensor(T01 * 3), False, True, 1e-8, 2), [x]


@program
def triplet_margin_loss(T: Any) -> tuple:
    a, p, n = _t(T, X[:, :, 0]), _t(T, Y[:, :, 0]), _t(T, Z[:, :, 0])
    return T.triplet_margin_loss(a, p, n, 0.5, 2, 1e-6, True, 1), [a, p, n]


@program
def max_pool1d(T: Any) -> tuple:
    x = _t(T, X)
    return T.max_pool1d(x, 2), [x]


@program
def max_pool1d_stride(T: Any) -> tuple:
    x = _t(T, X)
    return T.max_pool1d(x, 3, 1, 1, 1, True), [x]


@program
def max_pool2d(T: Any) -> tuple:
    x = _t(T, X)
    return T.max_pool2d(x.unsqueeze(0), [2, 2], [], 0), [x]


@program
def max_pool1d_with_indices(T: Any) -> tuple:
    x = _t(T, X)
    out, idx = T.max_pool1d_with_indices(x, 2)
    return out * 1 + idx, [x]


@program
def constant_pad_nd(T: Any) -> tuple:
    x = _t(T, X)
    return T.constant_pad_nd(x, [1, 2, 0, 1], 3.5), [x]


@program
def constant_pad_nd_negative(T: Any) -> tuple:
    x = _t(T, X)
    return T.constant_pad_nd(x, (-1, 1)), [x]


@program
def native_layer_norm(T: Any) -> tuple:
    x, w, b = _t(T, X), _t(T, np.linspace(0.5, 1.5, 5)), _t(T, np.ones(5))
    out, mean, rstd = T.native_layer_norm(x, [5], w, b, 1e-5)
    assert (mean.requires_grad, rstd.requires_grad, tuple(mean.shape)) == (False, False, (2, 3, 1))
    return out + mean + rstd, [x, w, b]


@program
def native_layer_norm_two_dims(T: Any) -> tuple:
    x = _t(T, X)
    out, mean, rstd = T.native_layer_norm(x, [3, 5], None, None, 1e-3)
    return out * rstd + mean, [x]


@program
def native_batch_norm_train(T: Any) -> tuple:
    x, w = _t(T, X), _t(T, W3)
    rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
    out, mean, invstd = T.native_batch_norm(x, w, None, rm, rv, True, 0.2, 1e-5)
    assert (mean.requires_grad, tuple(invstd.shape)) == (False, (3,))
    return out + mean[None, :, None] * invstd[None, :, None], [x, w, rm, rv]


@program
def native_batch_norm_eval(T: Any) -> tuple:
    x = _t(T, X)
    rm, rv = T.zeros(3, dtype=T.float64) + 0.5, T.ones(3, dtype=T.float64) * 2
    out, mean, invstd = T.native_batch_norm(x, None, None, rm, rv, False, 0.2, 1e-5)
    assert (tuple(mean.shape), tuple(invstd.shape), mean.dtype) == ((0,), (0,), T.float64)
    return out, [x]


def _cell(T: Any, gates: int) -> tuple:
    x, h = _t(T, X[:, 0, :4]), _t(T, Y[:, 0, :3])
    w_ih = _t(T, _rng_fixed((gates * 3, 4)))
    w_hh = _t(T, np.cos(_rng_fixed((gates * 3, 3))))
    b_ih, b_hh = _t(T, np.linspace(-1, 1, gates * 3)), _t(T, np.linspace(1, -1, gates * 3))
    return x, h, w_ih, w_hh, b_ih, b_hh


@program
def rnn_tanh_cell(T: Any) -> tuple:
    args = _cell(T, 1)
    return T.rnn_tanh_cell(*args), list(args)


@program
def rnn_relu_cell_no_bias(T: Any) -> tuple:
    args = _cell(T, 1)
    return T.rnn_relu_cell(*args[:4]), list(args[:4])


@program
def lstm_cell(T: Any) -> tuple:
    x, h, w_ih, w_hh, b_ih, b_hh = _cell(T, 4)
    c = _t(T, Z[:, 1, :3])
    hy, cy = T.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    return hy * cy, [x, h, c, w_ih, w_hh, b_ih, b_hh]


@program
def gru_cell(T: Any) -> tuple:
    args = _cell(T, 3)
    return T.gru_cell(*args), list(args)


@program
def convolution_2d(T: Any) -> tuple:
    x, w, b = _t(T, _rng_fixed((2, 4, 5, 5))), _t(T, np.cos(_rng_fixed((6, 2, 3, 3)))), _t(T, np.arange(6.0))
    return T.convolution(x, w, b, [2, 1], [1, 0], [1, 1], False, [0, 0], 2), [x, w, b]


@program
def convolution_1d_transposed(T: Any) -> tuple:
    x, w = _t(T, _rng_fixed((2, 3, 5))), _t(T, np.cos(_rng_fixed((3, 2, 3))))
    return T.convolution(x, w, None, [2], [1], [1], True, [1], 1), [x, w]


@program
def channel_shuffle(T: Any) -> tuple:
    x = _t(T, _rng_fixed((2, 6, 2, 3)))
    return T.channel_shuffle(x, 3), [x]


@program
def channel_shuffle_double_backward(T: Any) -> tuple:
    x = _t(T, _rng_fixed((1, 4, 3)))
    y = T.channel_shuffle(x * x, 2)
    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    return g * 1, [x]


@program
def native_channel_shuffle(T: Any) -> tuple:
    x = _t(T, _rng_fixed((2, 6, 2)))
    return T.native_channel_shuffle(x.detach(), 3) + x * 0, [x]  # its values (it has no backward)


@program
def fill_number(T: Any) -> tuple:  # (not an nn op: torch.fill's graph, checked by the same harness)
    x = _t(T, X)
    return T.fill(x * 1, 2.5) * x, [x]


@program
def fill_tensor(T: Any) -> tuple:
    x, v = _t(T, X), T.tensor(0.7, dtype=T.float64, requires_grad=True)
    return T.fill(x * 1, v), [x, v]


@program
def native_dropout_train(T: Any) -> tuple:
    T.manual_seed(7)
    x = _t(T, X)
    out, mask = T.native_dropout(x, 0.3, True)
    assert (str(mask.dtype), mask.requires_grad) == (str(T.bool), False)
    return out + mask, [x]


@program
def native_dropout_float32(T: Any) -> tuple:
    T.manual_seed(8)
    x = T.tensor(X, dtype=T.float32, requires_grad=True)
    out, mask = T.native_dropout(x * 2, 0.5, True)
    return (out * mask).double(), [x]


@program
def native_dropout_eval(T: Any) -> tuple:
    x = _t(T, X)
    out, mask = T.native_dropout(x, 0.3, False)
    return out * mask, [x]


@program
def alpha_dropout(T: Any) -> tuple:
    T.manual_seed(11)
    x = _t(T, X)
    return T.alpha_dropout(x, 0.2, True), [x]


@program
def alpha_dropout_inplace_float32(T: Any) -> tuple:
    T.manual_seed(12)
    x = T.tensor(X, dtype=T.float32, requires_grad=True)
    return T.alpha_dropout_(x * 1, 0.5, True).double(), [x]


@program
def alpha_dropout_eval(T: Any) -> tuple:
    x = _t(T, X)
    return T.alpha_dropout(x * 1, 0.5, False), [x]


@program
def feature_alpha_dropout(T: Any) -> tuple:
    T.manual_seed(13)
    x = _t(T, X)
    return T.feature_alpha_dropout(x, 0.4, True), [x]


@program
def feature_alpha_dropout_inplace(T: Any) -> tuple:
    T.manual_seed(14)
    x = _t(T, X)
    return T.feature_alpha_dropout_(x * 1, 0.4, True), [x]


@program
def alpha_dropout_p1(T: Any) -> tuple:
    x = _t(T, X)
    return T.alpha_dropout(x, 1.0, True), [x]


def _run(T: Any, fn: Callable[[Any], tuple]) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, leaves = fn(T)
        (out * T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)), dtype=out.dtype)).sum().backward()
    return {
        "value": np.asarray(out.detach().tolist()),
        "grad_fn": type(out.grad_fn).__name__ if out.grad_fn is not None else None,
        "grads": [None if v.grad is None else np.asarray(v.grad.tolist()) for v in leaves],
        "buffers": [np.asarray(v.tolist()) for v in leaves if not v.requires_grad],
        "warnings": [str(w.message) for w in caught],
    }


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_top_level_nn_op_matches_torch(name: str) -> None:
    got, want = _run(gradviz, PROGRAMS[name]), _run(torch, PROGRAMS[name])
    assert got["grad_fn"] == want["grad_fn"]
    assert got["warnings"] == want["warnings"]
    np.testing.assert_allclose(got["value"], want["value"], rtol=1e-10, atol=1e-12)
    for g, w in zip(got["grads"] + got["buffers"], want["grads"] + want["buffers"], strict=True):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


ERRORS: dict[str, Callable[[Any], Any]] = {
    "dropout_p": lambda T: T.dropout(T.ones(3), 1.5, True),
    "feature_dropout_1d": lambda T: T.feature_dropout(T.ones(3), 0.5, True),
    "dropout_missing_train": lambda T: T.dropout(T.ones(3), 0.5),
    "channel_shuffle_groups": lambda T: T.channel_shuffle(T.ones(2, 6, 2), 0),
    "channel_shuffle_rank": lambda T: T.channel_shuffle(T.ones(2, 6), 2),
    "channel_shuffle_divisible": lambda T: T.channel_shuffle(T.ones(2, 5, 2), 2),
    "native_channel_shuffle_backward": lambda T: T.native_channel_shuffle(T.ones(1, 4, 2, requires_grad=True),
                                                                          2).sum().backward(),
    "fill_vector_value": lambda T: T.fill(T.ones(3), T.ones(2)),
    "native_dropout_p": lambda T: T.native_dropout(T.ones(3), 1.5, True),
    "feature_alpha_dropout_1d": lambda T: T.feature_alpha_dropout(T.ones(3), 0.5, True),
    "kl_div_positional_log_target": lambda T: T.kl_div(T.ones(3), T.ones(3), 1, True),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_misuse_raises_as_torch(name: str) -> None:
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - the class is what is compared
        ERRORS[name](torch)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[name](gradviz)
    if not isinstance(theirs.value, TypeError):  # a TypeError names the function as each binds it
        assert str(ours.value) == str(theirs.value)
