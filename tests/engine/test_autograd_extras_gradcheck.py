"""autograd.gradcheck / gradgradcheck against torch 2.13: the same verdicts, error types and
messages (gradviz prints its dtypes as gradviz.float64 where torch prints torch.float64)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

import gradviz


def _outcome(f: Callable[[], Any]) -> Any:
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 - the outcome is compared
        return (type(e).__name__, isinstance(e, RuntimeError), str(e).replace("gradviz.", "torch."))


def _T(T: ModuleType, v: Any, grad: bool = True) -> Any:
    return T.tensor(v, dtype=T.float64, requires_grad=grad)


def _functions(T: ModuleType) -> dict[str, Callable]:
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * g

    class BadDouble(T.autograd.Function):
        # First derivative right, second wrong (a detached factor).
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x.detach() * x * g

    class Wrong(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a @ b

        @staticmethod
        def backward(ctx, g):
            return g.sum() * T.ones(2, 2, dtype=T.float64), None

    class NoMul(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + 1e-9

    class NonZeroOnUndefined(T.autograd.Function):
        # Right gradients, but ones where the output gradient is undefined (None).
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 if g is not None else T.ones(2, dtype=T.float64)

    class RaiseOnUndefined(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if g is None:
                raise RuntimeError("no grad")
            return g * 2

    class HandlesUndefined(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            out = None
            if g1 is not None:
                out = g1 * 2
            if g2 is not None:
                out = g2 * 3 if out is None else out + g2 * 3
            return out

    return {
        "Bad": Bad.apply, "BadDouble": BadDouble.apply, "Wrong": Wrong.apply, "NoMul": NoMul.apply,
        "NonZeroOnUndefined": NonZeroOnUndefined.apply, "RaiseOnUndefined": RaiseOnUndefined.apply,
        "HandlesUndefined": HandlesUndefined.apply,
    }


def _cases(T: ModuleType) -> dict[str, Callable[[], Any]]:
    gc, ggc = T.autograd.gradcheck, T.autograd.gradgradcheck
    f = _functions(T)
    x = _T(T, [1.0, 2.0])
    y = _T(T, [[1.0, 2.0], [3.0, 4.0]])
    col = _T(T, [[1.0], [2.0]])
    return {
        "wrong_backward": lambda: gc(f["Bad"], (x,)),
        "wrong_backward_no_raise": lambda: gc(f["Bad"], (x,), raise_exception=False),
        "two_outputs_two_inputs": lambda: gc(lambda a, b: (a * b, a.sum()), (y, y.detach().clone().requires_grad_())),
        "no_input_requires_grad": lambda: gc(lambda a: a * 2, (T.ones(2, dtype=T.float64),)),
        "float32_fails": lambda: gc(lambda a: a * 2, (T.ones(2, requires_grad=True),)),
        "gradgrad_ok": lambda: ggc(lambda a: a**3, (x,)),
        "gradgrad_two_inputs": lambda: ggc(lambda a, b: (a * b).sum() * a, (y, _T(T, [[1.0, -1.0], [0.5, 2.0]]))),
        "gradgrad_detects_second_derivative": lambda: ggc(f["BadDouble"], (x,), (_T(T, [1.0, 1.0]),)),
        "first_derivative_of_bad_double_ok": lambda: gc(f["BadDouble"], (x,)),
        "no_differentiable_output_no_raise": lambda: gc(lambda a: (a * 2).detach(), (x,), raise_exception=False),
        "no_differentiable_output": lambda: gc(lambda a: (a * 2).detach(), (x,)),
        "zero_gradient_op": lambda: gc(lambda a: a.sign(), (x,)),
        "matmul_two_inputs": lambda: gc(lambda a, b: (a @ b) * 1.5, (y, col)),
        "non_square_mismatch": lambda: gc(f["Wrong"], (y, col)),
        "not_multiplied_by_grad_output": lambda: gc(f["NoMul"], (x,)),
        "tanh_exp_chain": lambda: gc(lambda a: (a.tanh() * a.exp()).sum(), (x,)),
        "gradgrad_tanh": lambda: ggc(lambda a: a.tanh() * a, (x,), (_T(T, [0.3, -0.7]),)),
        "non_contiguous_input": lambda: gc(lambda a: (a * a).sum(0), (_T(T, [[1.0, 2.0], [3.0, 4.0]]).t(),)),
        "scalar_input": lambda: gc(lambda a: a.exp() * 2, (_T(T, 0.5),)),
        "undefined_grad_nonzero": lambda: gc(f["NonZeroOnUndefined"], (x,)),
        "undefined_grad_nonzero_unchecked": lambda: gc(f["NonZeroOnUndefined"], (x,), check_undefined_grad=False),
        "undefined_grad_raises": lambda: gc(f["RaiseOnUndefined"], (x,)),
        "undefined_grad_handled": lambda: gc(f["HandlesUndefined"], (x,)),
        "tolerance_kwargs": lambda: gc(f["Bad"], (x,), atol=10.0, rtol=0.0),
    }


CASES = sorted(_cases(torch))


@pytest.mark.parametrize("name", CASES)
def test_gradcheck_matches_torch(name: str) -> None:
    with warnings.catch_warnings(record=True) as w_torch:
        warnings.simplefilter("always")
        want = _outcome(_cases(torch)[name])
    with warnings.catch_warnings(record=True) as w_gv:
        warnings.simplefilter("always")
        got = _outcome(_cases(gradviz)[name])
    assert got == want

    def ours(ws: list) -> list[str]:
        return [str(w.message) for w in ws if "Input #" in str(w.message) or "Backwards compat" in str(w.message)]

    assert ours(w_gv) == ours(w_torch)


def test_gradcheck_error_is_a_runtime_error_subclass() -> None:
    from gradviz.autograd.gradcheck import GradcheckError

    assert issubclass(GradcheckError, RuntimeError)
    assert gradviz.autograd.GradcheckError is GradcheckError


def test_gradcheck_leaves_inputs_unchanged() -> None:
    x = gradviz.tensor([0.25, -1.5, 3.0], dtype=gradviz.float64, requires_grad=True)
    before = x.detach().numpy().copy()
    version = x._version
    assert gradviz.autograd.gradcheck(lambda a: (a * a).exp(), (x,))
    assert (x.detach().numpy() == before).all()
    assert x._version == version
    assert x.grad is None
