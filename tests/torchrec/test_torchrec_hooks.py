"""The user's hooks on real torch (issue 29 item 2; issue 33 G13): every kind of hook the program
registers shows as a `hook` event with the function's qualified name, on the node it belongs
to; hooks do what they did unrecorded; a hook that raises leaves the trace whole."""

from __future__ import annotations

import traceback

import pytest
import torch

import gradviz
from gradviz.trace import events as ev
from gradviz.trace.check import invariants


class Hooks:
    def tensor(self, g):
        return g * 2

    def leaf(self, g):
        return None

    def pre(self, grad_outputs):
        return None

    def post(self, grad_inputs, grad_outputs):
        return None

    def accumulated(self, t):
        return None

    def module(self, m, grad_input, grad_output):
        return None

    def module_pre(self, m, grad_output):
        return None


def _program():
    torch.manual_seed(0)
    h = Hooks()
    m = torch.nn.Linear(3, 2)
    m.register_full_backward_hook(h.module)
    m.register_full_backward_pre_hook(h.module_pre)
    x = torch.randn(4, 3, requires_grad=True)
    x.register_hook(h.leaf)
    m.weight.register_post_accumulate_grad_hook(h.accumulated)
    y = m(x).tanh()
    y.register_hook(h.tensor)
    y.grad_fn.register_prehook(h.pre)
    y.grad_fn.register_hook(h.post)
    y.sum().backward()
    return x.grad, m.weight.grad


def test_every_kind_of_user_hook_is_a_hook_event():
    plain = _program()
    with gradviz.record(engine="torch") as rec:
        recorded = _program()
    for a, b in zip(plain, recorded):
        assert torch.equal(a, b)  # the tensor hook doubled the gradient in both
    t = rec.trace
    hooks = {(e.hook, e.name, t.nodes[e.node].name) for e in t.events if type(e) is ev.Hook}
    assert hooks == {
        ("tensor_pre", "Hooks.tensor", "TanhBackward0"),
        ("pre", "Hooks.pre", "TanhBackward0"),
        ("post", "Hooks.post", "TanhBackward0"),
        ("tensor_pre", "Hooks.leaf", "AccumulateGrad"),
        ("post_accumulate", "Hooks.accumulated", "AccumulateGrad"),
        ("pre", "Hooks.module_pre", "BackwardHookFunctionBackward"),
        ("post", "Hooks.module", "BackwardHookFunctionBackward"),
    }
    assert invariants(t) == []
    # each hook event is observed, and comes before its node ends
    from gradviz.trace.provenance import derived_seqs

    d = derived_seqs(t)
    assert not any(e.seq in d for e in t.events if type(e) is ev.Hook)


def test_hook_event_names_match_gradviz_engine_for_tensor_and_node_hooks():
    """The same kinds and names as gradviz's engine records for tensor, node and
    post-accumulate hooks (module full backward hooks: gradviz has none)."""

    def prog(tm):
        h = Hooks()
        x = tm.ones(3, requires_grad=True)
        x.register_post_accumulate_grad_hook(h.accumulated)
        y = (x * 2).tanh()
        y.register_hook(h.tensor)
        y.grad_fn.register_prehook(h.pre)
        y.grad_fn.register_hook(h.post)
        y.sum().backward()

    def kinds(t):
        return sorted((e.hook, e.name, t.nodes[e.node].name) for e in t.events if type(e) is ev.Hook)

    with gradviz.record(engine="torch") as rt:
        prog(torch)
    with gradviz.record() as rg:
        prog(gradviz)
    assert kinds(rt.trace) == kinds(rg.trace)


@pytest.mark.parametrize("where", ["tensor", "pre", "post", "accumulated"])
def test_a_hook_that_raises_leaves_no_queue_entry_unpopped(where):
    """G13: the error reaches the user as unrecorded, with the same frames; the trace's
    invariants hold (every push popped) and the task ends in error."""

    def boom(*args):
        raise ValueError("hook says no")

    def prog():
        x = torch.ones(3, requires_grad=True)
        y = (x * 2).exp()
        z = y.tanh().sum()
        if where == "tensor":
            y.register_hook(boom)
        elif where == "pre":
            y.grad_fn.register_prehook(boom)
        elif where == "post":
            y.grad_fn.register_hook(boom)
        else:
            x.register_post_accumulate_grad_hook(boom)
        try:
            z.backward()
        except ValueError as e:
            return [f.name for f in traceback.extract_tb(e.__traceback__)]
        raise AssertionError("no error")

    plain = prog()
    with gradviz.record(engine="torch") as rec:
        recorded = prog()
    assert recorded == plain  # no frame of the recorder's
    t = rec.trace
    assert invariants(t) == []
    end = [e for e in t.events if type(e) is ev.TaskEnd][-1]
    assert end.status == "error" and "hook says no" in end.error


def test_diff_of_two_torch_recordings_differing_by_one_observe_only_hook_names_it(tmp_path):
    """Issue 29 must-show 2: the hook is an event of torch's recording, so diff sees it."""
    from gradviz.diff import compare

    def run(path, hooked: bool) -> None:
        torch.manual_seed(0)
        w = torch.randn(3, 3, requires_grad=True)
        x = torch.randn(2, 3)
        with gradviz.trace(str(path), engine="torch"):
            h = x @ w
            if hooked:
                def log_grad(g):  # observe only: returns None
                    pass

                h.register_hook(log_grad)
            h.tanh().sum().backward()

    run(tmp_path / "plain.json", False)
    run(tmp_path / "hooked.json", True)
    res = compare(gradviz.load(str(tmp_path / "plain.json")), gradviz.load(str(tmp_path / "hooked.json")))
    kinds = [d.kind for d in res.divergences]
    assert kinds == ["hook"], [str(d) for d in res.divergences]
    assert "log_grad" in str(res.divergences[0]) and "B called" in str(res.divergences[0])
