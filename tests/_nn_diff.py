"""Helpers for the nn differential tests: a module built on both sides with torch's parameters
copied into gradviz's, run on the same inputs, compared by tests/_diff.py's ``check``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import gradviz
from tests._diff import Case, check, leaf


def copy_params(ref: torch.nn.Module, mine: gradviz.nn.Module) -> None:
    """torch's parameters and buffers into gradviz's module, by state_dict."""
    sd = {k: gradviz.tensor(v.detach().numpy().copy()) for k, v in ref.state_dict().items()}
    mine.load_state_dict(sd)


def module_prog(make: Callable[[Any], Any], inputs: Callable[[Any], tuple], train: bool = True,
                out_index: int | None = None) -> Callable[[Any], Case]:
    """A program: ``make(nn)`` builds the module (float64), ``inputs(T)`` its inputs; the
    backward feeds a fixed gradient to the output; compared: the graph, order, output, and the
    gradients of the inputs that require grad and of every parameter."""

    def prog(T: Any) -> Case:
        torch.manual_seed(0)
        ref = make(torch.nn).double()
        if T is torch:
            m = ref
        else:
            m = make(gradviz.nn).double()
            copy_params(ref, m)
        m.train(train)
        xs = inputs(T)
        out = m(*xs)
        if out_index is not None:
            out = out[out_index]
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        params = list(m.parameters())
        tensors = [x for x in xs if getattr(x, "requires_grad", False)]

        def run() -> None:
            out.backward(g)

        return Case(roots=[out], run=run, grads_of=tensors + params,
                    values=[b for b in m.buffers() if b.dtype in (T.float64, T.float32)])

    return prog


def check_module(make: Callable[[Any], Any], inputs: Callable[[Any], tuple], **kw: Any) -> None:
    check(module_prog(make, inputs, **kw))


def check_fn(fn: Callable[[Any], Any], order: bool = True) -> None:
    """``fn(T)`` returns (output, leaves): the output is backpropagated with a fixed gradient."""

    def prog(T: Any) -> Case:
        out, leaves = fn(T)
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        return Case(roots=[out], run=lambda: out.backward(g), grads_of=leaves)

    check(prog, order=order)


def same_error(fn: Callable[[Any], Any]) -> None:
    """fn raises the same exception type and message under torch and gradviz."""
    errs = []
    for T in (torch, gradviz):
        try:
            fn(T)
        except Exception as e:  # noqa: BLE001 - compared below
            errs.append(e)
        else:
            errs.append(None)
    a, b = errs
    assert a is not None, "torch raised nothing"
    assert b is not None, f"gradviz raised nothing; torch raised {type(a).__name__}: {a}"
    assert type(a) is type(b), f"torch {type(a).__name__}: {a}\ngradviz {type(b).__name__}: {b}"
    assert str(a) == str(b), f"torch: {a}\ngradviz: {b}"


def idx(T: Any, *values: Any) -> Any:
    return T.tensor(np.array(values, dtype=np.int64))


__all__ = ["check_fn", "check_module", "copy_params", "idx", "leaf", "module_prog", "same_error"]
