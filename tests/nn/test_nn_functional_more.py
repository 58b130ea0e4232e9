"""The nn.functional names added for issue 34 against torch 2.13: values, gradients, graphs and
order (pooling in 1-d and 3-d, adaptive max pooling, unpooling, fold/unfold, lp_pool,
local_response_norm, rms_norm, margin losses, pdist, channel_shuffle, and the random ones:
alpha dropouts, rrelu, gumbel_softmax, whose draws must be torch's)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests._diff import Case, check, leaf
from tests._nn_diff import idx, same_error


def _fn(f, *shapes, seed_base=1):
    """A program: f(T, *leaves) on float64 leaves of ``shapes``; its output (or first output)
    backpropagated with a fixed gradient."""

    def prog(T):
        xs = [leaf(T, *s, seed=seed_base + i) for i, s in enumerate(shapes)]
        out = f(T, *xs)
        extra = []
        if isinstance(out, tuple):
            out, *extra = out
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        return Case(roots=[out], run=lambda: out.backward(g), grads_of=xs, values=extra)

    return prog


def _F(T):
    return T.nn.functional


CASES = {
    "avg_pool1d": (lambda T, x: _F(T).avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 7)),
    "max_pool1d_with_indices": (lambda T, x: _F(T).max_pool1d_with_indices(x, 2), (2, 3, 7)),
    "max_pool2d_with_indices": (lambda T, x: _F(T).max_pool2d_with_indices(x, 2, 1), (1, 2, 4, 5)),
    "adaptive_avg_pool1d": (lambda T, x: _F(T).adaptive_avg_pool1d(x, 4), (2, 3, 7)),
    "adaptive_avg_pool1d_1": (lambda T, x: _F(T).adaptive_avg_pool1d(x, 1), (2, 3, 7)),
    "adaptive_max_pool1d": (lambda T, x: _F(T).adaptive_max_pool1d(x, 3, return_indices=True), (2, 3, 7)),
    "adaptive_max_pool2d": (lambda T, x: _F(T).adaptive_max_pool2d(x, (3, 2), return_indices=True), (2, 2, 5, 7)),
    "adaptive_max_pool2d_3d_input": (lambda T, x: _F(T).adaptive_max_pool2d(x, 3), (2, 5, 7)),
    "adaptive_max_pool3d": (lambda T, x: _F(T).adaptive_max_pool3d(x, (2, 3, 2), True), (1, 2, 4, 5, 3)),
    "adaptive_avg_pool3d": (lambda T, x: _F(T).adaptive_avg_pool3d(x, (2, 3, None)), (1, 2, 4, 5, 3)),
    "adaptive_avg_pool3d_1": (lambda T, x: _F(T).adaptive_avg_pool3d(x, 1), (1, 2, 4, 5, 3)),
    "max_pool3d": (lambda T, x: _F(T).max_pool3d(x, 2, 1, 1, return_indices=True), (1, 2, 3, 4, 3)),
    "max_pool3d_dilated_ceil": (lambda T, x: _F(T).max_pool3d(x, 2, 2, 0, 2, ceil_mode=True), (2, 5, 6, 5)),
    "avg_pool3d": (lambda T, x: _F(T).avg_pool3d(x, 3, 2, 1), (1, 2, 5, 4, 5)),
    "avg_pool3d_options": (lambda T, x: _F(T).avg_pool3d(x, 2, 2, 1, True, False), (2, 3, 4, 5)),
    "avg_pool3d_divisor": (lambda T, x: _F(T).avg_pool3d(x, 2, divisor_override=3), (1, 2, 4, 4, 4)),
    "lp_pool1d": (lambda T, x: _F(T).lp_pool1d(x, 2, 3, 2), (2, 3, 7)),
    "lp_pool2d": (lambda T, x: _F(T).lp_pool2d(x, 3, (2, 3)), (1, 2, 4, 6)),
    "lp_pool3d": (lambda T, x: _F(T).lp_pool3d(x, 2, 2), (1, 2, 4, 4, 4)),
    "unfold": (lambda T, x: _F(T).unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), (2, 3, 5, 6)),
    "unfold_unbatched": (lambda T, x: _F(T).unfold(x, 2), (3, 4, 4)),
    "fold": (lambda T, x: _F(T).fold(x, (4, 5), (2, 2), padding=1, stride=(1, 2)), (2, 12, 15)),
    "local_response_norm_3d": (lambda T, x: _F(T).local_response_norm(x, 3), (2, 5, 4)),
    "local_response_norm_4d": (lambda T, x: _F(T).local_response_norm(x, 2, 1e-2, 0.5, 2.0), (2, 5, 3, 3)),
    "rms_norm": (lambda T, x, w: _F(T).rms_norm(x, (3, 4), w), (2, 3, 4), (3, 4)),
    "rms_norm_eps": (lambda T, x: _F(T).rms_norm(x, (4,), eps=1e-3), (2, 3, 4)),
    "multi_margin_loss": (lambda T, x: _F(T).multi_margin_loss(x, idx(T, 1, 0, 3)), (3, 4)),
    "multi_margin_loss_p2_w": (lambda T, x: _F(T).multi_margin_loss(
        x, idx(T, 1, 0, 3), 2, 0.7, T.tensor([0.5, 1.0, 2.0, 1.5], dtype=T.float64), reduction="sum"), (3, 4)),
    "multi_margin_loss_none": (lambda T, x: _F(T).multi_margin_loss(x, idx(T, 2, 2), reduction="none"), (2, 4)),
    "multilabel_margin_loss": (lambda T, x: _F(T).multilabel_margin_loss(
        x, T.tensor(np.array([[3, 0, -1, 1], [1, 2, 3, -1]], dtype=np.int64))), (2, 4)),
    "multilabel_margin_loss_none": (lambda T, x: _F(T).multilabel_margin_loss(
        x, T.tensor(np.array([[0, -1, 2, 1]], dtype=np.int64)), reduction="none"), (1, 4)),
    "triplet_margin_with_distance_loss": (lambda T, a, p, n: _F(T).triplet_margin_with_distance_loss(a, p, n),
                                          (3, 4), (3, 4), (3, 4)),
    "triplet_with_distance_swap": (lambda T, a, p, n: _F(T).triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1.0 - _F(T).cosine_similarity(u, v), margin=0.5, swap=True,
        reduction="none"), (3, 4), (3, 4), (3, 4)),
    "pdist": (lambda T, x: _F(T).pdist(x), (4, 3)),
    "pdist_p1_noncontiguous": (lambda T, x: _F(T).pdist(x.t(), 1), (3, 4)),
    "pdist_p3": (lambda T, x: _F(T).pdist(x, 3.0), (4, 3)),
    "pdist_inf": (lambda T, x: _F(T).pdist(x, float("inf")), (4, 3)),
    "channel_shuffle": (lambda T, x: _F(T).channel_shuffle(x, 3), (2, 6, 2, 2)),
    "rrelu_eval": (lambda T, x: _F(T).rrelu(x), (3, 4)),
    "rrelu_train": (lambda T, x: _F(T).rrelu(x, 0.1, 0.4, training=True), (3, 5)),
    "rrelu_inplace_train": (lambda T, x: _F(T).rrelu_(x * 1.0, 0.1, 0.4, training=True), (3, 5)),
    "rrelu_inplace_eval": (lambda T, x: _F(T).rrelu(x * 1.0, inplace=True), (3, 5)),
    "alpha_dropout": (lambda T, x: _F(T).alpha_dropout(x, 0.3, True), (4, 5)),
    "feature_alpha_dropout": (lambda T, x: _F(T).feature_alpha_dropout(x, 0.5, True), (3, 4, 2, 2)),
    "alpha_dropout_eval": (lambda T, x: _F(T).alpha_dropout(x, 0.3) * 2, (4, 5)),
    "fractional_max_pool2d": (lambda T, x: _F(T).fractional_max_pool2d(x, 2, output_size=(3, 4), return_indices=True),
                              (2, 3, 6, 7)),
    "fractional_max_pool2d_ratio": (lambda T, x: _F(T).fractional_max_pool2d(x, (2, 3), output_ratio=(0.5, 0.7)),
                                    (2, 7, 9)),
    "fractional_max_pool2d_float32": (lambda T, x: _F(T).fractional_max_pool2d(x.float(), 3, output_size=5).double(),
                                      (1, 2, 13, 11)),
    "fractional_max_pool3d": (lambda T, x: _F(T).fractional_max_pool3d(x, 2, output_ratio=(0.5, 0.6, 0.7),
                                                                       return_indices=True), (1, 2, 5, 6, 7)),
    "gumbel_softmax": (lambda T, x: _F(T).gumbel_softmax(x, tau=0.5), (3, 5)),
    "gumbel_softmax_hard": (lambda T, x: _F(T).gumbel_softmax(x, hard=True, dim=0), (3, 5)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_functional(name):
    f, *shapes = CASES[name]
    check(_fn(f, *shapes))


def test_max_unpool():
    def f1(T, x):
        out, i = _F(T).max_pool1d(x, 2, return_indices=True)
        return _F(T).max_unpool1d(out, i, 2)

    def f2(T, x):
        out, i = _F(T).max_pool2d(x, 2, return_indices=True)
        return _F(T).max_unpool2d(out, i, 2, output_size=(5, 5))

    def f3(T, x):
        out, i = _F(T).max_pool3d(x, 2, return_indices=True)
        return _F(T).max_unpool3d(out, i, 2)

    check(_fn(f1, (2, 3, 6)))
    check(_fn(f2, (1, 2, 5, 5)))
    check(_fn(f3, (1, 2, 4, 4, 4)))


def test_upsample_names_warn_and_match():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(_fn(lambda T, x: _F(T).upsample(x, scale_factor=2), (1, 2, 3, 3)))
        check(_fn(lambda T, x: _F(T).upsample_bilinear(x, size=(4, 5)), (1, 2, 3, 3)))
        check(_fn(lambda T, x: _F(T).upsample_nearest(x, scale_factor=2), (1, 2, 3, 3)))


def test_functional_errors():
    same_error(lambda T: _F(T).rms_norm(T.zeros(2, 3), (4,)))
    same_error(lambda T: _F(T).rms_norm(T.zeros(2, 3, 4), (3, 5)))
    same_error(lambda T: _F(T).local_response_norm(T.zeros(2, 3), 2))
    same_error(lambda T: _F(T).channel_shuffle(T.zeros(2, 5, 2), 2))
    same_error(lambda T: _F(T).multi_margin_loss(T.zeros(2, 3), T.zeros(2, dtype=T.int64), p=3))
    same_error(lambda T: _F(T).triplet_margin_with_distance_loss(T.zeros(2), T.zeros(2), T.zeros(2), margin=0))
    same_error(lambda T: _F(T).alpha_dropout(T.zeros(2), 1.5))
    same_error(lambda T: _F(T).fold(T.zeros(1, 8, 12), (3, 4), 2, padding=1))
    same_error(lambda T: _F(T).fold(T.zeros(1, 7, 20), (3, 4), 2, padding=1))
    same_error(lambda T: _F(T).max_unpool2d(T.zeros(1, 1, 2, 2), T.zeros(1, 1, 2, 2, dtype=T.int64), 2,
                                            output_size=(9, 9)))


TOP_LEVEL = {
    "adaptive_avg_pool1d": (lambda T, x: T.adaptive_avg_pool1d(x, 2), (2, 3, 5)),
    "adaptive_max_pool1d": (lambda T, x: T.adaptive_max_pool1d(x, 2), (2, 3, 5)),
    "avg_pool1d": (lambda T, x: T.avg_pool1d(x, 2), (2, 3, 5)),
    "max_pool1d": (lambda T, x: T.max_pool1d(x, 2), (2, 3, 5)),
    "max_pool1d_with_indices": (lambda T, x: T.max_pool1d_with_indices(x, 2), (2, 3, 5)),
    "max_pool2d": (lambda T, x: T.max_pool2d(x, 2), (1, 2, 4, 4)),
    "max_pool3d": (lambda T, x: T.max_pool3d(x, 2), (1, 2, 4, 4, 4)),
    "conv3d": (lambda T, x, w: T.conv3d(x, w, stride=2), (1, 2, 4, 4, 4), (3, 2, 2, 2, 2)),
    "conv_transpose3d": (lambda T, x, w: T.conv_transpose3d(x, w), (1, 2, 2, 2, 2), (2, 3, 2, 2, 2)),
    "channel_shuffle": (lambda T, x: T.channel_shuffle(x, 2), (1, 4, 2)),
    "conv_tbc": (lambda T, x, w, b: T.conv_tbc(x, w, b, 1), (5, 2, 3), (3, 3, 4), (4,)),
    "F.conv_tbc": (lambda T, x, w, b: _F(T).conv_tbc(x, w, b), (5, 2, 3), (2, 3, 4), (4,)),
    "pdist": (lambda T, x: T.pdist(x), (3, 2)),
    "rms_norm": (lambda T, x: T.rms_norm(x, (2,)), (3, 2)),
    "rrelu": (lambda T, x: T.rrelu(x, 0.1, 0.3, True), (3, 2)),
    "alpha_dropout": (lambda T, x: T.alpha_dropout(x, 0.5, True), (3, 2)),
    "feature_alpha_dropout": (lambda T, x: T.feature_alpha_dropout(x, 0.5, True), (3, 2, 2)),
    "norm_except_dim": (lambda T, x: T.norm_except_dim(x, 2, 1), (3, 2, 2)),
}


@pytest.mark.parametrize("name", list(TOP_LEVEL))
def test_top_level_name(name):
    f, *shapes = TOP_LEVEL[name]
    check(_fn(f, *shapes))
