"""Run one small program under torch and under gradviz and compare what each gave: the values
(every tensor in the output, nested), the backward node and its next nodes, and the gradients of
the leaves the program made with ``T.tensor(..., requires_grad=True)`` (issue 34's new ops)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import gradviz


def _names(fn: Any) -> Any:
    if fn is None:
        return None
    return (fn.name().split("::")[-1], [f.name().split("::")[-1] if f else None for f, _ in fn.next_functions])


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def run(T: Any, program: Any) -> tuple[list[Any], list[Any], list[Any] | None]:
    T.manual_seed(0)
    leaves = []
    real_tensor = T.tensor

    def tensor(*a: Any, **k: Any) -> Any:
        t = real_tensor(*a, **k)
        if t.requires_grad:
            leaves.append(t)
        return t

    T.tensor = tensor
    try:
        out = _flat(program(T))
    finally:
        T.tensor = real_tensor
    tensors = [o for o in out if isinstance(o, T.Tensor)]
    names = [_names(o.grad_fn) for o in tensors]
    grads = None
    diff = [o for o in tensors if o.requires_grad]
    if diff:
        T.autograd.backward([(o * (i + 1.0)).sum() for i, o in enumerate(diff)])
        grads = [None if t.grad is None else t.grad.tolist() for t in leaves]
    return out, names, grads


def _value(x: Any) -> Any:
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return str(x.dtype), tuple(x.shape), np.asarray(x.detach().tolist(), dtype=float)
    return None, None, x


def check(program: Any, rtol: float = 1e-12, atol: float = 1e-12, names: bool = True) -> None:
    want, want_names, want_grads = run(torch, program)
    got, got_names, got_grads = run(gradviz, program)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        gd, gs, gv = _value(g)
        wd, ws, wv = _value(w)
        assert (gd, gs) == (wd, ws), ((gd, gs), (wd, ws))
        if isinstance(wv, np.ndarray):
            np.testing.assert_allclose(gv, wv, rtol=rtol, atol=atol, equal_nan=True)
        else:
            assert gv == wv
    if names:
        assert got_names == want_names, (got_names, want_names)
    if want_grads is None:
        assert got_grads is None
        return
    assert got_grads is not None and len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads, strict=True):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float), rtol=rtol, atol=atol,
                                       equal_nan=True)
