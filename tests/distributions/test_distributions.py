"""torch.distributions on gradviz against torch 2.13: the same program on both, from the same
numbers and seeds; values, gradients, the graph's node names, samples, shapes, reprs and errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from _dist_validation import default_validation  # noqa: F401 - autouse: torch's default validation

import gradviz

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((2, 3))
LOC = np.array([0.5, -1.0, 2.0])
SCALE = np.array([1.5, 0.7, 0.2])
VALUE = np.array([0.1, -0.4, 2.5])


def names(t: Any) -> list[str]:
    out, seen, stack = [], set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n.name().rsplit("::", 1)[-1])
        stack.extend(f for f, _ in reversed(n.next_functions))
    return out


def leaf(T: Any, a: Any) -> Any:
    return T.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def run(program: Callable[[Any], dict[str, Any]], T: Any) -> dict[str, Any]:
    T.manual_seed(0)
    out = program(T)
    result: dict[str, Any] = {}
    for key, (value, leaves) in out.items():
        result[key] = {"value": value.detach().numpy().copy(), "dtype": str(value.dtype).rsplit(".", 1)[-1],
                       "shape": tuple(value.shape)}
        if value.requires_grad:
            result[key]["nodes"] = names(value)
            grads = T.autograd.grad(value.sum(), leaves, allow_unused=True, retain_graph=True)
            result[key]["grads"] = [None if g is None else g.numpy().copy() for g in grads]
    return result


def same(program: Callable[[Any], dict[str, Any]]) -> None:
    want, got = run(program, torch), run(program, gradviz)
    assert list(want) == list(got)
    for key in want:
        w, g = want[key], got[key]
        assert (g["shape"], g["dtype"]) == (w["shape"], w["dtype"]), key
        np.testing.assert_allclose(g["value"], w["value"], rtol=1e-6, atol=1e-12, err_msg=key)
        assert g.get("nodes") == w.get("nodes"), key
        for a, b in zip(w.get("grads", []), g.get("grads", [])):
            assert (a is None) == (b is None), key
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-12, err_msg=key)


def p_normal(T: Any) -> dict[str, Any]:
    loc, scale = leaf(T, LOC), leaf(T, SCALE)
    d = T.distributions.Normal(loc, scale)
    v = T.tensor(VALUE)
    return {"log_prob": (d.log_prob(v), (loc, scale)), "entropy": (d.entropy(), (loc, scale)),
            "rsample": (d.rsample((2,)), (loc, scale)), "sample": (d.sample((4,)), (loc,)),
            "cdf": (d.cdf(v), (loc, scale)), "icdf": (d.icdf(T.tensor([0.2, 0.5, 0.9], dtype=T.float64)), (loc, scale)),
            "mean": (d.mean, (loc,)), "stddev": (d.stddev, (scale,)), "variance": (d.variance, (scale,)),
            "scalar_scale": (T.distributions.Normal(loc, 2.0).log_prob(v), (loc,)),
            "broadcast": (T.distributions.Normal(loc, scale[:1]).log_prob(v), (loc, scale))}


def p_categorical(T: Any) -> dict[str, Any]:
    logits = leaf(T, LOGITS)
    d = T.distributions.Categorical(logits=logits)
    probs = leaf(T, [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    dp = T.distributions.Categorical(probs=probs)
    a = T.tensor([0, 2])
    return {"log_prob": (d.log_prob(a), (logits,)), "entropy": (d.entropy(), (logits,)),
            "probs": (d.probs, (logits,)), "logits": (d.logits, (logits,)),
            "sample": (d.sample((5,)), ()), "sample_default": (d.sample(), ()),
            "log_prob_broadcast": (d.log_prob(T.tensor([[1], [0]])), (logits,)),
            "p_log_prob": (dp.log_prob(a), (probs,)), "p_entropy": (dp.entropy(), (probs,)),
            "p_logits": (dp.logits, (probs,)), "enumerate": (d.enumerate_support(), ()),
            "mode": (d.mode, ()), "perplexity": (d.perplexity(), (logits,))}


def p_bernoulli(T: Any) -> dict[str, Any]:
    logits = leaf(T, LOC)
    d = T.distributions.Bernoulli(logits=logits)
    probs = leaf(T, [0.2, 0.5, 0.9])
    dp = T.distributions.Bernoulli(probs=probs)
    v = T.tensor([1.0, 0.0, 1.0], dtype=T.float64)
    return {"log_prob": (d.log_prob(v), (logits,)), "entropy": (d.entropy(), (logits,)),
            "p_log_prob": (dp.log_prob(v), (probs,)), "p_entropy": (dp.entropy(), (probs,)),
            "sample": (dp.sample((3,)), ()), "mean": (d.mean, (logits,)), "variance": (dp.variance, (probs,)),
            "mode": (dp.mode, ())}


def p_uniform_exponential(T: Any) -> dict[str, Any]:
    low, high = leaf(T, [0.0, -1.0]), leaf(T, [1.0, 3.0])
    u = T.distributions.Uniform(low, high)
    rate = leaf(T, [0.5, 2.0])
    e = T.distributions.Exponential(rate)
    return {"u_log_prob": (u.log_prob(T.tensor([0.5, 2.0], dtype=T.float64)), (low, high)),
            "u_entropy": (u.entropy(), (low, high)), "u_rsample": (u.rsample((3,)), (low, high)),
            "u_cdf": (u.cdf(T.tensor([0.5, 2.5], dtype=T.float64)), (low, high)),
            "e_log_prob": (e.log_prob(T.tensor([0.3, 1.0], dtype=T.float64)), (rate,)),
            "e_entropy": (e.entropy(), (rate,)), "e_rsample": (e.rsample((2,)), (rate,)),
            "e_cdf": (e.cdf(T.tensor([0.3, 1.0], dtype=T.float64)), (rate,))}


def p_independent_transformed(T: Any) -> dict[str, Any]:
    loc, scale = leaf(T, LOC), leaf(T, SCALE)
    ind = T.distributions.Independent(T.distributions.Normal(loc, scale), 1)
    v = T.tensor(VALUE)
    D = T.distributions
    lognormal = D.TransformedDistribution(D.Normal(loc, scale), [D.transforms.ExpTransform()])
    squashed = D.TransformedDistribution(D.Normal(loc, scale), [D.transforms.TanhTransform(cache_size=1),
                                                               D.transforms.AffineTransform(1.0, 2.0)])
    sig = D.TransformedDistribution(D.Normal(loc, scale), D.transforms.SigmoidTransform())
    x = squashed.rsample((2,))
    return {"ind_log_prob": (ind.log_prob(v), (loc, scale)), "ind_entropy": (ind.entropy(), (loc, scale)),
            "ind_rsample": (ind.rsample(), (loc, scale)),
            "lognormal": (lognormal.log_prob(T.tensor([0.5, 1.0, 3.0], dtype=T.float64)), (loc, scale)),
            "squashed_rsample": (x, (loc, scale)), "squashed_log_prob": (squashed.log_prob(x), (loc, scale)),
            "sigmoid": (sig.log_prob(T.tensor([0.2, 0.5, 0.7], dtype=T.float64)), (loc, scale))}


def p_kl(T: Any) -> dict[str, Any]:
    D = T.distributions
    loc, scale = leaf(T, LOC), leaf(T, SCALE)
    logits = leaf(T, LOGITS)
    p, q = D.Normal(loc, scale), D.Normal(T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64))
    c1, c2 = D.Categorical(logits=logits), D.Categorical(probs=T.tensor([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]],
                                                                         dtype=T.float64))
    b1, b2 = D.Bernoulli(logits=loc), D.Bernoulli(probs=T.tensor([0.3, 0.0, 1.0], dtype=T.float64))
    return {"normal": (D.kl_divergence(p, q), (loc, scale)), "categorical": (D.kl_divergence(c1, c2), (logits,)),
            "bernoulli": (D.kl_divergence(b1, b2), (loc,)),
            "independent": (D.kl_divergence(D.Independent(p, 1), D.Independent(q, 1)), (loc, scale))}


@pytest.mark.parametrize("program", [p_normal, p_categorical, p_bernoulli, p_uniform_exponential,
                                     p_independent_transformed, p_kl], ids=lambda p: p.__name__[2:])
def test_same_as_torch(program: Callable[[Any], dict[str, Any]]) -> None:
    same(program)


SHAPES = {
    "normal": lambda T: T.distributions.Normal(T.zeros(2, 3), 1.0),
    "normal_scalar": lambda T: T.distributions.Normal(0.0, 1.0),
    "categorical": lambda T: T.distributions.Categorical(logits=T.zeros(4, 5)),
    "bernoulli": lambda T: T.distributions.Bernoulli(probs=0.3),
    "independent": lambda T: T.distributions.Independent(T.distributions.Normal(T.zeros(2, 3), 1.0), 1),
    "transformed": lambda T: T.distributions.TransformedDistribution(
        T.distributions.Normal(T.zeros(2), T.ones(2)), [T.distributions.transforms.ExpTransform()]),
}


@pytest.mark.parametrize("name", SHAPES)
def test_shapes_and_repr(name: str) -> None:
    want, got = SHAPES[name](torch), SHAPES[name](gradviz)
    assert tuple(got.batch_shape) == tuple(want.batch_shape)
    assert tuple(got.event_shape) == tuple(want.event_shape)
    assert got.has_rsample == want.has_rsample
    assert repr(got).replace("gradviz.", "torch.") == repr(want)
    assert repr(got.support) == repr(want.support)


ERRORS = {
    "negative_scale": lambda T: T.distributions.Normal(T.zeros(2), T.tensor([1.0, -1.0])),
    "both_probs_and_logits": lambda T: T.distributions.Categorical(probs=T.ones(2), logits=T.ones(2)),
    "probs_0d": lambda T: T.distributions.Categorical(probs=T.tensor(1.0)),
    "outside_support": lambda T: T.distributions.Categorical(logits=T.zeros(3)).log_prob(T.tensor(3)),
    "not_a_tensor": lambda T: T.distributions.Normal(0.0, 1.0).log_prob(0.5),
    "bernoulli_value": lambda T: T.distributions.Bernoulli(probs=T.tensor([0.5])).log_prob(T.tensor([0.5])),
    "no_kl": lambda T: T.distributions.kl_divergence(T.distributions.Normal(0.0, 1.0),
                                                     T.distributions.Categorical(logits=T.zeros(2))),
    "not_broadcastable": lambda T: T.distributions.Normal(T.zeros(3), 1.0).log_prob(T.zeros(2)),
    "independent_too_many": lambda T: T.distributions.Independent(T.distributions.Normal(T.zeros(3), 1.0), 2),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(name: str) -> None:
    caught = []
    for T in (torch, gradviz):
        with pytest.raises(Exception) as e:
            ERRORS[name](T)
        caught.append((type(e.value).__name__, str(e.value).replace("gradviz.", "torch.")))
    assert caught[1] == caught[0]


def test_validation_can_be_turned_off_as_in_torch() -> None:
    for T in (torch, gradviz):
        d = T.distributions.Normal(T.zeros(1), T.tensor([-1.0]), validate_args=False)
        assert math.isnan(float(d.log_prob(T.zeros(1))))


def test_submodules_import_as_torch_names_them() -> None:
    with gradviz.as_torch():
        from torch.distributions.categorical import Categorical  # type: ignore[import-not-found]
        from torch.distributions.kl import kl_divergence  # type: ignore[import-not-found]
        from torch.distributions.normal import Normal  # type: ignore[import-not-found]

        assert Categorical is gradviz.distributions.Categorical
        assert Normal is gradviz.distributions.Normal
        assert kl_divergence is gradviz.distributions.kl_divergence
