"""Finite-difference cases for the rows issue 34 added to the derivative table (nn.utils and the
missing nn modules/functions); tests/engine/test_gradcheck.py runs them with its own cases."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv
from gradviz.nn.utils import rnn as R
from gradviz.ops.linalg_more import householder_product as linalg_householder_product
from gradviz.ops.linalg_more import matrix_exp
from gradviz.ops.nn_weight_norm_ops import _weight_norm_interface, norm_except_dim

F = gv.nn.functional


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _distinct(*shape: int, seed: int = 0) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.37 + 0.1).reshape(shape)


def _i64(*values: int) -> gv.Tensor:
    return gv.tensor(np.array(values, dtype=np.int64))


def _samples(*shape: int) -> gv.Tensor:
    return gv.tensor(np.random.default_rng(5).random(shape))


NNUTILS_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    ("_weight_norm_interface", lambda v, g: _weight_norm_interface(v, g, 0)[0], [_randn(3, 4), _randn(3, 1, seed=1)]),
    ("_weight_norm_interface", lambda v, g: _weight_norm_interface(v, g, 1)[0], [_randn(3, 4), _randn(1, 4, seed=1)]),
    ("norm_Scalar", lambda v: norm_except_dim(v, 2, -1), [_randn(3, 4)]),
    ("matrix_exp", matrix_exp, [_randn(2, 3, 3) * 0.5]),  # a batch (the torch functions' case: one matrix)
    ("householder_product", linalg_householder_product, [_randn(4, 3), _randn(3, seed=1)]),  # k = n
    ("_pack_padded_sequence", lambda x: R.pack_padded_sequence(x, [3, 2, 1]).data, [_randn(3, 3, 2)]),
    ("_pack_padded_sequence", lambda x: R.pack_padded_sequence(x, [2, 2], batch_first=True).data, [_randn(2, 3, 2)]),
    ("max_pool3d_with_indices", lambda x: F.max_pool3d(x, 2, 1), [_distinct(1, 1, 3, 3, 3)]),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 2, 1, 1, ceil_mode=True, count_include_pad=False),
     [_randn(1, 1, 3, 3, 2)]),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 2, 1)), [_randn(1, 2, 3, 3, 2)]),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (2, 3)), [_distinct(1, 2, 3, 5)]),
    ("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, 2), [_distinct(1, 1, 3, 3, 3)]),
    ("max_unpool2d", lambda x: F.max_unpool2d(x, _i64(0, 3, 9, 14).reshape(1, 1, 2, 2), 2, output_size=(4, 4)),
     [_randn(1, 1, 2, 2)]),
    ("max_unpool3d", lambda x: F.max_unpool3d(x, _i64(0, 7).reshape(1, 1, 1, 1, 2), 2, output_size=(2, 2, 4)),
     [_randn(1, 1, 1, 1, 2)]),
    ("fractional_max_pool2d", lambda x: F.fractional_max_pool2d(x, 2, (3, 3), _random_samples=_samples(1, 2, 2)),
     [_distinct(1, 2, 5, 5)]),
    ("fractional_max_pool3d", lambda x: F.fractional_max_pool3d(x, 2, 2, _random_samples=_samples(1, 1, 3)),
     [_distinct(1, 1, 3, 4, 3)]),
    ("im2col", lambda x: F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)), [_randn(1, 2, 4, 5)]),
    ("col2im", lambda x: F.fold(x, (3, 4), 2, padding=1), [_randn(1, 8, 20)]),
    ("channel_shuffle", lambda x: F.channel_shuffle(x, 3), [_randn(1, 6, 2)]),
    ("_pdist_forward", lambda x: F.pdist(x), [_randn(4, 3)]),
    ("_pdist_forward", lambda x: F.pdist(x, 1.5), [_randn(4, 3)]),
    ("_pdist_forward", lambda x: F.pdist(x, 3), [_randn(3, 2)]),
    ("rrelu_with_noise", lambda x: F.rrelu(x), [_randn(3, 4) + 0.05]),
    ("rrelu_with_noise_", lambda x: F.rrelu_(x * 1.0), [_randn(3, 4) + 0.05]),
    ("multi_margin_loss", lambda x: F.multi_margin_loss(x, _i64(1, 0, 3), p=2, margin=0.8), [_randn(3, 4) * 0.3]),
    ("multi_margin_loss", lambda x: F.multi_margin_loss(x, _i64(2, 2), reduction="none"), [_randn(2, 4) * 0.3]),
    ("multilabel_margin_loss", lambda x: F.multilabel_margin_loss(x, _i64(3, 0, -1, 1, 1, 2, 3, -1).reshape(2, 4)),
     [_randn(2, 4) * 0.3]),
    ("convolution3d", lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2),
     [_randn(1, 2, 2, 3, 3), _randn(4, 1, 2, 2, 2, seed=1), _randn(4, seed=2)]),
    ("convolution3d", lambda x, w: F.conv_transpose3d(x, w, stride=2, output_padding=1),
     [_randn(1, 2, 2, 1, 2), _randn(2, 3, 2, 2, 1, seed=1)]),
    ("conv_tbc", lambda x, w, b: gv.conv_tbc(x, w, b, 1),
     [_randn(4, 2, 3), _randn(2, 3, 2, seed=1), _randn(2, seed=2)]),
    ("_embedding_bag", lambda w, psw: F.embedding_bag(_i64(1, 2, 0, 2, 3), w, _i64(0, 2), mode="sum",
                                                      per_sample_weights=psw), [_randn(4, 3), _randn(5, seed=1)]),
    ("_embedding_bag", lambda w: F.embedding_bag(_i64(1, 2, 0, 2, 3), w, _i64(0, 1), mode="mean", padding_idx=2),
     [_randn(4, 3)]),
    ("_embedding_bag", lambda w: F.embedding_bag(_i64(1, 2, 0, 3), w, _i64(0, 2), mode="max"), [_distinct(4, 3)]),
    ("_ctc_loss", lambda x: F.ctc_loss(x.log_softmax(2), _i64(1, 2, 2, 1).reshape(2, 2), [5, 4], [2, 1],
                                       reduction="sum"), [_randn(5, 2, 3)]),
]
