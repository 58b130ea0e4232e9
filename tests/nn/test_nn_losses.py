"""torch.nn's losses and their modules against torch 2.13: values, gradients, nodes, order."""

from __future__ import annotations

import pytest

from tests._diff import Case, check
from tests._nn_diff import check_fn, idx, leaf, same_error

REDUCTIONS = ["mean", "sum", "none"]


def _loss_prog(make, inp, tgt):
    def prog(T):
        x = inp(T)
        t = tgt(T)
        loss = make(T.nn)(x, t)
        g = leaf(T, *loss.shape, seed=99, requires_grad=False)
        leaves = [v for v in (x, t) if v.requires_grad]
        return Case(roots=[loss], run=lambda: loss.backward(g), grads_of=leaves)

    return prog


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"])
def test_regression_losses(name, reduction):
    check(_loss_prog(lambda nn: getattr(nn, name)(reduction=reduction), lambda T: leaf(T, 4, 3),
                     lambda T: leaf(T, 4, 3, seed=5, requires_grad=False)))


@pytest.mark.parametrize("kw", [{"beta": 0.5}, {"beta": 0.0}])
def test_smooth_l1_beta(kw):
    check(_loss_prog(lambda nn: nn.SmoothL1Loss(**kw), lambda T: leaf(T, 4, 3), lambda T: leaf(T, 4, 3, seed=5)))


def test_huber_delta_and_target_grad():
    check(_loss_prog(lambda nn: nn.HuberLoss(delta=0.3), lambda T: leaf(T, 4, 3), lambda T: leaf(T, 4, 3, seed=5)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kw", [
    {}, {"ignore_index": 2}, {"label_smoothing": 0.1}, {"label_smoothing": 0.2, "ignore_index": 1},
    {"weight": "w"}, {"weight": "w", "label_smoothing": 0.1},
])
def test_cross_entropy(kw, reduction):
    def make(nn):
        k = dict(kw)
        if k.get("weight") == "w":
            T = __import__("torch") if nn.__name__.startswith("torch") else __import__("gradviz")
            k["weight"] = leaf(T, 3, seed=7, low=0.5, requires_grad=False)
        return nn.CrossEntropyLoss(reduction=reduction, **k)

    check(_loss_prog(make, lambda T: leaf(T, 5, 3), lambda T: idx(T, 0, 2, 1, 2, 1)))


def test_cross_entropy_probabilities_and_nd():
    check(_loss_prog(lambda nn: nn.CrossEntropyLoss(), lambda T: leaf(T, 4, 3),
                     lambda T: T.softmax(leaf(T, 4, 3, seed=2, requires_grad=False), 1)))
    check(_loss_prog(lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1), lambda T: leaf(T, 4, 3),
                     lambda T: T.softmax(leaf(T, 4, 3, seed=2, requires_grad=False), 1)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_module(reduction):
    check(_loss_prog(lambda nn: nn.NLLLoss(reduction=reduction), lambda T: T.log_softmax(leaf(T, 5, 3), 1),
                     lambda T: idx(T, 0, 2, 1, 2, 1)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce(reduction):
    check(_loss_prog(lambda nn: nn.BCELoss(reduction=reduction), lambda T: T.sigmoid(leaf(T, 4, 3)),
                     lambda T: leaf(T, 4, 3, seed=3, low=0.0, requires_grad=False).clamp(0, 1)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("pos", [False, True])
def test_bce_with_logits(reduction, pos):
    def make(nn):
        T = __import__("torch") if nn.__name__.startswith("torch") else __import__("gradviz")
        pw = leaf(T, 3, seed=8, low=0.5, requires_grad=False) if pos else None
        return nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=pw)

    check(_loss_prog(make, lambda T: leaf(T, 4, 3),
                     lambda T: leaf(T, 4, 3, seed=3, low=0.0, requires_grad=False).clamp(0, 1)))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div(reduction):
    check(_loss_prog(lambda nn: nn.KLDivLoss(reduction=reduction), lambda T: T.log_softmax(leaf(T, 4, 3), 1),
                     lambda T: T.softmax(leaf(T, 4, 3, seed=2, requires_grad=False), 1)))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "mean", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_target_requires_grad(reduction, log_target):
    """A target that requires grad gets its gradient through torch's nodes (XlogyBackward0 for a
    plain target, ExpBackward0 and SubBackward0 for a log target)."""
    import warnings

    def target(T):
        t = leaf(T, 4, 3, seed=2)
        return T.log_softmax(t, 1) if log_target else T.softmax(t, 1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # reduction='mean''s warning: its own test
        check(_loss_prog(lambda nn: nn.KLDivLoss(reduction=reduction, log_target=log_target),
                         lambda T: T.log_softmax(leaf(T, 4, 3), 1), target))


def test_one_hot():
    import numpy as np
    import torch

    import gradviz

    a = torch.nn.functional.one_hot(torch.tensor([0, 3, 1]))
    b = gradviz.nn.functional.one_hot(gradviz.tensor([0, 3, 1]))
    assert b.dtype == gradviz.int64 and np.array_equal(a.numpy(), b.numpy())
    same_error(lambda T: T.nn.functional.one_hot(T.tensor([0, 3]), 2))
    same_error(lambda T: T.nn.functional.one_hot(T.tensor([0, -1])))


def test_loss_errors():
    same_error(lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.5, 1.5]), T.tensor([0.0, 1.0])))
    same_error(lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.5, 0.5]), T.tensor([[0.0, 1.0]])))
    same_error(lambda T: T.nn.CrossEntropyLoss()(T.zeros(3, 4), T.tensor([0, 1])))
    same_error(lambda T: T.nn.CrossEntropyLoss(reduction="avg")(T.zeros(2, 4), T.tensor([0, 1])))


def test_functional_gelu_silu_leaky():
    for name, kw in [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("leaky_relu", {})]:
        check_fn(lambda T, name=name, kw=kw: (getattr(T.nn.functional, name)(x := leaf(T, 3, 4), **kw), [x]))


def test_mse_broadcast_warns_and_expands():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(_loss_prog(lambda nn: nn.MSELoss(), lambda T: leaf(T, 4, 1), lambda T: leaf(T, 4, seed=5)))
    import gradviz

    with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[4\]\)\) that is different"):
        gradviz.nn.functional.mse_loss(gradviz.zeros(4, 1), gradviz.zeros(4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 2), (2, 3, 2, 2, 2)])
def test_cross_entropy_nd(shape, reduction):
    import numpy as np

    t = np.random.default_rng(3).integers(0, 3, (shape[0], *shape[2:]))
    check(_loss_prog(lambda nn: nn.CrossEntropyLoss(reduction=reduction, ignore_index=1), lambda T: leaf(T, *shape),
                     lambda T: T.tensor(t)))


def test_cross_entropy_nd_bad_target():
    same_error(lambda T: T.nn.functional.cross_entropy(T.zeros(2, 3, 4), T.zeros(2, 5, dtype=T.int64)))
