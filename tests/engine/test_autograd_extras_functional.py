"""autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) against torch 2.13: values,
shapes, requires_grad and grad_fn names of every result (create_graph included), and torch's
error types and messages for bad v, bad types and strict mode."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _summary(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_summary(y) for y in x)
    if x is None:
        return None
    name = None if x.grad_fn is None else x.grad_fn.name()
    return (np.asarray(x.detach().numpy()), tuple(x.shape), x.requires_grad, name)


def _outcome(f: Callable[[], Any]) -> Any:
    try:
        return ("ok", _summary(f()))
    except Exception as e:  # noqa: BLE001 - the outcome is compared
        return (type(e).__name__, str(e).replace("gradviz", "torch"))


def _cases(T: ModuleType) -> dict[str, Callable[[], Any]]:
    F = T.autograd.functional

    def t(v: Any, g: bool = False) -> Any:
        return T.tensor(v, dtype=T.float64, requires_grad=g)

    x, y = t([1.0, 2.0, 3.0]), t([0.5, -1.0])

    def f1(a):
        return a.exp() * a.sum()

    def f2(a, b):
        return a.sum() * b, (a * a).sum()

    def s(a):
        return (a**3).sum() * a.sin().sum()

    def s2(a, b):
        return (a.exp() * 2).sum() * (b**2).sum()

    def lin(a, b):
        return a * 2

    return {
        "vjp": lambda: F.vjp(f1, x, t([1.0, 0.5, 2.0])),
        "vjp_tuple": lambda: F.vjp(f2, (x, y), (t([1.0, 2.0]), t(3.0))),
        "vjp_scalar_none": lambda: F.vjp(lambda a: a.sum() ** 2, x),
        "vjp_nonscalar_none": lambda: F.vjp(f1, x),
        "vjp_bad_v": lambda: F.vjp(f1, x, t([1.0, 2.0])),
        "vjp_bad_len": lambda: F.vjp(f2, (x, y), (t([1.0, 2.0]),)),
        "vjp_bad_type": lambda: F.vjp(f1, 3),
        "vjp_bad_type_tuple": lambda: F.vjp(f2, (x, 3)),
        "vjp_strict_indep": lambda: F.vjp(lin, (x, y), t([1.0, 1.0, 1.0]), strict=True),
        "vjp_nonstrict_indep": lambda: F.vjp(lin, (x, y), t([1.0, 1.0, 1.0])),
        "vjp_strict_const": lambda: F.vjp(lambda a: t([1.0, 2.0]), x, t([1.0, 1.0]), strict=True),
        "vjp_create": lambda: F.vjp(f1, t([1.0, 2.0, 3.0], True), t([1.0, 0.5, 2.0]), create_graph=True),
        "jvp": lambda: F.jvp(f1, x, t([1.0, 0.5, 2.0])),
        "jvp_tuple": lambda: F.jvp(f2, (x, y), (t([1.0, 1.0, 1.0]), t([0.0, 1.0]))),
        "jvp_none": lambda: F.jvp(f1, x),
        "jvp_none_ok": lambda: F.jvp(lambda a: a * 3, t(2.0)),
        "jvp_strict": lambda: F.jvp(lin, (x, y), (x, y), strict=True),
        "jvp_create": lambda: F.jvp(f1, t([1.0, 2.0, 3.0], True), t([1.0, 0.5, 2.0]), create_graph=True),
        "jac": lambda: F.jacobian(f1, x),
        "jac_tuple": lambda: F.jacobian(f2, (x, y)),
        "jac_one_in_two_out": lambda: F.jacobian(lambda a: (a * 2, a.sum()), x),
        "jac_two_in_one_out": lambda: F.jacobian(lambda a, b: a * b.sum(), (x, y)),
        "jac_strict": lambda: F.jacobian(lin, (x, y), strict=True),
        "jac_indep": lambda: F.jacobian(lin, (x, y)),
        "jac_create": lambda: F.jacobian(f1, t([1.0, 2.0, 3.0], True), create_graph=True),
        "jac_bad_strategy": lambda: F.jacobian(f1, x, strategy="x"),
        "jac_vectorize": lambda: F.jacobian(f2, (x, y), vectorize=True),
        "jac_vectorize_strict": lambda: F.jacobian(f1, x, vectorize=True, strict=True),
        "jac_forward_single": lambda: F.jacobian(f1, x, vectorize=True, strategy="forward-mode"),
        "jac_forward_unvectorized": lambda: F.jacobian(f1, x, strategy="forward-mode"),
        "jac_forward_strict": lambda: F.jacobian(f1, x, strict=True, strategy="forward-mode"),
        "jac_forward_create": lambda: F.jacobian(f1, x, create_graph=True, strategy="forward-mode"),
        "hess_vectorize": lambda: F.hessian(s2, (x, y), vectorize=True),
        "hess": lambda: F.hessian(s, x),
        "hess_tuple": lambda: F.hessian(s2, (x, y)),
        "hess_vector_output": lambda: F.hessian(lambda a: a * 2, x),
        "hess_strict_linear": lambda: F.hessian(lambda a: a.sum() * 2, x, strict=True),
        "hess_create": lambda: F.hessian(s, t([1.0, 2.0, 3.0], True), create_graph=True),
        "vhp": lambda: F.vhp(s, x, t([1.0, -1.0, 2.0])),
        "hvp": lambda: F.hvp(s, x, t([1.0, -1.0, 2.0])),
        "hvp_tuple": lambda: F.hvp(s2, (x, y), (t([1.0, -1.0, 2.0]), t([3.0, 4.0]))),
        "vhp_tuple": lambda: F.vhp(s2, (x, y), (t([1.0, -1.0, 2.0]), t([3.0, 4.0]))),
        "hvp_nonscalar": lambda: F.hvp(f1, x, x),
        "vhp_tuple_output": lambda: F.vhp(lambda a: (a.sum(),), x, x),
        "hvp_strict_linear": lambda: F.hvp(lambda a: a.sum() * 2, x, x, strict=True),
        "vhp_strict_linear": lambda: F.vhp(lambda a: a.sum() * 2, x, x, strict=True),
        "hvp_nonstrict_linear": lambda: F.hvp(lambda a: a.sum() * 2, x, x),
        "hvp_create": lambda: F.hvp(s, t([1.0, 2.0, 3.0], True), t([1.0, -1.0, 2.0]), create_graph=True),
        "vhp_none": lambda: F.vhp(s, x),
        "vhp_none_scalar": lambda: F.vhp(lambda a: a**4, t(1.5)),
    }


CASES = sorted(_cases(torch))


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, tuple) and want and isinstance(want[0], np.ndarray):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
        assert got[1:] == want[1:]
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    else:
        assert got == want


@pytest.mark.parametrize("name", CASES)
def test_functional_matches_torch(name: str) -> None:
    want = _outcome(_cases(torch)[name])
    got = _outcome(_cases(gradviz)[name])
    assert got[0] == want[0], (got, want)
    _assert_same(got[1], want[1])


def test_functional_leaves_user_graph_alone() -> None:
    # Without create_graph the inputs are re-wrapped as fresh leaves: no gradient reaches the
    # user's tensors, and the results carry no graph.
    x = gradviz.tensor([1.0, 2.0], dtype=gradviz.float64, requires_grad=True)
    out, g = gradviz.autograd.functional.vjp(lambda a: (a * a).sum(), x)
    assert x.grad is None and not out.requires_grad and not g.requires_grad
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
