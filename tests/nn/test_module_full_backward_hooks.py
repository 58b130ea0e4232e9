"""Module.register_full_backward_hook / register_full_backward_pre_hook against torch 2.13: the
BackwardHookFunctionBackward nodes on the module's inputs and outputs (graph node names), what
the hooks receive (grad_input, grad_output) and in what order, gradients replaced by a hook's
return, the hook firing from the output side (with torch's warning, at the user's line) when no
input requires grad, tuple outputs, and removal."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _walk(t: Any) -> list:
    seen, out, stack = set(), [], [t.grad_fn]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        out.append(f.name().split("::")[-1])
        stack.extend(g for g, _ in reversed(f.next_functions))
    return out


def _r(g: Any) -> Any:
    return None if g is None else np.round(g.detach().numpy().astype(np.float64), 5).tolist()


def _net(m: Any, replace: bool, input_grad: bool) -> tuple:
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 2))
    log: list = []
    net[0].register_full_backward_hook(lambda mod, gi, go: log.append(("l0", [_r(g) for g in gi], [_r(g) for g in go])))
    if replace:
        net[2].register_full_backward_hook(lambda mod, gi, go: (gi[0] * 3,))
        net[1].register_full_backward_pre_hook(lambda mod, go: (go[0] + 1,))
    net[1].register_full_backward_pre_hook(lambda mod, go: log.append(("pre", [_r(g) for g in go])))
    x = m.tensor(np.random.default_rng(2).standard_normal((5, 3)), dtype=m.float32, requires_grad=input_grad)
    y = net(x)
    names = _walk(y)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y.pow(2).sum().backward()
    msgs = [str(x.message)[:40] for x in w]
    return names, log, msgs, _r(x.grad), _r(net[0].weight.grad)


@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks_match_torch(replace: bool, input_grad: bool) -> None:
    want, got = _net(torch, replace, input_grad), _net(gradviz, replace, input_grad)
    assert got[0] == want[0]
    assert got[2] == want[2]
    assert got[1] == want[1]
    assert got[3:] == want[3:]


def _tuple_module(m: Any) -> tuple:
    class Two(m.nn.Module):
        def forward(self, a: Any, k: int = 2) -> Any:
            return a * k, a.sum(), "tag"

    log: list = []
    t = Two()
    h = t.register_full_backward_hook(lambda mod, gi, go: log.append((len(gi), [_r(g) for g in go])))
    a = m.tensor([1.0, -2.0, 0.5], requires_grad=True)
    p, q, _ = t(a, 3)
    names = (_walk(p), _walk(q))
    (p.sum() + q).backward()
    h.remove()
    p2, q2, _ = t(a, 3)
    (p2.sum() + q2).backward()
    return names, log, _r(a.grad)


def test_tuple_outputs_and_removal_match_torch() -> None:
    assert _tuple_module(gradviz) == _tuple_module(torch)


def test_warning_names_the_users_line() -> None:
    for m in (torch, gradviz):
        lin = m.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda mod, gi, go: None)
        y = lin(m.ones(1, 2))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y.sum().backward()  # the line torch's warning names
        assert len(w) == 1 and w[0].filename == __file__, m.__name__
