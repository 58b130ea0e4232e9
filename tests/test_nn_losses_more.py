"""The losses added for issue 34 item 4 (CosineEmbeddingLoss and the rest), compared with torch:
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
}  # fmt: skip


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
