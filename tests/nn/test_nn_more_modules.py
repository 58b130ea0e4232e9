"""The nn modules added for issue 34 (the losses, shrinks, Softmax2d, the 1-d/3-d pads), compared with torch:
values, the node the loss ends in and the nodes under it, the gradients of every input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


def _graph(fn, depth=4):
    if fn is None or depth == 0:
        return None
    return (fn.name().split("::")[-1], [_graph(f, depth - 1) for f, _ in fn.next_functions])


def _inputs(T):
    T.manual_seed(0)
    a = T.randn(4, 3, dtype=T.float64, requires_grad=True)
    b = T.randn(4, 3, dtype=T.float64, requires_grad=True)
    c = T.randn(4, 3, dtype=T.float64, requires_grad=True)
    return a, b, c


def _sign(T):
    return T.tensor([1.0, -1.0, 1.0, -1.0], dtype=T.float64)


CASES = {
    "cosine_embedding": lambda T, a, b, c: T.nn.CosineEmbeddingLoss(margin=0.1)(a, b, _sign(T)),
    "cosine_embedding 1-d sum": lambda T, a, b, c: T.nn.functional.cosine_embedding_loss(
        a[0], b[0], T.tensor(1.0, dtype=T.float64), reduction="sum"),
    "cosine_embedding none": lambda T, a, b, c: T.nn.functional.cosine_embedding_loss(a, b, _sign(T),
                                                                                        reduction="none"),
    "margin_ranking": lambda T, a, b, c: T.nn.MarginRankingLoss(margin=0.2)(a[:, 0], b[:, 0], _sign(T)),
    "hinge_embedding": lambda T, a, b, c: T.nn.HingeEmbeddingLoss()(a, T.ones(4, 3, dtype=T.float64) - 2 *
                                                                     (T.arange(12.0).view(4, 3) % 2).double()),
    "soft_margin": lambda T, a, b, c: T.nn.SoftMarginLoss()(a, _sign(T)[:, None].expand(4, 3)),
    "soft_margin sum": lambda T, a, b, c: T.nn.functional.soft_margin_loss(a, b.detach().sign(), reduction="sum"),
    "poisson_nll": lambda T, a, b, c: T.nn.PoissonNLLLoss()(a, b.abs()),
    "poisson_nll not log, full": lambda T, a, b, c: T.nn.PoissonNLLLoss(log_input=False, full=True)(
        a.abs() + 0.1, b.abs() * 3),
    "triplet_margin": lambda T, a, b, c: T.nn.TripletMarginLoss(margin=1.5)(a, b, c),
    "triplet_margin swap p1": lambda T, a, b, c: T.nn.functional.triplet_margin_loss(a, b, c, p=1, swap=True),
    "gaussian_nll": lambda T, a, b, c: T.nn.GaussianNLLLoss()(a, b, c.abs() + 0.1),
    "gaussian_nll full, var per row": lambda T, a, b, c: T.nn.GaussianNLLLoss(full=True, reduction="sum")(
        a, b, c[:, 0].abs() + 0.1),
    "multilabel_soft_margin": lambda T, a, b, c: T.nn.MultiLabelSoftMarginLoss()(a, (b > 0).double()),
    "multilabel_soft_margin weight": lambda T, a, b, c: T.nn.functional.multilabel_soft_margin_loss(
        a, (b > 0).double(), weight=T.tensor([1.0, 2.0, 0.5], dtype=T.float64)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_loss_matches_torch(name):
    runs = []
    for T in (torch, gradviz):
        a, b, c = _inputs(T)
        out = CASES[name](T, a, b, c)
        graph = _graph(out.grad_fn)
        out.sum().backward()
        runs.append((out.tolist(), graph, [None if t.grad is None else t.grad.tolist() for t in (a, b, c)]))
    (want, want_graph, want_grads), (got, got_graph, got_grads) = runs
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert got_graph == want_graph
    for g, w in zip(got_grads, want_grads, strict=True):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_soft_margin_loss_refuses_a_target_that_requires_grad_as_torch():
    msgs = []
    for T in (torch, gradviz):
        a, b, _ = _inputs(T)
        with pytest.raises(RuntimeError) as info:
            T.nn.functional.soft_margin_loss(a, b.sign())
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


SHRINK = {
    "Hardshrink": lambda T, a: T.nn.Hardshrink()(a),
    "Hardshrink 1.0": lambda T, a: T.nn.functional.hardshrink(a, 1.0),
    "Softshrink": lambda T, a: T.nn.Softshrink(0.3)(a),
    "Softmax2d": lambda T, a: T.nn.Softmax2d()(a.view(1, 4, 3, 1)),
}


@pytest.mark.parametrize("name", list(SHRINK))
def test_shrink_and_softmax2d_match_torch(name):
    runs = []
    for T in (torch, gradviz):
        a, _, _ = _inputs(T)
        out = SHRINK[name](T, a)
        graph = _graph(out.grad_fn)
        (out * T.arange(float(out.numel()), dtype=T.float64).view(out.shape)).sum().backward()
        runs.append((out.tolist(), graph, a.grad.tolist()))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-12)
    assert runs[1][1] == runs[0][1]
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=1e-12, atol=1e-15)
    assert repr(SHRINK[name](gradviz, _inputs(gradviz)[0]).grad_fn.name()) == repr(SHRINK[name](torch, _inputs(
        torch)[0]).grad_fn.name())


PADS = {
    "ZeroPad1d": (lambda T: T.nn.ZeroPad1d((1, 2)), (1, 2, 4)),
    "ConstantPad3d": (lambda T: T.nn.ConstantPad3d(1, 3.5), (1, 1, 2, 2, 2)),
    "ZeroPad3d": (lambda T: T.nn.ZeroPad3d((1, 0, 0, 1, 1, 0)), (1, 1, 2, 2, 2)),
    "CircularPad1d": (lambda T: T.nn.CircularPad1d(2), (1, 2, 4)),
    "CircularPad2d": (lambda T: T.nn.CircularPad2d((1, 0, 2, 1)), (1, 1, 3, 3)),
    "CircularPad3d": (lambda T: T.nn.CircularPad3d(1), (1, 1, 2, 2, 2)),
    "ReflectionPad3d": (lambda T: T.nn.ReflectionPad3d(1), (1, 1, 3, 3, 3)),
    "ReplicationPad3d": (lambda T: T.nn.ReplicationPad3d((1, 2, 0, 1, 1, 0)), (1, 1, 2, 2, 2)),
}


@pytest.mark.parametrize("name", list(PADS))
def test_padding_modules_match_torch(name):
    make, shape = PADS[name]
    runs = []
    for T in (torch, gradviz):
        n = 1
        for s in shape:
            n *= s
        x = T.arange(float(n), dtype=T.float64).view(shape).requires_grad_()
        m = make(T)
        out = m(x)
        graph = _graph(out.grad_fn)
        (out * T.arange(float(out.numel()), dtype=T.float64).view(out.shape)).sum().backward()
        runs.append((repr(m), out.tolist(), graph, x.grad.tolist()))
    assert runs[1] == runs[0]


def test_functional_relu_and_leaky_relu_in_place_as_torch():
    runs = []
    for T in (torch, gradviz):
        x = T.tensor([-1.0, 2.0, -0.5], requires_grad=True)
        y, z = x * 1, x * 2
        T.nn.functional.relu_(y)
        T.nn.functional.leaky_relu_(z, 0.2)
        (y.sum() + z.sum()).backward()
        runs.append((_graph(y.grad_fn), _graph(z.grad_fn), y.tolist(), z.tolist(), x.grad.tolist()))
    assert runs[1] == runs[0]
