"""Finite-difference cases for the nn ops' rows of the derivative table (tests/engine/test_gradcheck.py
runs them with its own cases): one or more per row, float64 unless the node takes float32 only."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv
from gradviz.ops.nn_attention_ops import baddbmm
from gradviz.ops.nn_rnn_ops import mkldnn_lstm_layer, transposed_in_place
from gradviz.ops.split_variants import unsafe_chunk

F = gv.nn.functional


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _distinct(*shape: int, seed: int = 0) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.37 + 0.1).reshape(shape)


def _away(v: np.ndarray, points: tuple[float, ...], margin: float = 0.1) -> np.ndarray:
    v = v.copy()
    for p in points:
        close = np.abs(v - p) < margin
        v[close] = p + np.where(v[close] >= p, margin, -margin) * 2
    return v


def _lstm32(x, w_ih, w_hh, b_ih, b_hh):
    # the oneDNN layer takes float32: cast in and out (wide step, loose tolerance)
    f32 = gv.float32
    h0 = gv.zeros(x.shape[1], w_hh.shape[1])
    out, hy, cy = mkldnn_lstm_layer(x.to(f32), w_ih.to(f32), w_hh.to(f32), b_ih.to(f32), b_hh.to(f32), h0, h0,
                                    False)
    return out.to(gv.float64), cy.to(gv.float64)


NN_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    ("linear_addmm", lambda b, x, w: F.linear(x, w, b), [_randn(3), _randn(4, 2, seed=1), _randn(3, 2, seed=2)]),
    ("linear_addmm", lambda b, x, w: F.linear(x, w, b), [_randn(3), _randn(2, 2, 2, seed=1), _randn(3, 2, seed=2)]),
    ("embedding", lambda w: F.embedding(gv.tensor([[1, 2], [1, 0]]), w), [_randn(4, 3)]),
    ("native_layer_norm", lambda x, w, b: F.layer_norm(x, (3,), w, b),
     [_randn(2, 3), _randn(3, seed=1), _randn(3, seed=2)]),
    ("gelu", lambda x: F.gelu(x), [_randn(2, 3)]),
    ("gelu", lambda x: F.gelu(x, approximate="tanh"), [_randn(2, 3)]),
    ("silu", lambda x: F.silu(x), [_randn(2, 3)]),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), [_away(_randn(2, 3), (0.0,))]),
    ("_trilinear", lambda a, b, w, c: F.bilinear(a, b, w, c),
     [_randn(2, 2), _randn(2, 3, seed=1), _randn(4, 2, 3, seed=2), _randn(4, seed=3)]),
    ("convolution", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
     [_randn(1, 2, 4, 4), _randn(4, 1, 3, 3, seed=1), _randn(4, seed=2)]),
    ("convolution", lambda x, w: F.conv1d(x, w, dilation=2), [_randn(2, 2, 6), _randn(3, 2, 2, seed=1)]),
    ("max_pool2d_with_indices", lambda x: F.max_pool2d(x, 2), [_distinct(1, 2, 4, 4)]),
    ("max_pool2d_with_indices", lambda x: F.max_pool2d(x, 3, 1, 1), [_distinct(1, 1, 4, 4)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), [_randn(1, 2, 4, 4)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [_randn(1, 1, 5, 5)]),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [_randn(1, 2, 5, 4)]),
    ("native_batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     [_randn(3, 2, 2), _randn(2, seed=1), _randn(2, seed=2)]),
    ("smooth_l1_loss", lambda x, t: F.smooth_l1_loss(x, t, beta=0.5), [_randn(2, 3), _randn(2, 3, seed=1) + 3]),
    ("huber_loss", lambda x, t: F.huber_loss(x, t, delta=0.5, reduction="sum"),
     [_randn(2, 3), _randn(2, 3, seed=1) + 3]),
    ("binary_cross_entropy", lambda x, t: F.binary_cross_entropy(x, t),
     [np.random.default_rng(0).uniform(0.1, 0.9, (2, 3)), np.random.default_rng(1).uniform(0, 1, (2, 3))]),
    ("binary_cross_entropy_with_logits",
     lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=gv.tensor([0.5, 2.0, 1.0], dtype=gv.float64)),
     [_randn(2, 3), np.random.default_rng(1).uniform(0, 1, (2, 3))]),
    ("_safe_softmax", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [_randn(1, 3, 2), _randn(1, 3, 2, seed=1), _randn(1, 3, 2, seed=2)]),
    ("_scaled_dot_product_flash_attention_for_cpu", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
     [_randn(1, 2, 3, 2), _randn(1, 2, 3, 2, seed=1), _randn(1, 2, 3, 2, seed=2)]),
    ("attention_baddbmm", baddbmm, [_randn(2, 3, 4), _randn(2, 3, 2, seed=1), _randn(2, 2, 4, seed=2)]),
    ("unsafe_split", lambda x: unsafe_chunk(x * 1, 2, 1)[1], [_randn(2, 4)]),
    ("transpose_", lambda x: transposed_in_place(x * 1, 0, 1), [_randn(2, 3)]),
    ("mkldnn_rnn_layer", _lstm32, [_randn(3, 2, 2) * 0.5, _randn(8, 2, seed=1) * 0.5, _randn(8, 2, seed=2) * 0.5,
                                   _randn(8, seed=3) * 0.5, _randn(8, seed=4) * 0.5]),
    ("convolution_transposed", lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1, groups=2),
     [_randn(1, 4, 3, 3), _randn(4, 1, 3, 3, seed=1), _randn(2, seed=2)]),
    ("convolution_transposed", lambda x, w: F.conv_transpose1d(x, w, dilation=2, output_padding=1),
     [_randn(2, 2, 4), _randn(2, 3, 2, seed=1)]),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), [_randn(1, 8, 2, 3)]),
    ("upsample_nearest1d", lambda x: F.interpolate(x, size=7), [_randn(1, 2, 3)]),
    # double backward: the first gradient, taken with create_graph, is the function checked
    ("convolution_backward", lambda x, w: gv.autograd.grad(F.conv2d(x, w, padding=1).pow(2).sum(), (x, w),
                                                          create_graph=True),
     [_randn(1, 2, 3, 3), _randn(2, 2, 2, 2, seed=1)]),
    ("convolution_backward", lambda x, w: gv.autograd.grad(F.conv1d(x, w, stride=2).pow(3).sum(), x,
                                                          create_graph=True)[0],
     [_randn(2, 1, 5), _randn(2, 1, 3, seed=2)]),
    ("leaky_relu_backward", lambda x: gv.autograd.grad(F.leaky_relu(x, 0.2).pow(2).sum(), x, create_graph=True)[0],
     [_randn(2, 3) + 0.05]),
    ("max_pool2d_with_indices_backward",
     lambda x: gv.autograd.grad(F.max_pool2d(x, 2).pow(2).sum(), x, create_graph=True)[0], [_randn(1, 2, 4, 4)]),
    ("avg_pool2d_backward",
     lambda x: gv.autograd.grad(F.avg_pool2d(x, 3, 2, 1).pow(2).sum(), x, create_graph=True)[0], [_randn(1, 2, 5, 5)]),
    ("adaptive_avg_pool2d_backward",
     lambda x: gv.autograd.grad(F.adaptive_avg_pool2d(x, (2, 3)).pow(2).sum(), x, create_graph=True)[0],
     [_randn(1, 2, 5, 5)]),
    ("gelu_backward", lambda x: gv.autograd.grad(F.gelu(x).pow(2).sum(), x, create_graph=True)[0], [_randn(2, 3)]),
    ("native_layer_norm_backward", lambda x, w, b: gv.autograd.grad(
        (F.layer_norm(x, (4,), w, b) ** 2 * gv.arange(4.0, dtype=gv.float64)).sum(), (x, w), create_graph=True),
     [_randn(3, 4), _randn(4, seed=1), _randn(4, seed=2)]),
    ("native_batch_norm_backward", lambda x, w, b: gv.autograd.grad(
        (F.batch_norm(x, None, None, w, b, training=True) ** 2 * gv.arange(3.0, dtype=gv.float64)[:, None]).sum(),
        (x, w), create_graph=True), [_randn(4, 3, 2), _randn(3, seed=1), _randn(3, seed=2)]),
    ("native_batch_norm_backward", lambda x, w: gv.autograd.grad(
        (F.batch_norm(x, gv.tensor([0.1, -0.2, 0.3], dtype=gv.float64), gv.tensor([1.5, 0.5, 2.0], dtype=gv.float64),
                      w, None, training=False) ** 2).sum(), (x, w), create_graph=True),
     [_randn(4, 3), _randn(3, seed=1)]),
    ("softplus_backward", lambda x: gv.autograd.grad(F.softplus(x, 2.0, 3.0).pow(2).sum(), x, create_graph=True)[0],
     [_randn(2, 3) * 0.5]),
    ("gelu_backward", lambda x: gv.autograd.grad(F.gelu(x, approximate="tanh").sum(), x, create_graph=True)[0],
     [_randn(2, 3)]),
    ("upsample_nearest2d", lambda x: F.interpolate(x, scale_factor=(2, 1.5)), [_randn(1, 2, 3, 4)]),
    ("upsample_nearest3d", lambda x: F.interpolate(x, size=(3, 4, 2)), [_randn(1, 1, 2, 3, 3)]),
    ("upsample_nearest-exact1d", lambda x: F.interpolate(x, size=5, mode="nearest-exact"), [_randn(1, 2, 3)]),
    ("upsample_nearest-exact2d", lambda x: F.interpolate(x, scale_factor=0.7, mode="nearest-exact"),
     [_randn(1, 2, 5, 4)]),
    ("upsample_nearest-exact3d", lambda x: F.interpolate(x, size=(2, 4, 3), mode="nearest-exact"),
     [_randn(1, 1, 3, 3, 2)]),
    ("upsample_linear1d", lambda x: F.interpolate(x, scale_factor=2.5, mode="linear"), [_randn(2, 2, 4)]),
    ("upsample_bilinear2d", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear", align_corners=True),
     [_randn(1, 2, 3, 4)]),
    ("upsample_bilinear2d", lambda x: F.interpolate(x, scale_factor=1.6, mode="bilinear"), [_randn(1, 2, 3, 4)]),
    ("upsample_bicubic2d", lambda x: F.interpolate(x, size=(5, 3), mode="bicubic", align_corners=True),
     [_randn(1, 2, 3, 4)]),
    ("upsample_bicubic2d", lambda x: F.interpolate(x, scale_factor=1.6, mode="bicubic"), [_randn(1, 2, 3, 4)]),
    ("upsample_trilinear3d", lambda x: F.interpolate(x, size=(3, 4, 3), mode="trilinear"), [_randn(1, 1, 2, 3, 2)]),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), [_randn(2, 1, 4, 2)]),
    ("leaky_relu_", lambda x: F.leaky_relu(x * 1, 0.2, inplace=True), [_away(_randn(2, 3), (0.0,))]),
    ("affine_grid_generator", lambda t: F.affine_grid(t, [1, 1, 3, 4], align_corners=False), [_randn(1, 2, 3)]),
    # bilinear sampling is piecewise linear in the grid: random points inside, off the pixel lines
    ("grid_sampler_2d", lambda x, g: F.grid_sample(x, g, align_corners=False),
     [_randn(1, 2, 3, 4), np.random.default_rng(1).uniform(-0.8, 0.8, (1, 2, 3, 2))]),
    ("grid_sampler_3d", lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=True),
     [_randn(1, 1, 2, 3, 3), np.random.default_rng(2).uniform(-0.8, 0.8, (1, 2, 2, 2, 3))]),
    # padding, group norm and at::norm(p, dim) (gradviz/ops/nn_pad_ops.py, nn_group_norm_ops.py)
    ("constant_pad_nd", lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), [_randn(2, 3, 4)]),
    ("reflection_pad1d", lambda x: F.pad(x, (2, 3), mode="reflect"), [_randn(2, 4)]),
    ("reflection_pad2d", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), [_randn(1, 3, 4)]),
    ("reflection_pad3d", lambda x: F.pad(x, (1, 0, 0, 1, 1, 1), mode="reflect"), [_randn(1, 2, 3, 3)]),
    ("replication_pad1d", lambda x: F.pad(x, (2, 3), mode="replicate"), [_randn(2, 3, 4)]),
    ("replication_pad2d", lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"), [_randn(1, 2, 3, 4)]),
    ("replication_pad3d", lambda x: F.pad(x, (1, 0, 0, 1, 2, 1), mode="replicate"), [_randn(1, 1, 2, 3, 3)]),
    ("native_group_norm", lambda x, w, b: F.group_norm(x, 2, w, b),
     [_randn(2, 4, 3), _randn(4, seed=1), _randn(4, seed=2)]),
    ("native_group_norm", lambda x: F.group_norm(x, 3), [_randn(2, 6, 2, 2)]),
    ("norm_scalaropt_dim", lambda a, b: F.pairwise_distance(a, b), [_randn(3, 4), _randn(3, 4, seed=1)]),
    ("norm_scalaropt_dim", lambda a, b: F.pairwise_distance(a, b, p=3.0, keepdim=True),
     [_randn(3, 4), _randn(4, seed=1)]),
    # gradviz/ops/nn_activation_ops.py: inputs kept off each op's kinks
    ("softplus", lambda x: F.softplus(x), [_randn(2, 3)]),
    ("softplus", lambda x: F.softplus(x, 2.0, 1.5), [_away(_randn(2, 3) * 2, (0.75,))]),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.8), [_away(_randn(2, 3), (-0.5, 0.8))]),
    ("hardtanh", lambda x: F.hardtanh(x * 1, inplace=True), [_away(_randn(2, 3), (-1.0, 1.0))]),
    ("hardtanh", lambda x: F.relu6(x * 4), [_away(_randn(2, 3) * 4, (0.0, 6.0)) / 4]),
    ("hardswish", lambda x: F.hardswish(x * 3), [_away(_randn(2, 4), (-1.0, 1.0))]),
    ("hardsigmoid", lambda x: F.hardsigmoid(x * 3), [_away(_randn(2, 4), (-1.0, 1.0))]),
    ("hardsigmoid", lambda x: F.hardsigmoid(x * 3, inplace=True), [_away(_randn(2, 4), (-1.0, 1.0))]),
    ("mish", lambda x: F.mish(x * 3), [_randn(2, 3)]),
    ("mish", lambda x: F.mish(x * 1, inplace=True), [_randn(2, 3)]),
    ("selu", lambda x: F.selu(x), [_away(_randn(2, 3), (0.0,))]),
    ("selu_", lambda x: F.selu(x * 1, inplace=True), [_away(_randn(2, 3), (0.0,))]),
    ("celu", lambda x: F.celu(x, 0.5), [_away(_randn(2, 3), (0.0,))]),
    ("celu_", lambda x: F.celu(x * 1, 2.0, inplace=True), [_away(_randn(2, 3), (0.0,))]),
    ("threshold", lambda x: F.threshold(x, 0.1, 5.0), [_away(_randn(2, 3), (0.1,))]),
    ("threshold_", lambda x: F.threshold(x * 1, 0.1, 5.0, inplace=True), [_away(_randn(2, 3), (0.1,))]),
    ("log_sigmoid", lambda x: F.logsigmoid(x * 3), [_randn(2, 3)]),
    ("glu", lambda x: F.glu(x), [_randn(2, 4)]),
    ("glu", lambda x: F.glu(x, 0), [_randn(2, 3)]),
    ("prelu", lambda x, w: F.prelu(x, w), [_away(_randn(2, 3, 2), (0.0,)), _randn(3, seed=1)]),
    ("prelu", lambda x, w: F.prelu(x, w), [_away(_randn(4), (0.0,)), _randn(1, seed=1)]),
    ("hardtanh_backward", lambda x, w: gv.autograd.grad((F.hardtanh(x, -0.5, 0.8) * w).sum(), x, create_graph=True)[0],
     [_away(_randn(2, 3), (-0.5, 0.8)), _randn(2, 3, seed=1)]),
]

# node name -> (step, rtol) for cases through float32
NN_WIDE_STEP = {"MkldnnRnnLayerBackward0": (1e-2, 2e-2)}
