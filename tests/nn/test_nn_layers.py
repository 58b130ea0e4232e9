"""torch.nn layers against torch 2.13: the same outputs and gradients (parameters copied from
torch), backward nodes, next_functions, sequence numbers and execution order."""

from __future__ import annotations

import pytest

from tests._nn_diff import check_fn, check_module, idx, leaf


def x_(*shape: int, seed: int = 1, rg: bool = True):
    return lambda T: (leaf(T, *shape, seed=seed, requires_grad=rg),)


@pytest.mark.parametrize("shape", [(4, 3), (5, 4, 3), (2, 2, 2, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    check_module(lambda nn: nn.Linear(3, 2, bias=bias), x_(*shape))


def test_linear_input_without_grad():
    check_module(lambda nn: nn.Linear(3, 2), x_(4, 3, rg=False))


def test_mlp_sequential():
    check_module(lambda nn: nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 2),
                                          nn.Sigmoid()), x_(4, 3))


@pytest.mark.parametrize("make", [
    lambda nn: nn.GELU(), lambda nn: nn.GELU(approximate="tanh"), lambda nn: nn.SiLU(), lambda nn: nn.LeakyReLU(0.2),
    lambda nn: nn.Softmax(dim=1), lambda nn: nn.LogSoftmax(dim=-1), lambda nn: nn.Identity(), lambda nn: nn.Flatten(),
    lambda nn: nn.Flatten(0, 1), lambda nn: nn.Unflatten(1, (2, 2)), lambda nn: nn.ReLU(),
])
def test_activations_and_shapes(make):
    check_module(make, x_(3, 4, 2))


def test_dropout_eval_and_p0():
    check_module(lambda nn: nn.Dropout(0.3), x_(4, 3), train=False)
    check_module(lambda nn: nn.Dropout(0.0), x_(4, 3))


def test_dropout_training_graph():
    # the mask is random (each library its own stream): compare the graph and the gradient's
    # relation to the output, not the values
    import torch

    import gradviz
    from tests._diff import walk

    for T in (torch, gradviz):
        x = leaf(T, 200, 5, seed=3)
        y = T.nn.functional.dropout(x, 0.25, training=True)
        names = [s[0].removeprefix("torch::autograd::") for s in walk([y])[0]]
        assert names == ["MulBackward0", "AccumulateGrad"], names
        assert y.grad_fn.next_functions[1] == (None, 0)
        y.sum().backward()
        kept = (y.detach().numpy() != 0)
        assert ((x.grad.numpy() != 0) == kept).all()
        assert abs(x.grad.numpy()[kept] - 1 / 0.75).max() < 1e-12
        assert 0.6 < kept.mean() < 0.9


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding(padding_idx):
    check_module(lambda nn: nn.Embedding(6, 3, padding_idx=padding_idx), lambda T: (idx(T, [1, 2, 1], [5, 0, 1]),))


def test_embedding_from_pretrained():
    import torch

    import gradviz

    w = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    for T in (torch, gradviz):
        e = T.nn.Embedding.from_pretrained(T.tensor(w, dtype=T.float64), freeze=False)
        out = e(idx(T, 2, 0, 2))
        out.sum().backward()
        assert out.tolist() == [[5.0, 6.0], [1.0, 2.0], [5.0, 6.0]]
        assert e.weight.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]
        assert T.nn.Embedding.from_pretrained(T.tensor(w)).weight.requires_grad is False


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine):
    check_module(lambda nn: nn.LayerNorm(4, elementwise_affine=affine), x_(3, 2, 4))
    check_module(lambda nn: nn.LayerNorm((2, 4)), x_(3, 2, 4))


def test_layer_norm_functional():
    check_fn(lambda T: (T.nn.functional.layer_norm(x := leaf(T, 3, 5), (5,)), [x]))


@pytest.mark.parametrize("kw", [
    {}, {"stride": 2}, {"padding": 1}, {"dilation": 2}, {"groups": 2}, {"bias": False},
    {"stride": (2, 1), "padding": (1, 2)}, {"padding": "same"},
])
def test_conv2d(kw):
    check_module(lambda nn: nn.Conv2d(4, 6, 3, **kw), x_(2, 4, 7, 8))


def test_conv2d_unbatched_and_no_input_grad():
    check_module(lambda nn: nn.Conv2d(2, 3, 3), x_(2, 5, 5))
    check_module(lambda nn: nn.Conv2d(2, 3, 3), x_(2, 2, 5, 5, rg=False))


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"groups": 2, "dilation": 2}])
def test_conv1d(kw):
    check_module(lambda nn: nn.Conv1d(4, 6, 3, **kw), x_(2, 4, 9))


@pytest.mark.parametrize("make", [
    lambda nn: nn.MaxPool2d(2), lambda nn: nn.MaxPool2d(3, stride=2, padding=1), lambda nn: nn.MaxPool2d(2, 1),
    lambda nn: nn.MaxPool2d(2, ceil_mode=True), lambda nn: nn.AvgPool2d(2), lambda nn: nn.AvgPool2d(3, 2, 1),
    lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False), lambda nn: nn.AdaptiveAvgPool2d(1),
    lambda nn: nn.AdaptiveAvgPool2d((2, 3)), lambda nn: nn.AdaptiveAvgPool2d((3, 2)),
])
def test_pooling(make):
    check_module(make, x_(2, 3, 7, 7))
    check_module(make, x_(3, 6, 5))


def test_conv_net():
    check_module(lambda nn: nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3),
    ), x_(2, 1, 8, 8))


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm(train):
    check_module(lambda nn: nn.BatchNorm1d(3), x_(5, 3), train=train)
    check_module(lambda nn: nn.BatchNorm1d(3), x_(5, 3, 4), train=train)
    check_module(lambda nn: nn.BatchNorm2d(3), x_(4, 3, 2, 2), train=train)
    check_module(lambda nn: nn.BatchNorm2d(3, affine=False, momentum=None), x_(4, 3, 2, 2), train=train)


def test_batch_norm_running_stats_over_steps():
    import numpy as np
    import torch

    import gradviz

    stats = []
    for T in (torch, gradviz):
        bn = T.nn.BatchNorm2d(2).double()
        for s in range(3):
            bn(leaf(T, 4, 2, 3, 3, seed=s))
        stats.append([bn.running_mean.numpy(), bn.running_var.numpy(), int(bn.num_batches_tracked)])
    np.testing.assert_allclose(stats[1][0], stats[0][0], rtol=1e-12)
    np.testing.assert_allclose(stats[1][1], stats[0][1], rtol=1e-12)
    assert stats[0][2] == stats[1][2] == 3


@pytest.mark.parametrize("shape", [(4,), (3, 4), ()])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(shape, bias):
    check_module(lambda nn: nn.Bilinear(2, 3, 5, bias=bias),
                 lambda T: (leaf(T, *shape, 2, seed=1), leaf(T, *shape, 3, seed=2)))


def test_relu_inplace():
    def make(nn):
        return nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2))

    check_module(make, x_(5, 3))
    same = []
    for T in (__import__("torch"), __import__("gradviz")):
        leaf_ = leaf(T, 3)
        try:
            T.nn.functional.relu(leaf_, inplace=True)
        except RuntimeError as e:
            same.append(str(e))
    assert len(same) == 2 and same[0] == same[1]


def test_linear_double_backward_and_refusals():
    import numpy as np
    import torch

    import gradviz

    res = []
    for T in (torch, gradviz):
        torch.manual_seed(0)
        x = leaf(T, 4, 3)
        w = leaf(T, 2, 3, seed=2)
        b = leaf(T, 2, seed=3)
        y = T.nn.functional.linear(x, w, b).tanh().sum()
        (gx,) = T.autograd.grad(y, x, create_graph=True)
        (gx * gx).sum().backward()
        res.append((gx.detach().numpy(), w.grad.numpy(), b.grad.numpy()))
    for a, b_ in zip(*res):
        np.testing.assert_allclose(b_, a, rtol=1e-10)
    x = leaf(gradviz, 2, 2, 4, 4)
    y = gradviz.nn.GroupNorm(1, 2).double()(x).pow(2).sum()
    with pytest.raises(NotImplementedError, match="double backward through NativeGroupNormBackward0"):
        gradviz.autograd.grad(y, x, create_graph=True)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 2, "stride": 1, "dilation": 2}, {"kernel_size": 3, "ceil_mode": True}])
def test_max_pool_indices_with_nans_and_ties_match_torch(kw):
    """torch's CPU kernel keeps the first of equal maxima and takes a NaN over any number (the last
    NaN of a window: its test is ``val > max || isnan(val)``); the gradient follows the index."""
    import numpy as np
    import torch

    import gradviz

    rng = np.random.default_rng(3)
    data = rng.integers(0, 3, (2, 3, 9, 8)).astype(np.float64)  # many ties
    data[rng.random(data.shape) < 0.15] = np.nan
    got = []
    for T in (torch, gradviz):
        x = T.tensor(data, requires_grad=True)
        out, ind = T.nn.functional.max_pool2d(x, return_indices=True, **kw)
        out.backward(T.ones_like(out))
        got.append((out.detach().numpy(), ind.numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(got[1][0], got[0][0])  # NaNs in the same places
    np.testing.assert_array_equal(got[1][1], got[0][1])
    np.testing.assert_array_equal(got[1][2], got[0][2])
