"""torch.optim differential tests: the same parameters, gradients and steps under torch 2.13 and
gradviz give the same parameter updates, optimizer state, version counters and state dicts.

gradviz does each ATen kernel's arithmetic in its order. With ``use_fused_multiply_add(True)`` it
also reproduces the multiply-adds torch's kernels fuse, and SGD's updates (every optimizer's on most
elements) are then bit-identical to torch's; torch's sqrt, though, goes through MKL's vector math,
which is not correctly rounded (1 ulp off the exact root on ~0.6% of inputs, float32 and float64)
and which nothing portable reproduces, so optimizers that take a root are compared to a few ulp.
By default (unfused, torch's speed) every update is compared to a few ulp.

The losses are hand-written over plain leaf tensors (what an optimizer sees of a model). torch is
required: a missing torch fails these tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import gradviz

SHAPES = [(3, 4), (5,), ()]


def _arrays(dtype: Any, seed: int = 0) -> tuple[list, list, list]:
    rng = np.random.default_rng(seed)
    inits = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    cs = [np.asarray(rng.uniform(0.5, 2.0, s), dtype=dtype) for s in SHAPES]
    ds = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    return inits, cs, ds


def _params(T: Any, inits: list) -> list:
    return [T.tensor(a.copy(), requires_grad=True) for a in inits]


def _loss(T: Any, params: list, cs: list, ds: list) -> Any:
    """sum(c p^2 + d p): its gradient, 2 c p + d, keeps every optimizer moving for many steps."""
    total = None
    for p, c, d in zip(params, cs, ds):
        term = (p * p * T.tensor(c)).sum() + (p * T.tensor(d)).sum()
        total = term if total is None else total + term
    return total


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t._data)


def _same(got: Any, want: Any, what: str, exact: bool = True) -> None:
    """Bit for bit, or (``exact=False``: unfused, or a sqrt was taken) to a few ulp per step."""
    g, w = _np(got), _np(want)
    assert g.dtype == w.dtype and g.shape == w.shape, what
    if not exact:
        tol = {"rtol": 1e-13, "atol": 1e-15} if g.dtype == np.float64 else {"rtol": 4e-6, "atol": 1e-7}
        np.testing.assert_allclose(g, w, err_msg=what, **tol)
    elif not np.array_equal(g, w):
        ulps = np.max(np.abs(g.view(f"i{g.itemsize}").astype(np.int64) - w.view(f"i{w.itemsize}").astype(np.int64)))
        raise AssertionError(f"{what}: differs from torch by up to {ulps} ulp\n{g}\n{w}")


def _compare_state(ts: dict, gs: dict, exact: bool) -> None:
    assert ts.keys() == gs.keys()
    for k in ts:
        tv, gv = ts[k], gs[k]
        if isinstance(tv, torch.Tensor):
            assert isinstance(gv, gradviz.Tensor), k
            assert tuple(tv.shape) == tuple(gv.shape), k
            assert str(tv.dtype).split(".")[1] == gv.dtype.name, k
            _same(gv, tv, k, exact)
        else:
            assert gv == tv, k


@pytest.fixture(params=[True, False], ids=["fused", "unfused"])
def fused(request: pytest.FixtureRequest) -> Any:
    previous = gradviz.optim.use_fused_multiply_add(request.param)
    yield request.param
    gradviz.optim.use_fused_multiply_add(previous)


def run_both(name: str, kwargs: dict, steps: int = 6, dtype: Any = np.float64, skip_grad: int | None = None,
             fused: bool = True):
    """Steps the named optimizer on both engines; compares params, state and versions after every step."""
    inits, cs, ds = _arrays(dtype)
    tp, gp = _params(torch, inits), _params(gradviz, inits)
    topt = getattr(torch.optim, name)(tp, **kwargs, **({"foreach": False} if name != "LBFGS" else {}))
    gopt = getattr(gradviz.optim, name)(gp, **kwargs)
    for step in range(steps):
        for T, params, opt in ((torch, tp, topt), (gradviz, gp, gopt)):
            opt.zero_grad()
            _loss(T, params, cs, ds).backward()
            if skip_grad is not None:
                params[skip_grad].grad = None  # a param without a gradient is skipped
            opt.step()
        exact = fused and name == "SGD"
        for i, (t, g) in enumerate(zip(tp, gp)):
            _same(g, t, f"{name} param {i} step {step}", exact)
            assert g._version == t._version, (name, i, step)
        assert len(topt.state) == len(gopt.state)
        for t, g in zip(tp, gp):
            if t in topt.state:
                _compare_state(topt.state[t], gopt.state[g], exact)
    return topt, gopt, tp, gp


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.02, "maximize": True, "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.5}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.8, "centered": True, "weight_decay": 0.05}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.3, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "betas": (0.5, 0.6), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "betas": (0.5, 0.6), "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_updates_match_torch(name: str, kwargs: dict, dtype: Any, fused: bool) -> None:
    run_both(name, kwargs, dtype=dtype, fused=fused)


FOREACH_CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True}),
]


@pytest.mark.parametrize(("name", "kwargs"), FOREACH_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(FOREACH_CASES)])
def test_foreach_matches_torch(name: str, kwargs: dict, fused: bool) -> None:
    """foreach=True, torch's multi-tensor loop: the same params, state and versions, and the same
    gradients afterwards (SGD with nesterov adds the buffers into p.grad itself)."""
    inits, cs, ds = _arrays(np.float32)
    tp, gp = _params(torch, inits), _params(gradviz, inits)
    topt = getattr(torch.optim, name)(tp, foreach=True, **kwargs)
    gopt = getattr(gradviz.optim, name)(gp, foreach=True, **kwargs)
    exact = fused and name == "SGD"
    for step in range(4):
        for T, params, opt in ((torch, tp, topt), (gradviz, gp, gopt)):
            opt.zero_grad()
            _loss(T, params, cs, ds).backward()
            opt.step()
        for i, (t, g) in enumerate(zip(tp, gp)):
            _same(g, t, f"param {i} step {step}", exact)
            _same(g.grad, t.grad, f"grad {i} step {step}", exact)
            assert g._version == t._version, (i, step)
            if t in topt.state:
                _compare_state(topt.state[t], gopt.state[g], exact)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adadelta", "Adagrad"])
def test_param_without_grad_is_skipped(name: str, fused: bool) -> None:
    kwargs = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {"lr": 0.1}
    run_both(name, kwargs, steps=3, skip_grad=1, fused=fused)


def _lbfgs_closure(T: Any, params: list, cs: list, ds: list, opt: Any) -> Any:
    def closure() -> Any:
        opt.zero_grad()
        # a quartic term makes the line search work (a pure quadratic is solved in one step)
        loss = _loss(T, params, cs, ds)
        for p in params:
            loss = loss + (p * p * p * p).sum() * 0.25
        loss.backward()
        return loss

    return closure


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search_fn: str | None) -> None:
    inits, cs, ds = _arrays(np.float64)
    tp, gp = _params(torch, inits), _params(gradviz, inits)
    kw = {"lr": 0.5, "max_iter": 8, "history_size": 4, "line_search_fn": line_search_fn}
    topt, gopt = torch.optim.LBFGS(tp, **kw), gradviz.optim.LBFGS(gp, **kw)
    for _ in range(3):
        tl = topt.step(_lbfgs_closure(torch, tp, cs, ds, topt))
        gl = gopt.step(_lbfgs_closure(gradviz, gp, cs, ds, gopt))
        assert float(gl.detach()) == pytest.approx(float(tl.detach()), rel=1e-9)
        for t, g in zip(tp, gp):
            np.testing.assert_allclose(_np(g), _np(t), rtol=1e-8, atol=1e-10)
    ts, gs = topt.state[tp[0]], gopt.state[gp[0]]
    assert (gs["func_evals"], gs["n_iter"]) == (ts["func_evals"], ts["n_iter"])


def test_lbfgs_float32_matches_torch() -> None:
    inits, cs, ds = _arrays(np.float32)
    tp, gp = _params(torch, inits), _params(gradviz, inits)
    kw = {"lr": 1, "max_iter": 5, "line_search_fn": "strong_wolfe"}
    topt, gopt = torch.optim.LBFGS(tp, **kw), gradviz.optim.LBFGS(gp, **kw)
    topt.step(_lbfgs_closure(torch, tp, cs, ds, topt))
    gopt.step(_lbfgs_closure(gradviz, gp, cs, ds, gopt))
    for t, g in zip(tp, gp):
        np.testing.assert_allclose(_np(g), _np(t), rtol=1e-4, atol=1e-5)


def test_closure_loss_is_returned_and_grad_enabled() -> None:
    p = gradviz.tensor([1.0, 2.0], requires_grad=True)
    opt = gradviz.optim.SGD([p], lr=0.1)

    def closure() -> Any:
        assert gradviz.is_grad_enabled()
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(_np(p), [0.8, 1.6], rtol=1e-6)
    assert not p.requires_grad or p.grad_fn is None  # the update did not record history
