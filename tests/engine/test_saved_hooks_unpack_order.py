"""saved_tensors_hooks against torch 2.13: the pack hook called in torch's generated order (a
node's saved inputs sorted by name, then its saved outputs), the unpack hook once per saved tensor
per backward node, first, in the same order, with the gradients unchanged; and nn.DataParallel (a
plain wrapper on a machine without GPUs), which the saved tensors hooks tutorial wraps a hooked
module in."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _unpacks(T: ModuleType, op: Callable[..., Any], shapes: list[tuple[int, ...]], grads: list[bool],
             create_graph: bool = False) -> tuple[list, list, list]:
    """The unpack hook's calls (input names or shapes) during backward of op(inputs).sum(), the
    pack hook's calls, and the inputs' gradients."""
    rng = np.random.default_rng(0)
    inputs = [T.tensor(rng.random(s) + 0.5, requires_grad=g) for s, g in zip(shapes, grads, strict=True)]
    names = {id(t): "abcdef"[i] for i, t in enumerate(inputs)}
    packs: list = []
    unpacks: list = []

    def pack(t: Any) -> Any:
        name = names.get(id(t), tuple(t.shape))
        packs.append(name)
        return (name, t)

    def unpack(p: Any) -> Any:
        unpacks.append(p[0])
        return p[1]

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = op(T, *inputs)
    needed = [t for t in inputs if t.requires_grad]
    gs = T.autograd.grad(y.sum(), needed, create_graph=create_graph)
    return packs, unpacks, [np.asarray(g.detach().numpy()).round(6).tolist() for g in gs]


CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], list[bool]]] = {
    # MulBackward0 saves self and other: torch unpacks "other" first (sorted names)
    "mul": (lambda T, a, b: a * b, [(3,), (3,)], [True, True]),
    "mul_one_grad": (lambda T, a, b: a * b, [(3,), (3,)], [True, False]),
    "mul_broadcast": (lambda T, a, b: a * b, [(2, 3), (3,)], [True, True]),
    # DivBackward0: other's formula reads self and other, self's reads other: each once
    "div": (lambda T, a, b: a / b, [(3,), (3,)], [True, True]),
    # PowBackward1: self, exponent and the result (an output: after the inputs)
    "pow": (lambda T, a, b: a**b, [(3,), (3,)], [True, True]),
    "maximum": (lambda T, a, b: T.maximum(a, b), [(3,), (3,)], [True, True]),
    "dot": (lambda T, a, b: T.dot(a, b), [(3,), (3,)], [True, True]),
    "exp_then_mul": (lambda T, a, b: T.exp(a) * T.exp(b), [(3,), (3,)], [True, True]),
    "mm": (lambda T, a, b: a @ b, [(2, 3), (3, 4)], [True, True]),
    "mv": (lambda T, a, b: a @ b, [(2, 3), (3,)], [True, True]),
    "exp": (lambda T, a: T.exp(a), [(3,)], [True]),
    "chain": (lambda T, a, b: T.exp(a * b) / b, [(3,), (3,)], [True, True]),
    "linear": (lambda T, a, w, b: T.nn.functional.linear(a, w, b), [(2, 3), (4, 3), (4,)], [True, True, True]),
    "conv2d": (lambda T, x, w: T.nn.functional.conv2d(x, w), [(1, 2, 4, 4), (3, 2, 3, 3)], [True, True]),
    "mse_loss": (lambda T, a, b: T.nn.functional.mse_loss(a, b), [(3,), (3,)], [True, True]),
    "layer_norm": (lambda T, a: T.nn.functional.layer_norm(a, (3,)), [(2, 3)], [True]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unpack_order_matches_torch(name: str) -> None:
    op, shapes, grads = CASES[name]
    t_packs, t_unpacks, t_grads = _unpacks(torch, op, shapes, grads)
    g_packs, g_unpacks, g_grads = _unpacks(gradviz, op, shapes, grads)
    assert g_unpacks == t_unpacks
    assert g_grads == t_grads
    assert g_packs == t_packs  # packed in torch's order too (addmm, mv, pow: not the ops' own)


@pytest.mark.parametrize("name", ["mul", "div", "chain"])
def test_unpack_order_under_create_graph(name: str) -> None:
    # the formulas then record ops of their own; each saved tensor is still unpacked once, first
    op, shapes, grads = CASES[name]
    assert _unpacks(gradviz, op, shapes, grads, True) == _unpacks(torch, op, shapes, grads, True)


def _keeps_name(T: ModuleType) -> tuple:
    a = T.ones(3, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = a * a
    fn = y.grad_fn
    names = (type(fn).__name__, fn.name(), [type(n).__name__ for n, _ in fn.next_functions])
    y.sum().backward()
    return names, a.grad.tolist()


def test_hooked_node_keeps_torch_name() -> None:
    assert _keeps_name(gradviz) == _keeps_name(torch)


def _second_backward(T: ModuleType) -> tuple:
    a = T.ones(3, requires_grad=True)
    calls: list = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: calls.append(1) or t):
        y = a * a
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    try:
        y.sum().backward()
    except RuntimeError as e:
        return len(calls), a.grad.tolist(), str(e)[:60]
    return len(calls), a.grad.tolist(), None


def test_retain_graph_then_freed() -> None:
    assert _second_backward(gradviz) == _second_backward(torch)


def _data_parallel(T: ModuleType) -> tuple:
    T.manual_seed(0)
    inner = T.nn.Linear(4, 2)
    net = T.nn.DataParallel(inner)
    x = T.ones(3, 4)
    y = net(x)
    y.sum().backward()
    return (
        type(net).__name__, net.module is inner, list(net.device_ids), isinstance(net, T.nn.Module),
        [n for n, _ in net.named_parameters()], type(y.grad_fn).__name__,
        np.asarray(inner.weight.grad.numpy()).round(6).tolist(), T.nn.parallel.DataParallel is T.nn.DataParallel,
    )


def test_data_parallel_matches_torch() -> None:
    assert _data_parallel(gradviz) == _data_parallel(torch)
