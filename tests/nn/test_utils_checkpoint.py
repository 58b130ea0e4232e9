"""torch.utils.checkpoint under gradviz (issue 34 item 4): the reentrant form's
CheckpointFunctionBackward node, the non-reentrant form's own nodes, random draws replayed in
backward, checkpoint_sequential, and torch's warning and errors; each compared with torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import gradviz


def _graph(fn, depth=3):
    if fn is None or depth == 0:
        return None
    return (fn.name().split("::")[-1], [_graph(f, depth - 1) for f, _ in fn.next_functions])


def _program(T, use_reentrant, dropout):
    T.manual_seed(0)
    lin = T.nn.Linear(3, 3)
    drop = T.nn.Dropout(0.5)
    x = T.randn(4, 3, requires_grad=True)

    def block(a):
        h = T.tanh(lin(a))
        return drop(h) * 2 if dropout else h * 2

    y = T.utils.checkpoint.checkpoint(block, x, use_reentrant=use_reentrant)
    graph = _graph(y.grad_fn)
    (y * T.arange(12.0).view(4, 3)).sum().backward()
    return y.tolist(), graph, x.grad.tolist(), lin.weight.grad.tolist(), lin.bias.grad.tolist()


@pytest.mark.parametrize("dropout", [False, True])
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_matches_torch(use_reentrant, dropout):
    want = _program(torch, use_reentrant, dropout)
    got = _program(gradviz, use_reentrant, dropout)
    assert got[1] == want[1]
    for g, w in zip(got[:1] + got[2:], want[:1] + want[2:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_checkpoint_sequential_matches_torch():
    runs = []
    for T in (torch, gradviz):
        T.manual_seed(0)
        seq = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 4), T.nn.ReLU(), T.nn.Linear(4, 2))
        x = T.randn(5, 3, requires_grad=True)
        y = T.utils.checkpoint.checkpoint_sequential(seq, 2, x, use_reentrant=True)
        graph = _graph(y.grad_fn, 4)
        y.sum().backward()
        runs.append((y.tolist(), graph, x.grad.tolist(), [p.grad.tolist() for p in seq.parameters()]))
    assert runs[1][1] == runs[0][1]
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=1e-5, atol=1e-6)
    for g, w in zip(runs[1][3], runs[0][3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_warning_and_errors_as_torch():
    seen = []
    for T in (torch, gradviz):
        x = T.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            T.utils.checkpoint.checkpoint(lambda a: a * 2, x)
            T.utils.checkpoint.checkpoint(lambda a: a * 2, T.ones(2), use_reentrant=True)
        with pytest.raises(ValueError) as info:
            T.utils.checkpoint.checkpoint(lambda a, b=1: a * b, x, use_reentrant=True, b=2)
        seen.append(([(i.category, str(i.message)) for i in w], str(info.value)))
    assert seen[1] == seen[0]
