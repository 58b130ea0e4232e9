"""torch.optim's Optimizer API under torch 2.13 and gradviz: errors (type and message), param
groups, zero_grad, state_dict round trips, hooks and a user subclass as torch's docs write one."""

from __future__ import annotations

import copy
import importlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _err(fn: Callable[[Any], Any]) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011 - the point is comparing them
        fn(torch)
    want = (type(info.value), str(info.value))
    with pytest.raises(Exception) as info:  # noqa: PT011
        fn(gradviz)
    # gradviz's engine names its own module in tensor type names (gradviz.FloatTensor)
    assert (type(info.value), str(info.value).replace("gradviz.", "torch.")) == want
    return want


def _leaf(T: Any, *vals: float) -> Any:
    return T.tensor(list(vals) or [1.0, 2.0], requires_grad=True)


ERRORS = {
    "empty list": lambda T: T.optim.SGD([], lr=0.1),
    "non-leaf": lambda T: T.optim.SGD([_leaf(T) * 2], lr=0.1),
    "a tensor, not a list": lambda T: T.optim.Adam(_leaf(T)),
    "not a tensor": lambda T: T.optim.SGD([1.0], lr=0.1),
    "a set": lambda T: T.optim.SGD([{"params": {_leaf(T)}}], lr=0.1),
    "sgd lr": lambda T: T.optim.SGD([_leaf(T)], lr=-1),
    "sgd momentum": lambda T: T.optim.SGD([_leaf(T)], lr=0.1, momentum=-0.5),
    "sgd weight decay": lambda T: T.optim.SGD([_leaf(T)], lr=0.1, weight_decay=-1),
    "sgd nesterov": lambda T: T.optim.SGD([_leaf(T)], lr=0.1, nesterov=True),
    "adam lr": lambda T: T.optim.Adam([_leaf(T)], lr=-0.5),
    "adam eps": lambda T: T.optim.Adam([_leaf(T)], eps=-1.0),
    "adam beta0": lambda T: T.optim.Adam([_leaf(T)], betas=(1.0, 0.9)),
    "adam beta1": lambda T: T.optim.AdamW([_leaf(T)], betas=(0.9, -0.1)),
    "adam betas types": lambda T: T.optim.Adam([_leaf(T)], betas=(0.9, 1)),
    "adam weight decay": lambda T: T.optim.Adam([_leaf(T)], weight_decay=-2.0),
    "adagrad lr_decay": lambda T: T.optim.Adagrad([_leaf(T)], lr_decay=-1.0),
    "adagrad init acc": lambda T: T.optim.Adagrad([_leaf(T)], initial_accumulator_value=-1.0),
    "rmsprop alpha": lambda T: T.optim.RMSprop([_leaf(T)], alpha=-1.0),
    "rmsprop momentum": lambda T: T.optim.RMSprop([_leaf(T)], momentum=-1.0),
    "adadelta rho": lambda T: T.optim.Adadelta([_leaf(T)], rho=1.5),
    "adamax beta": lambda T: T.optim.Adamax([_leaf(T)], betas=(0.9, 1.0)),
    "nadam momentum_decay": lambda T: T.optim.NAdam([_leaf(T)], momentum_decay=-1.0),
    "radam eps": lambda T: T.optim.RAdam([_leaf(T)], eps=-1e-3),
    "rprop etas": lambda T: T.optim.Rprop([_leaf(T)], etas=(1.2, 0.5)),
    "lbfgs groups": lambda T: T.optim.LBFGS([{"params": [_leaf(T)]}, {"params": [_leaf(T)]}]),
    "lbfgs line search": lambda T: _lbfgs_bad_line_search(T),
    "duplicate across groups": lambda T: _two_groups_same_param(T),
    "add_param_group not dict": lambda T: T.optim.SGD([_leaf(T)], lr=0.1).add_param_group([_leaf(T)]),
    "required lr": lambda T: _required(T),
    "load: group count": lambda T: T.optim.SGD([_leaf(T)], lr=0.1).load_state_dict(
        {"state": {}, "param_groups": [{"params": [0]}, {"params": [1]}]}),
    "load: group size": lambda T: T.optim.SGD([_leaf(T)], lr=0.1).load_state_dict(
        {"state": {}, "param_groups": [{"params": [0, 1]}]}),
    "names mixed": lambda T: T.optim.SGD([("a", _leaf(T)), _leaf(T)], lr=0.1),
    "base step": lambda T: T.optim.Optimizer([_leaf(T)], {}).step(),
}


def _lbfgs_bad_line_search(T: Any) -> None:
    p = _leaf(T)
    opt = T.optim.LBFGS([p], line_search_fn="armijo")

    def closure() -> Any:
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    opt.step(closure)


def _two_groups_same_param(T: Any) -> None:
    p = _leaf(T)
    T.optim.SGD([{"params": [p]}, {"params": [p], "lr": 0.2}], lr=0.1)


def _required(T: Any) -> None:
    class Opt(T.optim.Optimizer):
        def __init__(self, params: Any) -> None:
            from importlib import import_module

            required = import_module(T.__name__ + ".optim.optimizer").required
            super().__init__(params, {"lr": required})

    Opt([_leaf(T)])


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case: str) -> None:
    _err(ERRORS[case])


def test_duplicate_param_warns() -> None:
    for T in (torch, gradviz):
        p = _leaf(T)
        with pytest.warns(UserWarning, match="duplicate parameters"):
            T.optim.SGD([p, p], lr=0.1)


def _group_view(groups: list) -> list:
    return [{k: (len(v) if k == "params" else v) for k, v in g.items()} for g in groups]


def test_param_groups_defaults_and_repr() -> None:
    out = {}
    for T in (torch, gradviz):
        a, b = _leaf(T), _leaf(T, 3.0)
        opt = T.optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
        opt.add_param_group({"params": [_leaf(T, 4.0)], "weight_decay": 0.1})
        out[T.__name__] = (_group_view(opt.param_groups), repr(opt), opt.defaults)
    assert out["torch"] == out["gradviz"]


def test_named_params_groups() -> None:
    out = {}
    for T in (torch, gradviz):
        opt = T.optim.Adam([("w", _leaf(T)), ("b", _leaf(T, 1.0))], lr=0.1)
        out[T.__name__] = (opt.param_groups[0]["param_names"], opt.state_dict()["param_groups"])
    assert out["torch"] == out["gradviz"]


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none: bool) -> None:
    res = {}
    for T in (torch, gradviz):
        p = _leaf(T)
        opt = T.optim.SGD([p], lr=0.1)
        (p * p).sum().backward()
        g = p.grad
        opt.zero_grad(set_to_none=set_to_none)
        res[T.__name__] = (p.grad is None, None if p.grad is None else p.grad.tolist(), g.tolist())
    assert res["torch"] == res["gradviz"]


def _train(T: Any, opt_name: str, kwargs: dict, params: list, steps: int, opt: Any = None) -> Any:
    opt = opt or getattr(T.optim, opt_name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        sum(((p * p * p).sum() for p in params), T.tensor(0.0, dtype=params[0].dtype)).backward()
        opt.step()
    return opt


def _sd_view(sd: dict) -> Any:
    state = {k: {n: (np.asarray(v.tolist()) if hasattr(v, "tolist") else v) for n, v in s.items()}
             for k, s in sd["state"].items()}
    return state, sd["param_groups"]


@pytest.mark.parametrize(("name", "kwargs"), [
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.1, "amsgrad": True}), ("AdamW", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1}), ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}), ("Adadelta", {}),
])
def test_state_dict_round_trip(name: str, kwargs: dict) -> None:
    """state_dict matches torch's; loading it into a fresh optimizer continues exactly as the original."""
    views = {}
    for T in (torch, gradviz):
        # from float64 arrays: gradviz.tensor(list, dtype=float64) rounds through float32 (ops' bug, reported)
        params = [T.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True),
                  T.tensor(np.array([[0.3]]), requires_grad=True)]
        kw = dict(kwargs, foreach=False)
        opt = _train(T, name, kw, params, 3)
        sd = opt.state_dict()
        views[T.__name__] = _sd_view(sd)
        twin = [p.detach().clone().requires_grad_(True) for p in params]
        opt2 = getattr(T.optim, name)(twin, **kw)
        opt2.load_state_dict(copy.deepcopy(sd))
        assert _sd_view(opt2.state_dict())[1] == views[T.__name__][1]
        _train(T, name, kw, params, 2, opt)
        _train(T, name, kw, twin, 2, opt2)
        for p, q in zip(params, twin):
            assert p.tolist() == q.tolist()
    gs, gg = views["gradviz"]
    ts, tg = views["torch"]
    assert gg == tg
    assert gs.keys() == ts.keys()
    for k in ts:
        assert gs[k].keys() == ts[k].keys()
        for n in ts[k]:
            np.testing.assert_allclose(gs[k][n], ts[k][n], rtol=1e-13, err_msg=f"{k}.{n}")


def test_state_dict_shares_state_tensors() -> None:
    for T in (torch, gradviz):
        p = _leaf(T)
        opt = _train(T, "SGD", {"lr": 0.1, "momentum": 0.9}, [p], 1)
        assert opt.state_dict()["state"][0]["momentum_buffer"] is opt.state[p]["momentum_buffer"]


def test_step_hooks_order_and_removal() -> None:
    logs = {}
    for T in (torch, gradviz):
        log: list = []
        p = _leaf(T)
        opt = T.optim.SGD([p], lr=0.1)
        h1 = opt.register_step_pre_hook(lambda o, a, k, log=log: log.append(("pre", type(o).__name__)))
        opt.register_step_post_hook(lambda o, a, k, log=log: log.append(("post", len(a))))
        (p * p).sum().backward()
        opt.step()
        h1.remove()
        opt.step()
        logs[T.__name__] = log
    assert logs["torch"] == logs["gradviz"]


def test_user_subclass_as_torch_docs_write_it() -> None:
    """A hand-rolled optimizer with per-parameter state and a closure, as torch's docs show one."""

    def make(T: Any) -> type:
        class SignSGD(T.optim.Optimizer):
            def __init__(self, params: Any, lr: float = 0.01) -> None:
                if lr < 0:
                    raise ValueError(f"Invalid learning rate: {lr}")
                super().__init__(params, {"lr": lr})

            @T.no_grad()
            def step(self, closure: Callable | None = None) -> Any:
                loss = None
                if closure is not None:
                    with T.enable_grad():
                        loss = closure()
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        state = self.state[p]
                        state["count"] = state.get("count", 0) + 1
                        p.add_(p.grad.sign(), alpha=-group["lr"])
                return loss

        return SignSGD

    out = {}
    for T in (torch, gradviz):
        p = T.tensor([1.0, -2.0, 0.5], requires_grad=True)
        opt = make(T)([p], lr=0.25)
        seen = []
        opt.register_step_post_hook(lambda o, a, k: seen.append(1))  # noqa: B023
        for _ in range(3):
            def closure() -> Any:
                opt.zero_grad()  # noqa: B023
                loss = (p * p * p).sum()  # noqa: B023
                loss.backward()
                return loss

            loss = opt.step(closure)
        out[T.__name__] = (p.tolist(), loss.item(), opt.state[p]["count"], len(seen), p.grad_fn is None,
                           opt.state_dict()["param_groups"])
    assert out["torch"] == out["gradviz"]


def test_step_runs_without_recording_history() -> None:
    for T in (torch, gradviz):
        p = _leaf(T)
        opt = T.optim.Adam([p], lr=0.1)
        (p * p).sum().backward()
        opt.step()
        assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_update_bumps_version_like_torch() -> None:
    """A tensor saved for backward before step() and used after: both raise the same version error."""

    def prog(T: Any) -> None:
        p = _leaf(T)
        opt = T.optim.SGD([p], lr=0.1)
        y = (p * p).sum()
        (p * 3).sum().backward()
        opt.step()
        y.backward()

    msgs = []
    for T in (torch, gradviz):
        with warnings.catch_warnings(), pytest.raises(RuntimeError) as info:
            warnings.simplefilter("ignore")
            prog(T)
        # the version part; the anomaly hint after it is the engine's wording
        msgs.append(str(info.value).replace("gradviz.", "torch.").split(" Hint:")[0])
    assert msgs[0] == msgs[1]
    assert "is at version 1; expected version 0" in msgs[0]


def test_load_state_dict_casts_state_to_param_dtype() -> None:
    out = {}
    for T in (torch, gradviz):
        p = _leaf(T)
        opt = T.optim.Adam([p], lr=0.1)
        (p * p).sum().backward()
        opt.step()
        q = T.tensor(np.array([1.0, 2.0]), requires_grad=True)  # float64
        opt2 = T.optim.Adam([q], lr=0.1)
        opt2.load_state_dict(opt.state_dict())
        out[T.__name__] = {k: str(v.dtype).split(".")[-1] for k, v in opt2.state[q].items()}
    assert out["torch"] == out["gradviz"]


def test_global_step_hooks() -> None:
    logs = {}
    for T in (torch, gradviz):
        log: list = []
        mod = importlib.import_module(T.__name__ + ".optim.optimizer")
        pre = mod.register_optimizer_step_pre_hook(lambda o, a, k, log=log: log.append("gpre"))
        post = mod.register_optimizer_step_post_hook(lambda o, a, k, log=log: log.append("gpost"))
        try:
            p = _leaf(T)
            opt = T.optim.Adagrad([p])
            opt.register_step_pre_hook(lambda o, a, k, log=log: log.append("pre"))
            opt.register_step_post_hook(lambda o, a, k, log=log: log.append("post"))
            (p * p).sum().backward()
            opt.step()
        finally:
            pre.remove()
            post.remove()
        opt.step()
        logs[T.__name__] = log
    assert logs["torch"] == logs["gradviz"]
