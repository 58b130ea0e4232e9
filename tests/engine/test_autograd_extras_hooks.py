"""Graph hooks and once_differentiable against torch 2.13: register_post_accumulate_grad_hook
(order among the other hooks, errors), saved_tensors_hooks / save_on_cpu, register_multi_grad_hook
("all" and "any"), and autograd.function.once_differentiable."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _err(f: Callable[[], Any]) -> Any:
    try:
        f()
    except Exception as e:  # noqa: BLE001 - compared
        return (type(e).__name__, str(e))
    return None


def _post_acc_order(T: ModuleType) -> list:
    y = T.ones(2, requires_grad=True)
    order: list = []
    y.register_post_accumulate_grad_hook(lambda t: order.append(("pa1", t.grad.tolist(), t is y)))
    h2 = y.register_post_accumulate_grad_hook(lambda t: order.append("pa2"))
    y.register_hook(lambda g: order.append("tensor"))
    z = y * 2
    acc = z.grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: order.append("post"))
    acc.register_prehook(lambda go: order.append("pre"))
    z.sum().backward()
    order.append("|")
    T.autograd.grad((y * 3).sum(), y)  # no accumulation: no post-accumulate hook
    order.append("|")
    h2.remove()
    (y * 3).sum().backward(inputs=[y])
    order.append(y.grad.tolist())
    return order


def test_post_accumulate_grad_hook_order_matches_torch() -> None:
    assert _post_acc_order(gradviz) == _post_acc_order(torch)


def test_post_accumulate_grad_hook_sgd_in_hook() -> None:
    # torch's documented use: an optimizer step inside the hook.
    for T in (torch, gradviz):
        v = T.tensor([0.0, 0.0, 0.0], requires_grad=True)

        def step(p: Any, T: ModuleType = T) -> None:
            with T.no_grad():
                p.sub_(p.grad * 0.01)

        v.register_post_accumulate_grad_hook(step)
        v.backward(T.tensor([1.0, 2.0, 3.0]))
        np.testing.assert_allclose(v.detach().numpy(), [-0.01, -0.02, -0.03], rtol=1e-6)


def _post_acc_errors(T: ModuleType) -> list:
    x = T.ones(2, requires_grad=True)
    out = [
        _err(lambda: (x * 2).register_post_accumulate_grad_hook(lambda t: None)),
        _err(lambda: T.ones(2).register_post_accumulate_grad_hook(lambda t: None)),
    ]
    a = T.ones(2, requires_grad=True)
    a.register_post_accumulate_grad_hook(lambda t: 5)
    out.append(_err(lambda: (a * 2).sum().backward()))
    b = T.ones(2, requires_grad=True)
    b.register_post_accumulate_grad_hook(lambda t: t * 2)
    out.append(_err(lambda: (b * 2).sum().backward()))
    return out


def test_post_accumulate_grad_hook_errors_match_torch() -> None:
    assert _post_acc_errors(gradviz) == _post_acc_errors(torch)


def _saved_hooks(T: ModuleType) -> dict:
    a = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    log: list = []

    def pack(t):
        # Outputs reach the pack hook with their grad_fn, as in torch.
        log.append(("pack", tuple(t.shape), t.grad_fn is not None, t.requires_grad, t.is_leaf))
        return t * 1

    def unpack(p):
        log.append("unpack")
        return p

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a.exp()
        z = y * a
        w = T.tanh(z)
    n_packed = len(log)
    w.sum().backward()
    res = {"log": log, "n_packed": n_packed, "grad": a.grad.numpy().copy()}
    # Nested: the innermost pair wins.
    inner: list = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: ("outer", t), lambda p: p[1]):
        with T.autograd.graph.saved_tensors_hooks(lambda t: inner.append(1) or ("inner", t), lambda p: p[1]):
            q = (a * a).sum()
    q.backward()
    res["inner"] = len(inner)
    b = T.ones(2, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
        r = b * b
    res["bad_unpack"] = _err(lambda: r.sum().backward())
    with T.autograd.graph.save_on_cpu():
        s = (a * 3).exp() * a
    a.grad = None
    s.sum().backward()
    res["save_on_cpu"] = a.grad.numpy().copy()
    # Double backward through unpacked tensors (they take the saved tensors' place in the graph).
    c = T.tensor([1.5, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
        e = (c * c * c).sum()
    (g,) = T.autograd.grad(e, c, create_graph=True)
    (g2,) = T.autograd.grad(g.sum(), c)
    res["double"] = (g.detach().numpy().copy(), g2.numpy().copy())
    return res


def test_saved_tensors_hooks_match_torch() -> None:
    want, got = _saved_hooks(torch), _saved_hooks(gradviz)
    assert got["log"] == want["log"]
    assert got["n_packed"] == want["n_packed"] and got["inner"] == want["inner"]
    assert got["bad_unpack"] == want["bad_unpack"]
    for k in ("grad", "save_on_cpu"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6)
    for g, w in zip(got["double"], want["double"], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def _multi(T: ModuleType) -> list:
    b = T.ones(3, requires_grad=True)
    c = T.ones(3, requires_grad=True)
    p = b * c
    q = b * c
    calls: list = []
    h = T.autograd.graph.register_multi_grad_hook((b, c, p, q), lambda gs: calls.append([g is not None for g in gs]))
    p.sum().backward(retain_graph=True)
    p.sum().backward(inputs=(b,), retain_graph=True)
    # torch refuses a multi-grad hook over leaves inside autograd.grad().
    calls.append(_err(lambda: T.autograd.grad((p * q).sum(), (b, c), retain_graph=True)))
    calls.append(_err(lambda: T.autograd.grad((p * q).sum(), (p, q), retain_graph=True)))
    h.remove()
    p.sum().backward(retain_graph=True)
    calls.append("removed")
    T.autograd.graph.register_multi_grad_hook((b, c, p), lambda g: calls.append(("any", g.tolist())), mode="any")
    p.sum().backward(retain_graph=True)
    (p * 5).sum().backward(retain_graph=True)
    calls.append(_err(lambda: T.autograd.graph.register_multi_grad_hook((b,), print, mode="x")))
    return calls


def test_register_multi_grad_hook_matches_torch() -> None:
    assert _multi(gradviz) == _multi(torch)


def _once(T: ModuleType) -> list:
    once_differentiable = T.autograd.function.once_differentiable
    seen: list = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            seen.append((T.is_grad_enabled(), g.requires_grad))
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    (g,) = T.autograd.grad((F.apply(x) * x).sum(), x, create_graph=True)
    err = g.grad_fn.next_functions[1][0]
    out = [g.detach().tolist(), g.grad_fn.name(), err.name(), len(err.next_functions)]
    out.append(_err(lambda: g.sum().backward()))
    F.apply(x).sum().backward()
    out += [x.grad.tolist(), seen, F.backward.__name__]
    return out


def test_once_differentiable_matches_torch() -> None:
    assert _once(gradviz) == _once(torch)


@pytest.mark.parametrize("T", [torch, gradviz], ids=["torch", "gradviz"])
def test_post_accumulate_hook_sees_accumulated_grad(T: ModuleType) -> None:
    x = T.ones(2, requires_grad=True)
    seen: list = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]


def test_recorder_sees_post_accumulate_hook_after_the_update(tmp_path: Any) -> None:
    y = gradviz.ones(2, requires_grad=True)

    def my_hook(t: Any) -> None:
        pass

    y.register_post_accumulate_grad_hook(my_hook)
    with gradviz.record() as rec:
        (y * 2).sum().backward()
    events = rec.trace.events
    kinds = [(e.kind, getattr(e, "hook", None)) for e in events if e.kind in ("hook", "accumulate_grad")]
    assert kinds == [("accumulate_grad", None), ("hook", "post_accumulate")]
    hook = next(e for e in events if e.kind == "hook")
    update = next(e for e in events if e.kind == "accumulate_grad")
    assert hook.node == update.node and "my_hook" in hook.name


def test_gradgradcheck_with_generated_grad_outputs() -> None:
    x = gradviz.tensor([0.3, -0.8, 1.2], dtype=gradviz.float64, requires_grad=True)
    assert gradviz.autograd.gradgradcheck(lambda a: (a.tanh() * a.exp(), a.sum() * a), (x,))
    assert torch.autograd.gradgradcheck(
        lambda a: (a.tanh() * a.exp(), a.sum() * a),
        (torch.tensor([0.3, -0.8, 1.2], dtype=torch.float64, requires_grad=True),),
    )
