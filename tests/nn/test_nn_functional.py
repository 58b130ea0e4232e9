"""gradviz.nn.functional against torch.nn.functional: values, gradients, double backward, and the
backward graphs (node names and next_functions) of first and second order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz

RNG = np.random.default_rng(0)
Z = RNG.standard_normal((5, 4)).astype(np.float32)
TARGETS = {"plain": np.array([0, 3, 1, 1, 2]), "ignored": np.array([0, -100, 1, 1, 2])}
WEIGHT = np.array([1, 2, 0.5, 1], np.float32)


def graph(fn: Any) -> list:
    """(name, next_functions' names) of every node reachable from fn, depth first."""
    out, seen, stack = [], set(), [fn]
    while stack:
        f = stack.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        nexts = [(g.name().split("::")[-1] if g is not None else None, i) for g, i in f.next_functions]
        out.append((f.name().split("::")[-1], nexts))
        stack.extend(g for g, _ in f.next_functions)
    return out


def both(fn: Any) -> tuple[Any, Any]:
    return fn(gradviz), fn(torch)


def assert_same(ours: list, theirs: list, n_arrays: int) -> None:
    for i in range(n_arrays):
        np.testing.assert_allclose(ours[i], theirs[i], rtol=1e-5, atol=1e-6)
    assert ours[n_arrays:] == theirs[n_arrays:]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy(reduction: str, target: str, weighted: bool) -> None:
    def run(m: Any) -> list:
        x = m.tensor(Z, requires_grad=True)
        w = m.tensor(WEIGHT) if weighted else None
        loss = m.nn.functional.cross_entropy(x, m.tensor(TARGETS[target]), weight=w, reduction=reduction)
        total = loss if reduction != "none" else loss.sum()
        (g,) = m.autograd.grad(total, x, create_graph=True)
        (g * g).sum().backward()
        return [loss.detach().numpy(), g.detach().numpy(), x.grad.numpy(), graph(total.grad_fn), graph(g.grad_fn)]

    assert_same(*both(run), n_arrays=3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction: str) -> None:
    def run(m: Any) -> list:
        x = m.tensor(Z, requires_grad=True)
        y = m.tensor(Z[::-1].copy(), requires_grad=True)
        loss = m.nn.functional.mse_loss(x, y, reduction=reduction)
        total = loss if reduction != "none" else loss.sum()
        gx, gy = m.autograd.grad(total, (x, y), create_graph=True)
        (gx * gx + gy).sum().backward()
        return [loss.detach().numpy(), gx.detach().numpy(), x.grad.numpy(), y.grad.numpy(),
                graph(total.grad_fn), graph(gx.grad_fn)]

    assert_same(*both(run), n_arrays=4)


def test_activations_and_nll_loss_graphs() -> None:
    def run(m: Any) -> list:
        x = m.tensor(Z, requires_grad=True)
        f = m.nn.functional
        return [graph(f.relu(x).grad_fn), graph(f.softmax(x, 1).grad_fn), graph(f.log_softmax(x, dim=0).grad_fn),
                graph(f.nll_loss(f.log_softmax(x, 1), m.tensor(TARGETS["plain"])).grad_fn)]

    ours, theirs = both(run)
    assert ours == theirs


def test_cross_entropy_single_sample() -> None:
    def run(m: Any) -> list:
        x = m.tensor(Z[0], requires_grad=True)
        loss = m.nn.functional.cross_entropy(x, m.tensor(2))
        loss.backward()
        return [loss.detach().numpy(), x.grad.numpy()]

    assert_same(*both(run), n_arrays=2)


def test_target_out_of_bounds() -> None:
    with pytest.raises(IndexError, match="Target 9 is out of bounds."):
        gradviz.nn.functional.cross_entropy(gradviz.tensor(Z), gradviz.tensor([0, 9, 1, 1, 2]))
    with pytest.raises(IndexError, match="Target 9 is out of bounds."):
        torch.nn.functional.cross_entropy(torch.tensor(Z), torch.tensor([0, 9, 1, 1, 2]))
