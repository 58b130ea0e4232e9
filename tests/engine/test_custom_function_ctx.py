"""Custom autograd.Function against torch 2.13: the node's class (``<Name>Backward``, the
Function's ``_backward_cls``), ctx-less forward with ``setup_context`` (keyword and default
arguments bound to forward's signature), keywords passed through to a ctx forward, mark_dirty on
a leaf that requires grad (torch's error), mark_non_differentiable and set_materialize_grads."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import torch

import gradviz


def _err(f: Any) -> Any:
    try:
        f()
    except Exception as e:  # noqa: BLE001 - compared
        return (type(e).__name__, str(e).split("\n")[0])
    return None


def _node_class(T: ModuleType) -> tuple:
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    fn = y.grad_fn
    out = (
        type(fn).__name__, fn.name(), Square._backward_cls.__name__, type(fn) is Square._backward_cls,
        isinstance(fn, T.autograd.function.BackwardCFunction), repr(y).split("grad_fn=")[1],
    )
    y.sum().backward()
    return out, x.grad.tolist()


def test_node_class_is_named_after_the_function() -> None:
    assert _node_class(gradviz) == _node_class(torch)


def _setup_context(T: ModuleType) -> tuple:
    seen: list = []

    class Scale(T.autograd.Function):
        @staticmethod
        def forward(x: Any, k: float = 2.0) -> Any:
            seen.append(("forward", T.is_grad_enabled()))
            return x * k

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
            x, k = inputs
            seen.append(("setup", len(inputs), k, type(output).__name__, T.is_grad_enabled()))
            ctx.k = k
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return g * ctx.k, None

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Scale.apply(x, k=3.0)
    y.sum().backward()
    y2 = Scale.apply(x)
    with T.no_grad():
        y3 = Scale.apply(x)
    return seen, x.grad.tolist(), type(y.grad_fn).__name__, y2.tolist(), y3.grad_fn is None


def test_setup_context_style() -> None:
    assert _setup_context(gradviz) == _setup_context(torch)


def _keywords_and_dirty(T: ModuleType) -> tuple:
    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, k: float = 2.0) -> Any:
            return x * k

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2, None

    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    x = T.ones(2, requires_grad=True)
    kw = Mul.apply(x, k=3.0).tolist()
    b = x.clone()
    c = Double.apply(b)
    c.sum().backward()
    leaf = _err(lambda: Double.apply(T.ones(2, requires_grad=True)))
    return kw, c is b, type(c.grad_fn).__name__, b._version, x.grad.tolist(), leaf


def test_keywords_and_mark_dirty() -> None:
    assert _keywords_and_dirty(gradviz) == _keywords_and_dirty(torch)


def _non_diff_and_materialize(T: ModuleType) -> tuple:
    seen: list = []

    class Sort(T.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            ctx.set_materialize_grads(False)
            return v, i

        @staticmethod
        def backward(ctx: Any, gv: Any, gi: Any) -> Any:
            (i,) = ctx.saved_tensors
            seen.append((ctx.needs_input_grad, gi is None))
            g = T.zeros(3)
            g[i] = gv
            return g

    x = T.tensor([3.0, 1.0, 2.0], requires_grad=True)
    v, i = Sort.apply(x)
    (v * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    return seen, i.requires_grad, i.grad_fn is None, np.asarray(x.grad.numpy()).tolist()


def test_mark_non_differentiable_and_materialize_grads() -> None:
    assert _non_diff_and_materialize(gradviz) == _non_diff_and_materialize(torch)
