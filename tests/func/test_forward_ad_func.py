"""torch.func's forward-mode transforms on gradviz against torch: jvp and jacfwd by forward-mode
AD, hessian forward over reverse, and their compositions with jacrev, on small nets; results'
values and whether they carry a graph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from test_func_transforms import assert_same, both, t

import gradviz

RNG = np.random.default_rng(7)
W1 = RNG.standard_normal((4, 3))
B1 = RNG.standard_normal(4)
W2 = RNG.standard_normal((2, 4))
X3 = RNG.standard_normal(3)
V3 = RNG.standard_normal(3)


def _net(lib: Any) -> Any:
    w1, b1, w2 = t(lib, W1), t(lib, B1), t(lib, W2)

    def f(x: Any) -> Any:
        h = lib.nn.functional.gelu(lib.nn.functional.linear(x, w1, b1))
        return lib.tanh(h @ w2.t()).softmax(-1)

    return f


def _scalar(lib: Any) -> Any:
    net = _net(lib)
    return lambda x: (net(x) * lib.arange(1.0, 3.0, dtype=lib.float64)).sum() + (x.sin() ** 2).sum()


def test_jvp_of_a_small_net() -> None:
    def program(lib: Any) -> Any:
        out, tangent = lib.func.jvp(_net(lib), (t(lib, X3),), (t(lib, V3),))
        return out, tangent, out.requires_grad, tangent.requires_grad

    assert_same(*both(program))


def test_jvp_pytrees_has_aux_and_several_primals() -> None:
    def program(lib: Any) -> Any:
        def f(p: dict, x: Any) -> Any:
            y = (p["w"] @ x).exp() + p["b"]
            return {"y": y, "s": y.sum()}, y.mean()

        p = {"w": t(lib, W1), "b": t(lib, B1)}
        tp = {"w": t(lib, np.ones_like(W1)), "b": t(lib, B1 * 0 + 0.5)}
        return lib.func.jvp(f, (p, t(lib, X3)), (tp, t(lib, V3)), has_aux=True)

    assert_same(*both(program))


def test_jacfwd_matches_jacrev_and_torch() -> None:
    def program(lib: Any) -> Any:
        x = t(lib, X3)
        j = lib.func.jacfwd(_net(lib))(x)
        return j, lib.func.jacrev(_net(lib))(x), j.requires_grad

    assert_same(*both(program))


def test_hessian_is_forward_over_reverse() -> None:
    def program(lib: Any) -> Any:
        x = t(lib, X3)
        h = lib.func.hessian(_scalar(lib))(x)
        return (h, h.requires_grad, lib.func.jacfwd(lib.func.jacrev(_scalar(lib)))(x),
                lib.func.jacrev(lib.func.jacfwd(_scalar(lib)))(x))

    assert_same(*both(program))


def test_jacfwd_of_jacfwd() -> None:
    def program(lib: Any) -> Any:
        return lib.func.jacfwd(lib.func.jacfwd(_scalar(lib)))(t(lib, X3))

    assert_same(*both(program))


def test_jvp_through_parameters_keeps_their_graph() -> None:
    """A jvp of a function reading a parameter: the results are functions of it, as torch's."""

    def program(lib: Any) -> Any:
        w = t(lib, W1, requires_grad=True)
        out, tangent = lib.func.jvp(lambda x: (w @ x).tanh(), (t(lib, X3),), (t(lib, V3),))
        (g,) = lib.autograd.grad(tangent.sum(), w)
        return out.requires_grad, tangent.requires_grad, g

    assert_same(*both(program))


def test_forward_ad_over_a_module_with_functional_call() -> None:
    """The tutorial's pattern: a module's parameters made dual through functional_call."""

    def program(lib: Any) -> Any:
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2)).double()
        params = {k: v.detach() for k, v in model.named_parameters()}
        tangents = {k: lib.ones_like(v) for k, v in params.items()}
        x = t(lib, np.stack([X3, V3]))
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            duals = {k: fw.make_dual(params[k], tangents[k]) for k in params}
            out = lib.func.functional_call(model, duals, (x,))
            jvp = fw.unpack_dual(out).tangent
        return jvp, lib.func.jvp(lambda p: lib.func.functional_call(model, p, (x,)), (params,), (tangents,))[1]

    assert_same(*both(program))


def test_autograd_functional_jvp_unchanged() -> None:
    def program(lib: Any) -> Any:
        return lib.autograd.functional.jvp(_net(lib), t(lib, X3), t(lib, V3))

    assert_same(*both(program))


def test_torch_names_resolve() -> None:
    import gradviz as torch_like

    assert torch_like.autograd.forward_ad.dual_level is gradviz.autograd.forward_ad.dual_level
    assert set(torch.autograd.forward_ad.__all__) <= set(dir(gradviz.autograd.forward_ad))


def test_hessian_through_norm_softmax_and_losses() -> None:
    """Forward over reverse through the fused backward kernels (layer norm's, log_softmax's, the
    losses'), whose forward formulas come from their own backward formulas."""

    def program(lib: Any) -> Any:
        F = lib.nn.functional
        lw = t(lib, W2)

        def f(x: Any) -> Any:
            h = F.layer_norm(F.gelu(x.reshape(1, 4)), (4,))
            return F.cross_entropy(F.linear(h, lw), lib.tensor([1])) + F.mse_loss(h.tanh(), h.sigmoid())

        return lib.func.hessian(f)(t(lib, B1))

    assert_same(*both(program))


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's linearize traces with fx, which warns
def test_linearize() -> None:
    def program(lib: Any) -> Any:
        x = t(lib, X3)
        out, jvp_fn = lib.func.linearize(lambda a, b: (a * b.sin(), a + b), x, x)
        errors = []
        for bad in ((t(lib, V3[:2]), t(lib, V3)), (t(lib, V3), t(lib, V3).float())):
            try:
                jvp_fn(*bad)
            except RuntimeError as e:
                errors.append(str(e))
        return out, jvp_fn(t(lib, V3), t(lib, V3 * 2)), errors

    assert_same(*both(program))


def test_jvp_through_a_function_using_no_grad_matches_torch() -> None:
    """Forward AD ignores grad mode: a no_grad block inside the function still carries tangents."""

    def program(lib: Any) -> Any:
        def f(x: Any) -> Any:
            with lib.no_grad():
                s = x.sin() * 2
            return s + x.exp()

        return lib.func.jvp(f, (t(lib, X3),), (t(lib, V3),))

    assert_same(*both(program))


def test_jvp_tangent_through_parameters_that_require_grad_matches_torch() -> None:
    """A jvp's tangent through a Linear whose parameters require grad reports requires_grad and a
    history, as torch's, and its gradient with respect to the weight is torch's."""

    def program(lib: Any) -> Any:
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2).double()
        res = []
        for f in (lambda x: lin(x), lambda x: lib.tanh(lin(x)).sum(), lambda x: x.sin(),
                  lambda x: lib.nn.functional.cross_entropy(lin(x), lib.tensor([0, 1]))):
            p, tan = lib.func.jvp(f, (t(lib, np.stack([X3, V3])),), (t(lib, np.stack([V3, X3])),))
            res.append([p.requires_grad, tan.requires_grad, tan.grad_fn is None])
            if tan.requires_grad:
                res.append(lib.autograd.grad(tan.sum(), lin.weight)[0])
        return res

    assert_same(*both(program))
