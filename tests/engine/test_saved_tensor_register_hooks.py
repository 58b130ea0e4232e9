"""grad_fn._raw_saved_<name> and SavedTensor.register_hooks against torch 2.13: what the pack hook
is given, when the unpack hook runs, the gradients, and torch's errors (hooks set twice, a freed
graph, a pack hook that changes its input in place, bad arguments, an unpack hook that returns no
tensor); and the in-place check and no_grad of saved_tensors_hooks' pack hook."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import torch

import gradviz


def _err(f: Callable[[], Any]) -> Any:
    try:
        f()
    except Exception as e:  # noqa: BLE001 - compared
        return (type(e).__name__, str(e).split("\n")[0])
    return None


def _inputs(T: ModuleType) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    a = T.tensor(rng.random(3) + 0.5, requires_grad=True)
    b = T.tensor(rng.random(3) + 0.5, requires_grad=True)
    return a, b


def _saved_input(T: ModuleType) -> tuple:
    a, b = _inputs(T)
    y = a * b
    raw = y.grad_fn._raw_saved_self
    events: list = []

    def pack(t: Any) -> Any:
        events.append(("pack", t is a, t.requires_grad, t.grad_fn is None, t.tolist() == a.tolist(),
                       T.is_grad_enabled()))
        return ("p", t)

    def unpack(p: Any) -> Any:
        events.append("unpack")
        return p[1]

    raw.register_hooks(pack, unpack)
    events.append("registered")
    second = _err(lambda: raw.register_hooks(lambda t: t, lambda t: t))
    again = _err(lambda: y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t))
    read = y.grad_fn._saved_self  # unpacks: the saved input, its place in the graph kept
    events.append((read is a, read.requires_grad, read.tolist() == a.tolist()))
    y.sum().backward()
    freed = _err(lambda: raw.register_hooks(lambda t: t, lambda t: t))
    return (type(raw).__name__, events, second, again, freed,
            np.round(a.grad.numpy(), 6).tolist(), np.round(b.grad.numpy(), 6).tolist())


def test_register_hooks_on_a_saved_input() -> None:
    assert _saved_input(gradviz) == _saved_input(torch)


def _saved_output(T: ModuleType) -> tuple:
    a, _ = _inputs(T)
    y = T.exp(a)
    events: list = []
    y.grad_fn._raw_saved_result.register_hooks(
        lambda t: events.append(("pack", t.grad_fn is None, t.requires_grad)) or t,
        lambda t: events.append("unpack") or t,
    )
    r = y.grad_fn._saved_result
    events.append((type(r.grad_fn).__name__, r is y, r.tolist() == y.tolist()))
    y.sum().backward()
    return events, np.round(a.grad.numpy(), 6).tolist()


def test_register_hooks_on_a_saved_output() -> None:
    assert _saved_output(gradviz) == _saved_output(torch)


def _unpack_order(T: ModuleType) -> tuple:
    # Hooks registered after the forward: the node still unpacks each once, "other" first.
    a, b = _inputs(T)
    y = a * b
    order: list = []
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: order.append("self") or t)
    y.grad_fn._raw_saved_other.register_hooks(lambda t: t, lambda t: order.append("other") or t)
    y.sum().backward()
    return order, type(y.grad_fn).__name__, y.grad_fn.name()


def test_registered_hooks_unpack_in_torch_order() -> None:
    assert _unpack_order(gradviz) == _unpack_order(torch)


def _errors(T: ModuleType) -> list:
    a, b = _inputs(T)
    out = []
    y = a.clone() * b
    out.append(_err(lambda: y.grad_fn._raw_saved_self.register_hooks(lambda t: t.mul_(2), lambda t: t)))
    y = a * b
    out.append(_err(lambda: y.grad_fn._raw_saved_self.register_hooks(1, lambda t: t)))
    out.append(_err(lambda: y.grad_fn._raw_saved_self.register_hooks(lambda t: t)))
    y = a * b
    y.grad_fn._raw_saved_other.register_hooks(lambda t: 5, lambda p: "x")
    out.append(_err(lambda: y.sum().backward()))
    return out


def test_register_hooks_errors() -> None:
    assert _errors(gradviz) == _errors(torch)


def _context_pack(T: ModuleType) -> tuple:
    a, _ = _inputs(T)
    seen: list = []
    with T.autograd.graph.saved_tensors_hooks(
        lambda t: seen.append(("pack", T.is_grad_enabled())) or t * 2,
        lambda t: seen.append("unpack") or t / 2,
    ):
        y = a.exp() * a
    y.sum().backward()
    err = None
    try:
        with T.autograd.graph.saved_tensors_hooks(lambda t: t.mul_(1), lambda t: t):
            T.exp(a.clone())
    except RuntimeError as e:
        err = str(e)
    # the failed context is gone: nothing packs any more
    calls: list = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: calls.append(1) or t, lambda t: t) as h:
        pass
    (a * a).sum().backward()
    return seen, np.round(a.grad.numpy(), 6).tolist(), err, calls, h


def test_saved_tensors_hooks_pack_no_grad_and_inplace_check() -> None:
    assert _context_pack(gradviz) == _context_pack(torch)
