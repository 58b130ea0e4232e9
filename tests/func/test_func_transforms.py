"""torch.func on gradviz against torch.func: each program runs on both libraries from the same
numbers, and the results (values, shapes, structures, errors) are compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import gradviz

RNG = np.random.default_rng(0)
X3 = RNG.standard_normal(3)
X23 = RNG.standard_normal((2, 3))
B43 = RNG.standard_normal((4, 3))
Y4 = RNG.standard_normal(4)


def both(program: Callable[[Any], Any]) -> tuple[Any, Any]:
    return program(torch), program(gradviz)


def as_numpy(x: Any) -> Any:
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return x.detach().numpy()
    if isinstance(x, dict):
        return {k: as_numpy(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(as_numpy(v) for v in x)
    return x


def assert_same(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-8) -> None:
    a, b = as_numpy(a), as_numpy(b)
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k], rtol, atol)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            assert_same(u, v, rtol, atol)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    else:
        assert a == b


def t(lib: Any, a: np.ndarray, **kw: Any) -> Any:
    return lib.tensor(a, dtype=lib.float64, **kw)


def test_grad_and_grad_and_value() -> None:
    def program(lib: Any) -> Any:
        f = lambda x, y: (lib.sin(x) * x * y).sum()  # noqa: E731
        x, y = t(lib, X3), t(lib, X3[::-1].copy())
        return (lib.func.grad(f)(x, y), lib.func.grad(f, argnums=(0, 1))(x, y),
                lib.func.grad_and_value(f, argnums=1)(x, y))

    assert_same(*both(program))


def test_grad_has_aux_and_pytree_inputs() -> None:
    def program(lib: Any) -> Any:
        def f(p: dict, x: Any) -> Any:
            out = (p["w"] * x).tanh().sum() + p["b"] ** 2
            return out, {"out": out}

        p = {"w": t(lib, X3), "b": t(lib, np.array(0.5))}
        g, aux = lib.func.grad(f, has_aux=True)(p, t(lib, Y4[:3]))
        return g, aux["out"], g["w"].requires_grad

    assert_same(*both(program))


def test_nested_grad_is_the_second_derivative() -> None:
    def program(lib: Any) -> Any:
        f = lambda x: (x**3).sum()  # noqa: E731
        g = lib.func.grad(lambda x: lib.func.grad(f)(x).sum())
        return g(t(lib, X3))

    assert_same(*both(program))


def _mlp(lib: Any) -> Any:
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double()


def test_per_sample_gradients_with_vmap_and_functional_call() -> None:
    def program(lib: Any) -> Any:
        model = _mlp(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p: dict, x: Any, y: Any) -> Any:
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.mse_loss(out.squeeze(0), y)

        xs, ys = t(lib, B43), t(lib, RNG_Y)
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

    assert_same(*both(program))


RNG_Y = np.random.default_rng(1).standard_normal((4, 2))


def test_jacrev_jacfwd_of_a_small_net_and_of_several_arguments() -> None:
    def program(lib: Any) -> Any:
        model = _mlp(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}
        x = t(lib, X3)
        f = lambda p, x: lib.func.functional_call(model, p, (x,))  # noqa: E731
        g = lambda x, y: (x.sin() * y, (x * y).sum())  # noqa: E731
        return (lib.func.jacrev(f)(params, x), lib.func.jacrev(f, argnums=1)(params, x),
                lib.func.jacfwd(f, argnums=1)(params, x),
                lib.func.jacrev(g, argnums=(0, 1))(x, x.cos()),
                lib.func.jacfwd(g, argnums=(0, 1))(x, x.cos()))

    assert_same(*both(program))


def test_hessian_jvp_vjp() -> None:
    def program(lib: Any) -> Any:
        f = lambda x: (x.tanh() * x.exp()).sum()  # noqa: E731
        h = lib.func.hessian(f)(t(lib, X3))
        out, tangent = lib.func.jvp(lambda x, y: x * y.sin(), (t(lib, X3), t(lib, X3 + 1)),
                                    (t(lib, np.ones(3)), t(lib, X3)))
        value, fn = lib.func.vjp(lambda x: (x.exp(), x.sum() * 2), t(lib, X3))
        return h, out, tangent, value, fn((t(lib, Y4[:3]), t(lib, np.array(2.0))))

    assert_same(*both(program))


def test_vmap_dims_nesting_and_chunks() -> None:
    def program(lib: Any) -> Any:
        a, b = t(lib, X23), t(lib, X23.T.copy())
        dot = lambda x, y: (x * y).sum()  # noqa: E731
        return (lib.func.vmap(dot)(a, a), lib.func.vmap(dot, in_dims=(0, 1))(a, b),
                lib.func.vmap(lambda x: x * 2, out_dims=1)(a), lib.func.vmap(dot, in_dims=(0, None))(a, a[0]),
                lib.func.vmap(lib.func.vmap(lambda x, y: x * y))(a, a), lib.func.vmap(dot, chunk_size=1)(a, a),
                lib.func.vmap(lambda x: (x.sum(), {"m": x.max()}))(a))

    assert_same(*both(program))


def test_ensemble_with_stack_module_state() -> None:
    def program(lib: Any) -> Any:
        models = [_mlp(lib) for _ in range(3)]
        params, buffers = lib.func.stack_module_state(models)
        base = _mlp(lib)
        call = lambda p, b, x: lib.func.functional_call(base, (p, b), (x,))  # noqa: E731
        out = lib.func.vmap(call, in_dims=(0, 0, None))(params, buffers, t(lib, B43))
        return out, {k: (v.shape, v.requires_grad, v.is_leaf) for k, v in params.items()}

    torch_out, gv_out = both(program)
    assert_same(torch_out[0], gv_out[0])
    assert {k: (tuple(s), r, leaf) for k, (s, r, leaf) in torch_out[1].items()} == {
        k: (tuple(s), r, leaf) for k, (s, r, leaf) in gv_out[1].items()}


def test_results_keep_the_graph_to_a_captured_parameter() -> None:
    def program(lib: Any) -> Any:
        w = t(lib, X3, requires_grad=True)
        g = lib.func.grad(lambda x: (x * x * w).sum())(t(lib, Y4[:3]))
        plain = lib.func.grad(lambda x: (x * x).sum())(t(lib, Y4[:3]))
        g.sum().backward()
        return g.requires_grad, plain.requires_grad, w.grad

    assert_same(*both(program))


def test_maml_differentiates_through_the_inner_gradient() -> None:
    """grad inside vmap of inputs that require grad: the outer backward reaches them through the
    inner gradient (the second-order term), as in torch."""

    def program(lib: Any) -> Any:
        w = t(lib, X3, requires_grad=True)
        xs, ys = t(lib, B43), t(lib, RNG_Y[:, 0].copy())

        def task_loss(x: Any, y: Any) -> Any:
            inner = lambda w, x, y: ((w * x).sum().tanh() - y) ** 2  # noqa: E731
            g = lib.func.grad(inner)(w, x, y)
            return inner(w - 0.1 * g, x, y)

        loss = lib.func.vmap(task_loss)(xs, ys).mean()
        loss.backward()
        return loss, w.grad

    assert_same(*both(program))


ERRORS = {
    "not scalar": lambda lib: lib.func.grad(lambda x: x * 2)(t(lib, X3)),
    "not a tensor": lambda lib: lib.func.grad(lambda x: (x.sum(), 1))(t(lib, X3)),
    "aux not a pair": lambda lib: lib.func.grad(lambda x: x.sum(), has_aux=True)(t(lib, X3)),
    "argnum out of range": lambda lib: lib.func.grad(lambda x: x.sum(), argnums=1)(t(lib, X3)),
    "vmap returns a float": lambda lib: lib.func.vmap(lambda x: 1.0)(t(lib, X3)),
    "vmap sizes differ": lambda lib: lib.func.vmap(lambda a, b: a + b)(t(lib, X23), t(lib, B43[:3])),
    "vmap in_dim too big": lambda lib: lib.func.vmap(lambda x: x, in_dims=2)(t(lib, X3)),
    "jvp primals not a tuple": lambda lib: lib.func.jvp(lambda x: x, t(lib, X3), t(lib, X3)),
    "vjp cotangent shape": lambda lib: lib.func.vjp(lambda x: x * 2, t(lib, X3))[1](t(lib, Y4[:2])),
    "functional_call strict": lambda lib: lib.func.functional_call(
        lib.nn.Linear(2, 2), {"nope": lib.zeros(2)}, (lib.zeros(2),), strict=True),
    "stack no models": lambda lib: lib.func.stack_module_state([]),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_as_torch_raises_them(case: str) -> None:
    def caught(lib: Any) -> tuple[str, str]:
        with pytest.raises(Exception) as e:
            ERRORS[case](lib)
        return type(e.value).__name__, str(e.value)

    (tt, tm), (gt, gm) = both(caught)
    assert gt == tt
    assert gm == tm


def test_torch_func_resolves_under_import_gradviz_as_torch() -> None:
    with gradviz.as_torch():
        import torch as fake  # noqa: F811 - gradviz standing in
        from torch.func import vmap  # type: ignore[import-not-found]

        assert vmap is gradviz.func.vmap
        assert fake.func.grad is gradviz.func.grad
