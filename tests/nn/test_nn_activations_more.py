"""The activations of gradviz/nn/_functional_activations.py and nn/modules/activation.py
against torch 2.13: outputs, gradients, node names, next_functions, saved values, in-place forms,
errors and module reprs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import gradviz as gv

GF = gv.nn.functional
TF = torch.nn.functional

# values on both sides of every kink (hardswish's -3/3, relu6's 0/6, thresholds) but not on one
_X = np.array([[-8.0, -3.5, -2.0, -0.7, -0.05, 0.05], [0.3, 0.9, 2.5, 4.0, 6.5, 25.0]])


def _graph(fn) -> list:
    """(depth, name) for each node reached from fn, depth first, as next_functions orders them."""
    out: list = []

    def walk(node, depth):
        if node is None:
            out.append((depth, None))
            return
        out.append((depth, node.name().replace("torch::autograd::", "")))
        for child, _ in node.next_functions:
            walk(child, depth + 1)

    walk(fn, 0)
    return out


def _both(x: np.ndarray, dtype: str = "float64"):
    t = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    g = gv.tensor(x, dtype=getattr(gv, dtype), requires_grad=True)
    return t, g


def _compare(tf, gf, x: np.ndarray = _X, rtol: float = 1e-10, dtype: str = "float64") -> None:
    t, g = _both(x, dtype)
    ty, gy = tf(t), gf(g)
    np.testing.assert_allclose(gy.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=rtol)
    assert _graph(gy.grad_fn) == _graph(ty.grad_fn)
    w = np.random.default_rng(1).standard_normal(ty.shape)
    ty.backward(torch.tensor(w, dtype=ty.dtype))
    gy.backward(gv.tensor(w, dtype=gy.dtype))
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=rtol)


OUT_OF_PLACE = {
    "softplus": lambda F: lambda x: F.softplus(x),
    "softplus_beta": lambda F: lambda x: F.softplus(x, 2.0, 5.0),
    "hardtanh": lambda F: lambda x: F.hardtanh(x),
    "hardtanh_bounds": lambda F: lambda x: F.hardtanh(x, -2.5, 3.0),
    "relu6": lambda F: lambda x: F.relu6(x),
    "hardswish": lambda F: lambda x: F.hardswish(x),
    "hardsigmoid": lambda F: lambda x: F.hardsigmoid(x),
    "mish": lambda F: lambda x: F.mish(x),
    "selu": lambda F: lambda x: F.selu(x),
    "celu": lambda F: lambda x: F.celu(x, 0.7),
    "softsign": lambda F: lambda x: F.softsign(x),
    "tanhshrink": lambda F: lambda x: F.tanhshrink(x),
    "logsigmoid": lambda F: lambda x: F.logsigmoid(x),
    "softmin": lambda F: lambda x: F.softmin(x, 1),
    "softmin0": lambda F: lambda x: F.softmin(x, dim=0, dtype=None),
    "glu": lambda F: lambda x: F.glu(x),
    "glu0": lambda F: lambda x: F.glu(x, 0),
    "threshold": lambda F: lambda x: F.threshold(x, 0.1, 20.0),
}

IN_PLACE = {
    "hardtanh": lambda F: lambda x: F.hardtanh(x * 1, -2.5, 3.0, inplace=True),
    "hardtanh_": lambda F: lambda x: F.hardtanh_(x * 1),
    "relu6": lambda F: lambda x: F.relu6(x * 1, inplace=True),
    "hardswish": lambda F: lambda x: F.hardswish(x * 1, inplace=True),
    "hardsigmoid": lambda F: lambda x: F.hardsigmoid(x * 1, inplace=True),
    "mish": lambda F: lambda x: F.mish(x * 1, inplace=True),
    "selu": lambda F: lambda x: F.selu(x * 1, inplace=True),
    "celu": lambda F: lambda x: F.celu(x * 1, 0.7, inplace=True),
    "threshold": lambda F: lambda x: F.threshold(x * 1, 0.1, 20.0, inplace=True),
    "threshold_": lambda F: lambda x: F.threshold_(x * 1, 0.1, 20.0),
}


@pytest.mark.parametrize("name", sorted(OUT_OF_PLACE))
def test_out_of_place(name):
    _compare(OUT_OF_PLACE[name](TF), OUT_OF_PLACE[name](GF))


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place(name):
    _compare(IN_PLACE[name](TF), IN_PLACE[name](GF))


@pytest.mark.parametrize("name", ["softplus", "hardswish", "mish", "selu", "logsigmoid", "glu"])
def test_float32(name):
    _compare(OUT_OF_PLACE[name](TF), OUT_OF_PLACE[name](GF), rtol=1e-5, dtype="float32")


def test_in_place_bumps_version_and_returns_input():
    _, g = _both(_X)
    h = g * 1
    v = h._version
    assert GF.hardswish(h, inplace=True) is h
    assert h._version == v + 1


@pytest.mark.parametrize("wshape,xshape", [((1,), (2, 6)), ((3,), (2, 3, 4)), ((1,), (5,)), ((), ()), ((3,), (3, 3))])
def test_prelu(wshape, xshape):
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal(xshape), rng.standard_normal(wshape)
    tx, gx = _both(xv)
    tw, gw = _both(wv)
    ty, gy = TF.prelu(tx, tw), GF.prelu(gx, gw)
    np.testing.assert_allclose(gy.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    assert _graph(gy.grad_fn) == _graph(ty.grad_fn)
    assert tuple(gy.grad_fn._saved_weight.shape) == tuple(ty.grad_fn._saved_weight.shape)
    ty.sum().backward()
    gy.sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_saved_values():
    t, g = _both(_X)
    for f, keys in [
        (lambda F, x: F.softplus(x, 2.0, 5.0), ["beta", "threshold"]),
        (lambda F, x: F.hardtanh(x, -2.5, 3.0), ["min_val", "max_val"]),
        (lambda F, x: F.relu6(x), ["min_val", "max_val"]),
        (lambda F, x: F.selu(x), ["alpha", "scale", "input_scale"]),
        (lambda F, x: F.selu(x * 1, inplace=True), ["alpha", "scale", "input_scale"]),
        (lambda F, x: F.celu(x, 0.7), ["alpha"]),
        (lambda F, x: F.threshold(x, 0.1, 20.0), ["threshold"]),
    ]:
        tn, gn = f(TF, t).grad_fn, f(GF, g).grad_fn
        for k in keys:
            assert getattr(gn, "_saved_" + k) == pytest.approx(getattr(tn, "_saved_" + k)), k
    tn, gn = TF.logsigmoid(t).grad_fn, GF.logsigmoid(g).grad_fn
    np.testing.assert_allclose(gn._saved_buffer.numpy(), tn._saved_buffer.numpy(), rtol=1e-12)
    # the in-place forms that read the input keep its value from before the write
    tn, gn = TF.hardswish(t * 1, inplace=True).grad_fn, GF.hardswish(g * 1, inplace=True).grad_fn
    np.testing.assert_array_equal(gn._saved_self.detach().numpy(), tn._saved_self.detach().numpy())


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize(
    "case",
    [
        lambda m, F: F.glu(m.randn(3, 5)),
        lambda m, F: F.glu(m.tensor(1.0)),
        lambda m, F: F.hardtanh(m.randn(3), 2.0, 1.0),
        lambda m, F: F.softplus(m.arange(3)),
        lambda m, F: F.mish(m.arange(3)),
        lambda m, F: F.hardswish(m.arange(3)),
        lambda m, F: F.selu(m.arange(3)),
        lambda m, F: F.logsigmoid(m.arange(3)),
        lambda m, F: F.celu(m.randn(3), 0.0),
        lambda m, F: F.prelu(m.randn(2, 3), m.randn(2)),
        lambda m, F: F.prelu(m.randn(2, 3), m.randn(1, 1)),
        lambda m, F: m.nn.Hardtanh(1.0, 1.0),
        lambda m, F: F.prelu(m.randn(2, 3, dtype=m.float64), m.randn(3)),
    ],
)
def test_errors(case):
    expected = _error(lambda: case(torch, TF))
    assert expected is not None
    assert _error(lambda: case(gv, GF)) == expected


def test_integer_hardtanh_and_threshold():
    a = np.arange(5)
    assert GF.hardtanh(gv.tensor(a)).tolist() == TF.hardtanh(torch.tensor(a)).tolist()
    assert GF.threshold(gv.tensor(a), 1, 9).tolist() == TF.threshold(torch.tensor(a), 1, 9).tolist()


def test_softmin_implicit_dim_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = GF.softmin(gv.tensor(_X))
    assert "softmin" in str(w[0].message)
    np.testing.assert_allclose(y.numpy(), TF.softmin(torch.tensor(_X), 1).numpy(), rtol=1e-12)


MODULES = [
    lambda nn: nn.Softplus(), lambda nn: nn.Softplus(2, 5), lambda nn: nn.Hardtanh(),
    lambda nn: nn.Hardtanh(-2, 2, True),
    lambda nn: nn.ReLU6(), lambda nn: nn.ReLU6(True), lambda nn: nn.Hardswish(), lambda nn: nn.Hardswish(True),
    lambda nn: nn.Hardsigmoid(True), lambda nn: nn.Mish(), lambda nn: nn.Mish(True), lambda nn: nn.SELU(),
    lambda nn: nn.SELU(True), lambda nn: nn.CELU(), lambda nn: nn.CELU(0.5, True), lambda nn: nn.Softsign(),
    lambda nn: nn.Tanhshrink(), lambda nn: nn.LogSigmoid(), lambda nn: nn.Softmin(1), lambda nn: nn.Softmin(),
    lambda nn: nn.GLU(), lambda nn: nn.GLU(0), lambda nn: nn.PReLU(), lambda nn: nn.PReLU(3, 0.1),
    lambda nn: nn.Threshold(0.1, 20), lambda nn: nn.Threshold(0.1, 20, True),
]


@pytest.mark.parametrize("make", MODULES)
def test_module_repr_and_forward(make):
    tm, gm = make(torch.nn), make(gv.nn)
    assert repr(gm) == repr(tm)
    assert [(k, tuple(p.shape)) for k, p in gm.named_parameters()] == [
        (k, tuple(p.shape)) for k, p in tm.named_parameters()
    ]
    for (_, gp), (_, tp) in zip(gm.named_parameters(), tm.named_parameters(), strict=True):
        np.testing.assert_array_equal(gp.detach().numpy(), tp.detach().numpy())
    x = np.random.default_rng(0).standard_normal((4, 3, 2))
    t, g = _both(x, "float32")  # the modules' parameters are float32, and prelu refuses to promote
    ty, gy = tm(t * 1), gm(g * 1)
    np.testing.assert_allclose(gy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert _graph(gy.grad_fn) == _graph(ty.grad_fn)
    ty.sum().backward()
    gy.sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (_, gp), (_, tp) in zip(gm.named_parameters(), tm.named_parameters(), strict=True):
        np.testing.assert_allclose(gp.grad.numpy(), tp.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize(
    "name",
    ["hardtanh", "relu6", "threshold"],
)
def test_double_backward_graph(name):
    # create_graph=True: the gradient's node is torch's fused backward (HardtanhBackwardBackward0, ...)
    t, g = _both(_X)
    tg = torch.autograd.grad(OUT_OF_PLACE[name](TF)(t).sum() * 1, t, create_graph=True)[0]
    gg = gv.autograd.grad(OUT_OF_PLACE[name](GF)(g).sum() * 1, g, create_graph=True)[0]
    assert _graph(gg.grad_fn) == _graph(tg.grad_fn)
    np.testing.assert_array_equal(gg.detach().numpy(), tg.detach().numpy())


@pytest.mark.parametrize("name", ["hardtanh", "hardswish", "mish", "threshold"])
def test_in_place_saves_a_clone(name):
    t, g = _both(_X)
    tn, gn = IN_PLACE[name](TF)(t).grad_fn, IN_PLACE[name](GF)(g).grad_fn
    assert gn._saved_self.grad_fn.name() == tn._saved_self.grad_fn.name() == "CloneBackward0"
    np.testing.assert_array_equal(gn._saved_self.detach().numpy(), tn._saved_self.detach().numpy())


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "threshold_"])
def test_double_backward_graph_in_place(name):
    # the fused backward's self edge is the saved clone's CloneBackward0, as in torch
    t, g = _both(_X)
    tg = torch.autograd.grad(IN_PLACE[name](TF)(t).sum(), t, create_graph=True)[0]
    gg = gv.autograd.grad(IN_PLACE[name](GF)(g).sum(), g, create_graph=True)[0]
    assert _graph(gg.grad_fn) == _graph(tg.grad_fn)
    np.testing.assert_array_equal(gg.detach().numpy(), tg.detach().numpy())


def test_hardtanh_old_keywords_warn():
    with pytest.warns(FutureWarning, match="min_value"):
        tm = torch.nn.Hardtanh(min_value=-2.0)
    with pytest.warns(FutureWarning, match="min_value"):
        gm = gv.nn.Hardtanh(min_value=-2.0)
    assert repr(gm) == repr(tm)
