"""Double backward through convolutions, pooling and activations (gradient penalties, Hessian-
vector products) against torch 2.13: the second-order graph's node names
(ConvolutionBackwardBackward0, NativeLayerNormBackwardBackward0, GeluBackwardBackward0, ...),
next_functions, sequence numbers, execution order, the loss and every gradient (tests/_diff.py)."""

from __future__ import annotations

import pytest

from tests._diff import Case, check, leaf


def _penalty_prog(make_net, x_shape, wrt_params: bool = False, train: bool = True):
    def prog(T):
        T.manual_seed(0)
        net = make_net(T.nn).double().train(train)
        x = leaf(T, *x_shape, seed=5)
        out = net(x)
        wrt = [x] + (list(net.parameters()) if wrt_params else [])
        grads = T.autograd.grad(out.sum(), wrt, create_graph=True)
        gp = sum((g.pow(2).sum() for g in grads), T.zeros((), dtype=T.float64))
        loss = out.mean() + 10 * gp
        return Case(roots=[loss], run=loss.backward, grads_of=[x, *net.parameters()])

    return prog


NETS = {
    "conv2d": (lambda nn: nn.Conv2d(2, 3, 3), (2, 2, 6, 6)),
    "conv2d_strided_padded_dilated": (lambda nn: nn.Conv2d(2, 4, 3, stride=2, padding=2, dilation=2), (2, 2, 7, 6)),
    "conv2d_groups_no_bias": (lambda nn: nn.Conv2d(4, 6, 3, groups=2, bias=False), (2, 4, 5, 5)),
    "conv1d": (lambda nn: nn.Conv1d(2, 3, 3, padding=1), (2, 2, 7)),
    "wgan_gp_critic": (lambda nn: nn.Sequential(
        nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(4, 8, 3, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(),
        nn.Linear(8 * 2 * 2, 1)), (3, 1, 8, 8)),
    "leaky_relu_inplace": (lambda nn: nn.Sequential(nn.Conv2d(1, 2, 3), nn.LeakyReLU(0.1, inplace=True)), (2, 1, 5, 5)),
    "cnn_pools": (lambda nn: nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1), nn.SiLU(), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1), nn.GELU(),
        nn.AvgPool2d(3, 2, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 1)), (2, 1, 8, 8)),
    "wgan_gp_critic_layer_norm": (lambda nn: nn.Sequential(
        nn.Conv2d(1, 4, 3, 2, 1), nn.LayerNorm([4, 4, 4]), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(64, 1)),
        (3, 1, 8, 8)),
    "transformer_block_mlp": (lambda nn: nn.Sequential(nn.LayerNorm(6), nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6),
                                                       nn.LayerNorm(6, bias=False)), (2, 3, 6)),
    "layer_norm_no_affine": (lambda nn: nn.Sequential(nn.Linear(5, 5), nn.LayerNorm(5, elementwise_affine=False)),
                             (4, 5)),
    "critic_batch_norm": (lambda nn: nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(48, 1)),
        (4, 1, 4, 4)),
    "critic_instance_norm": (lambda nn: nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1), nn.InstanceNorm2d(3, affine=True), nn.LeakyReLU(0.2), nn.Flatten(),
        nn.Linear(48, 1)), (2, 1, 4, 4)),
    "mlp_batch_norm_1d_no_affine": (lambda nn: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, affine=False),
                                                             nn.Tanh()), (5, 3)),
    "pinn_mlp": (lambda nn: nn.Sequential(nn.Linear(2, 8), nn.SiLU(), nn.Linear(8, 8), nn.GELU(approximate="tanh"),
                                          nn.Linear(8, 1)), (5, 2)),
}


_FNS = {
    "max_pool": lambda T, x: T.nn.functional.max_pool2d(x, 2),
    "max_pool_overlapping": lambda T, x: T.nn.functional.max_pool2d(x, 3, 1, 1),
    "avg_pool": lambda T, x: T.nn.functional.avg_pool2d(x, 3, 2, 1),
    "adaptive_avg_pool": lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
    "gelu": lambda T, x: T.nn.functional.gelu(x),
    "gelu_tanh": lambda T, x: T.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda T, x: T.nn.functional.silu(x),
    "softplus": lambda T, x: T.nn.functional.softplus(x),
    "softplus_beta_threshold": lambda T, x: T.nn.functional.softplus(x, beta=2.0, threshold=3.0),
}


@pytest.mark.parametrize("name", sorted(_FNS))
def test_second_derivative_of_one_op_matches_torch(name: str) -> None:
    def prog(T):
        x = leaf(T, 2, 3, 6, 6, seed=1)
        y = _FNS[name](T, x * 1.5)
        (gx,) = T.autograd.grad(y.pow(2).sum(), x, create_graph=True)
        loss = gx.pow(2).sum() + y.sum()
        return Case(roots=[loss], run=loss.backward, grads_of=[x])

    check(prog)


@pytest.mark.parametrize("wrt_params", [False, True])
@pytest.mark.parametrize("name", sorted(NETS))
def test_gradient_penalty_matches_torch(name: str, wrt_params: bool) -> None:
    make, shape = NETS[name]
    check(_penalty_prog(make, shape, wrt_params))


@pytest.mark.parametrize("wrt_params", [False, True])
def test_gradient_penalty_through_batch_norm_in_eval_mode(wrt_params: bool) -> None:
    """Running statistics are constants: the input's second derivative comes only through xhat."""
    make, shape = NETS["critic_batch_norm"]
    check(_penalty_prog(make, shape, wrt_params, train=False))


def test_third_order_through_a_convolution() -> None:
    """A convolution's double backward is itself made of recorded ops, so a third derivative works;
    values and gradients against torch. (The graph's names and edges agree too, but not its
    sequence numbers: torch's double backward of ConvolutionBackwardBackward0 makes three nodes
    more, for results nobody reads, which the check counts.)"""
    import numpy as np
    import torch

    import gradviz

    got = []
    for T in (torch, gradviz):
        x, w = leaf(T, 1, 1, 4, 4, seed=1), leaf(T, 2, 1, 2, 2, seed=2)
        y = T.nn.functional.conv2d(x, w)
        (gx,) = T.autograd.grad(y.pow(3).sum(), x, create_graph=True)
        (gxx,) = T.autograd.grad(gx.pow(2).sum(), x, create_graph=True)
        loss = gxx.sum()
        loss.backward()
        got.append([loss.detach().numpy(), x.grad.numpy(), w.grad.numpy()])
    for a, b in zip(*got):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
