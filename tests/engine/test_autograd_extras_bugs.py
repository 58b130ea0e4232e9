"""The two behaviour bugs of issue 14, each run on torch 2.13 and on gradviz.

- A custom Function whose forward returns non-tensors among its outputs: those slots get None
  gradients, the tensors' gradients flow (gradviz raised IndexError in the engine).
- grad(..., create_graph=True, allow_unused=True, materialize_grads=True): the zeros for an
  unused input require grad, so a further grad() works (gradviz's did not).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import torch

import gradviz


def _np(t: Any) -> Any:
    return None if t is None else np.asarray(t.detach().numpy())


def _mixed_outputs(T: ModuleType) -> dict:
    seen: list = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return 3, t * 2, None, t * 3

        @staticmethod
        def backward(ctx, g0, g1, g2, g3):
            seen.append((g0, None if g1 is None else tuple(g1.shape), g2, None if g3 is None else tuple(g3.shape)))
            return 2 * g1 + 3 * g3

    t = T.ones(2, 3, requires_grad=True)
    a, b, c, d = F.apply(t)
    (b + d).sum().backward()
    return {
        "a": a, "c": c, "name": b.grad_fn.name(), "same_node": b.grad_fn is d.grad_fn,
        "grad": _np(t.grad), "seen": seen, "values": (_np(b), _np(d)),
    }


def test_function_with_non_tensor_outputs_matches_torch() -> None:
    want, got = _mixed_outputs(torch), _mixed_outputs(gradviz)
    assert got["a"] == want["a"] == 3 and got["c"] is want["c"] is None
    assert got["name"] == want["name"] == "FBackward"
    assert got["same_node"] and want["same_node"]
    np.testing.assert_array_equal(got["grad"], want["grad"])
    np.testing.assert_array_equal(got["grad"], np.full((2, 3), 5.0))
    # The non-tensor slots reach backward as None (not materialized zeros), as in torch.
    assert got["seen"] == want["seen"] == [(None, (2, 3), None, (2, 3))]
    for g, w in zip(got["values"], want["values"], strict=True):
        np.testing.assert_array_equal(g, w)


def _only_one_used(T: ModuleType) -> dict:
    class G(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return "tag", t.exp(), t * 4

        @staticmethod
        def backward(ctx, g0, g1, g2):
            return (g1 if g1 is not None else 0) + g2

    t = T.tensor([0.5, -1.0], requires_grad=True)
    _, _, z = G.apply(t)
    z.sum().backward()
    return {"grad": _np(t.grad)}


def test_function_non_tensor_outputs_unused_tensor_output_is_materialized() -> None:
    want, got = _only_one_used(torch), _only_one_used(gradviz)
    np.testing.assert_array_equal(got["grad"], want["grad"])


def _materialize(T: ModuleType) -> dict:
    x = T.tensor(2.0, requires_grad=True)
    w = T.tensor(3.0, requires_grad=True)
    y = x * w
    (dydx,) = T.autograd.grad(y, x, create_graph=True)
    (d2,) = T.autograd.grad(dydx, x, create_graph=True, allow_unused=True, materialize_grads=True)
    (d3,) = T.autograd.grad(d2, x, allow_unused=True, materialize_grads=True)
    (plain,) = T.autograd.grad(x * w, x, allow_unused=True, materialize_grads=True)
    return {
        "d2": (_np(d2), d2.requires_grad, d2.is_leaf, d2.grad_fn is None, d2.shape == x.shape),
        "d3": (_np(d3), d3.requires_grad),
        "plain": (_np(plain), plain.requires_grad),
    }


def test_materialize_grads_with_create_graph_requires_grad() -> None:
    want, got = _materialize(torch), _materialize(gradviz)
    assert got["d2"][1:] == want["d2"][1:] == (True, True, True, True)
    np.testing.assert_array_equal(got["d2"][0], want["d2"][0])
    np.testing.assert_array_equal(got["d3"][0], want["d3"][0])
    assert got["d3"][1] == want["d3"][1] is False
    assert got["plain"][1] == want["plain"][1] is False


def test_materialize_grads_without_create_graph_does_not_require_grad() -> None:
    for T in (torch, gradviz):
        x = T.ones(3, requires_grad=True)
        u = T.ones(3, requires_grad=True)
        gx, gu = T.autograd.grad((x * 2).sum(), (x, u), materialize_grads=True)
        assert not gu.requires_grad and gu.shape == u.shape
        np.testing.assert_array_equal(_np(gu), np.zeros(3))


def test_function_with_non_tensor_outputs_records() -> None:
    # The recorder walks the node's metadata, the placeholder slots included.
    class F(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return 3, t * 2, None, t * 3

        @staticmethod
        def backward(ctx, g0, g1, g2, g3):
            return 2 * g1 + 3 * g3

    with gradviz.record() as rec:
        t = gradviz.ones(2, requires_grad=True)
        _, b, _, d = F.apply(t)
        (b + d).sum().backward()
    np.testing.assert_array_equal(_np(t.grad), np.full(2, 5.0))
    names = {getattr(e, "name", None) for e in rec.trace.events if e.kind == "node_created"}
    assert any(n and n.startswith("FBackward") for n in names) or any(
        "FBackward" in str(e) for e in rec.trace.events
    )
