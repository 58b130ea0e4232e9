"""The math ops of gradviz/ops/math_ops.py and math_binary.py against torch 2.13: values and
gradients in float32 and float64, backward node names and next_functions, in-place variants,
integer promotion and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz as gv

UNARY_DOMAINS = {
    "atan": (-3, 3), "asin": (-0.95, 0.95), "acos": (-0.95, 0.95), "sinh": (-3, 3), "cosh": (-3, 3),
    "asinh": (-3, 3), "acosh": (1.05, 4), "atanh": (-0.95, 0.95), "erf": (-3, 3), "erfc": (-3, 3),
    "erfinv": (-0.99, 0.99), "lgamma": (-3.9, 6), "digamma": (-3.9, 20), "frac": (-4, 4), "logit": (0.02, 0.98),
}
TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


def _values(lo: float, hi: float, n: int = 40, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).uniform(lo, hi, n)
    return np.where(np.abs(v - np.round(v)) < 0.05, v + 0.1, v)  # off lgamma/digamma's poles


def _pair(values: np.ndarray, dtype: str, requires_grad: bool = True) -> tuple[torch.Tensor, gv.Tensor]:
    t = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    g = gv.tensor(values, dtype=getattr(gv, dtype), requires_grad=requires_grad)
    return t, g


def _close(g: gv.Tensor, t: torch.Tensor, dtype: str) -> None:
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_values_grads_and_nodes(name: str, dtype: str) -> None:
    t, g = _pair(_values(*UNARY_DOMAINS[name]), dtype)
    yt, yg = getattr(torch, name)(t), getattr(g, name)()
    _close(yg, yt, dtype)
    assert yg.dtype.name == dtype
    assert yg.grad_fn.name() == yt.grad_fn.name()
    w = np.random.default_rng(1).standard_normal(t.shape)
    (yt * torch.tensor(w, dtype=t.dtype)).sum().backward()
    (yg * gv.tensor(w, dtype=g.dtype)).sum().backward()
    tol = TOL[dtype] if dtype == "float64" or name != "digamma" else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), **tol)


@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_inplace_matches_torch(name: str) -> None:
    t, g = _pair(_values(*UNARY_DOMAINS[name]), "float64")
    yt, yg = t * 1.0, g * 1.0
    assert getattr(yg, name + "_")() is yg
    getattr(yt, name + "_")()
    _close(yg, yt, "float64")
    assert yg.grad_fn.name() == yt.grad_fn.name()
    assert [type(f).__name__ for f, _ in yg.grad_fn.next_functions] == ["MulBackward0"]
    assert yg._version == yt._version
    yt, yg = yt.sum(), yg.sum()
    if name in ("acosh", "asinh", "atanh"):  # torch has no derivative for these in place
        msg = f"the derivative for 'inplace version of {name}' is not implemented."
        with pytest.raises(NotImplementedError) as e:
            yt.backward()
        assert str(e.value) == msg
        with pytest.raises(NotImplementedError, match=msg):
            yg.backward()
        return
    yt.backward()
    yg.backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), **TOL["float64"])


def test_special_values() -> None:
    x = [0.0, -0.0, -1.0, -2.5, 1.0, 10.0, float("inf"), float("nan")]
    for name in ("lgamma", "digamma", "erf", "erfc"):
        np.testing.assert_allclose(getattr(gv, name)(gv.tensor(x, dtype=gv.float64)).numpy(),
                                   getattr(torch, name)(torch.tensor(x, dtype=torch.float64)).numpy(),
                                   rtol=1e-12, equal_nan=True)
    y = [-1.0, 1.0, 1.5, -0.999999, 0.0, 0.5]
    np.testing.assert_allclose(gv.erfinv(gv.tensor(y, dtype=gv.float64)).numpy(),
                               torch.erfinv(torch.tensor(y, dtype=torch.float64)).numpy(), rtol=1e-12, equal_nan=True)
    p = [0.0, 0.05, 0.5, 0.97, 1.0]
    for eps in (None, 0.1):
        np.testing.assert_allclose(gv.logit(gv.tensor(p), eps).numpy(), torch.logit(torch.tensor(p), eps).numpy(),
                                   rtol=1e-6)
        t, g = _pair(np.array([0.05, 0.5, 0.95, 1.5]), "float64")
        torch.logit(t, eps).sum().backward()
        gv.logit(g, eps).sum().backward()
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), equal_nan=True)


@pytest.mark.parametrize("name", ["atan", "erf", "lgamma", "digamma", "erfinv", "logit", "sinh"])
def test_integer_inputs_promote(name: str) -> None:
    vals = [0, 1, 2] if name not in ("erfinv", "logit") else [0, 1, 0]
    yt, yg = getattr(torch, name)(torch.tensor(vals)), getattr(gv, name)(gv.tensor(vals))
    assert yg.dtype is gv.float32 and yt.dtype is torch.float32
    np.testing.assert_allclose(yg.numpy(), yt.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        getattr(gv.tensor(vals), name + "_")()


def test_frac_refuses_integers() -> None:
    with pytest.raises(NotImplementedError, match="\"frac_cpu\" not implemented for 'Long'"):
        gv.frac(gv.tensor([1, 2]))


BINARY = {"atan2": ((-2, 2), (-2, 2)), "hypot": ((-2, 2), (-2, 2)), "xlogy": ((-2, 2), (0.1, 3)),
          "logaddexp": ((-3, 3), (-3, 3))}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_grads_nodes_and_broadcast(name: str, dtype: str) -> None:
    (la, ha), (lb, hb) = BINARY[name]
    ta, ga = _pair(_values(la, ha, 12).reshape(4, 3), dtype)
    tb, gb = _pair(_values(lb, hb, 3, seed=2), dtype)
    yt, yg = getattr(torch, name)(ta, tb), getattr(gv, name)(ga, gb)
    _close(yg, yt, dtype)
    assert yg.grad_fn.name() == yt.grad_fn.name()
    assert len(yg.grad_fn.next_functions) == 2
    yt.sum().backward()
    yg.sum().backward()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(gb.grad.numpy(), tb.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("name", ["atan2", "hypot", "xlogy"])
def test_binary_inplace(name: str) -> None:
    ta, ga = _pair(_values(0.1, 2, 3), "float64")
    tb, gb = _pair(_values(0.1, 2, 3, seed=3), "float64")
    yt, yg = ta * 1.0, ga * 1.0
    getattr(yt, name + "_")(tb)
    assert getattr(yg, name + "_")(gb) is yg
    _close(yg, yt, "float64")
    assert yg.grad_fn.name() == yt.grad_fn.name()
    assert [type(f).__name__ for f, _ in yg.grad_fn.next_functions] == ["MulBackward0", "AccumulateGrad"]
    yt.sum().backward()
    yg.sum().backward()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), **TOL["float64"])
    np.testing.assert_allclose(gb.grad.numpy(), tb.grad.numpy(), **TOL["float64"])


def test_xlogy_scalars_and_zeros() -> None:
    ta, ga = _pair(np.array([0.0, 1.5, -2.0]), "float64")
    for ft, fg in ((lambda t: torch.xlogy(t, 2.5), lambda g: gv.xlogy(g, 2.5)),
                   (lambda t: torch.xlogy(1.5, t.abs() + 0.1), lambda g: gv.xlogy(1.5, g.abs() + 0.1))):
        yt, yg = ft(ta), fg(ga)
        _close(yg, yt, "float64")
        assert yg.grad_fn.name() == yt.grad_fn.name()
    z = [0.0, 0.0, 1.0]
    o = [0.0, float("nan"), 0.0]
    np.testing.assert_equal(gv.xlogy(gv.tensor(z), gv.tensor(o)).numpy(),
                            torch.xlogy(torch.tensor(z), torch.tensor(o)).numpy())
    assert gv.xlogy(gv.tensor([1, 2]), 3).dtype is gv.float32
    assert gv.atan2(gv.tensor([1, 2]), gv.tensor([3, 4])).dtype is gv.float32


@pytest.mark.parametrize("name", ["hypot", "logaddexp"])
def test_binary_refuses_integers(name: str) -> None:
    with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for 'Long'"):
        getattr(gv, name)(gv.tensor([1, 2]), gv.tensor([3, 4]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", [0.3, 0.8, "tensor"])
def test_lerp(weight: object, dtype: str) -> None:
    ta, ga = _pair(_values(-2, 2, 6).reshape(2, 3), dtype)
    tb, gb = _pair(_values(-2, 2, 3, seed=4), dtype)
    if weight == "tensor":
        tw, gw = _pair(_values(-0.2, 1.2, 2, seed=5).reshape(2, 1), dtype)
    else:
        tw = gw = weight
    yt, yg = torch.lerp(ta, tb, tw), ga.lerp(gb, gw)
    _close(yg, yt, dtype)
    assert yg.grad_fn.name() == yt.grad_fn.name()
    yt.sum().backward()
    yg.sum().backward()
    for g, t in ((ga, ta), (gb, tb)) + (((gw, tw),) if weight == "tensor" else ()):
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), **TOL[dtype])
    yt, yg = ta * 1.0, ga * 1.0
    yt.lerp_(tb, tw)
    yg.lerp_(gb, gw)
    _close(yg, yt, dtype)
    assert yg.grad_fn.name() == yt.grad_fn.name()


def test_lerp_errors() -> None:
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented for 'Long'"):
        gv.lerp(gv.tensor([1, 2]), gv.tensor([3, 4]), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        gv.lerp(gv.tensor([1.0]), gv.tensor([2.0], dtype=gv.float64), 0.5)


def test_outer_is_view_times_vector() -> None:
    ta, ga = _pair(_values(-2, 2, 3), "float64")
    tb, gb = _pair(_values(-2, 2, 4, seed=6), "float64")
    yt, yg = torch.outer(ta, tb), ga.outer(gb)
    _close(yg, yt, "float64")
    names = lambda y: [type(f).__name__ for f, _ in y.grad_fn.next_functions]  # noqa: E731
    assert yg.grad_fn.name() == yt.grad_fn.name() == "MulBackward0"
    assert names(yg) == names(yt) == ["ViewBackward0", "AccumulateGrad"]
    yt.sum().backward()
    yg.sum().backward()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(gb.grad.numpy(), tb.grad.numpy())
    assert gv.outer(gv.tensor([1, 2]), gv.tensor([1.5, 2.0])).dtype is gv.float32
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        gv.outer(gv.ones(2, 2), gv.ones(2))


def test_create_graph_second_derivative() -> None:
    for name in ("atan", "erf", "sinh", "lgamma", "atanh"):
        t, g = _pair(_values(0.1, 0.9, 5), "float64")
        (dt,) = torch.autograd.grad(getattr(torch, name)(t).sum(), t, create_graph=True)
        (dg,) = gv.autograd.grad(getattr(gv, name)(g).sum(), g, create_graph=True)
        _close(dg, dt, "float64")
        (d2t,) = torch.autograd.grad(dt.sum(), t)
        (d2g,) = gv.autograd.grad(dg.sum(), g)
        np.testing.assert_allclose(d2g.numpy(), d2t.numpy(), rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("kw", [{}, {"nan": 0.5}, {"nan": -1.0, "posinf": 7.0, "neginf": -3.0}])
def test_nan_to_num_matches_torch(dtype: str, kw: dict) -> None:
    """Values (the dtype's own limits for the infinities), NanToNumBackward0 and its gradient
    (none through a replaced number), out of place and in place (the same node name)."""
    v = np.array([1.5, np.nan, np.inf, -np.inf, -2.0, 0.0])
    w = np.arange(1.0, 7.0)
    res = []
    for T in (torch, gv):
        x = T.tensor(v, dtype=getattr(T, dtype), requires_grad=True)
        y = T.nan_to_num(x, **kw)
        y.backward(T.tensor(w, dtype=x.dtype))
        z = x.detach().clone().requires_grad_()
        u = z * 1
        assert u.nan_to_num_(**kw) is u
        u.backward(T.tensor(w, dtype=x.dtype))
        res.append((y.detach().float().numpy(), x.grad.float().numpy(), y.grad_fn.name(), u.detach().float().numpy(),
                    z.grad.float().numpy(), u.grad_fn.name(), u._version,
                    [type(f).__name__ for f, _ in u.grad_fn.next_functions]))
    for a, b in zip(*res):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(b, a)
        else:
            assert b == a


def test_nan_to_num_of_integers_is_a_copy() -> None:
    for T in (torch, gv):
        x = T.tensor([1, 2, 3])
        y = T.nan_to_num(x)
        assert y.tolist() == [1, 2, 3] and y.dtype == T.int64
        y[0] = 9
        assert x.tolist() == [1, 2, 3]
        assert x.nan_to_num_() is x
