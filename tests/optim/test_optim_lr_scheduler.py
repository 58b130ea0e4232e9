"""torch.optim.lr_scheduler under torch 2.13 and gradviz: the same learning rates (exactly: both
are Python float arithmetic in the same order), momenta, state dicts, warnings and errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz


def _opt(T: Any, name: str = "SGD", **kw: Any) -> Any:
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0], requires_grad=True)
    kw = kw or {"lr": 0.1, "momentum": 0.9}
    return getattr(T.optim, name)([{"params": [a]}, {"params": [b], "lr": 0.05}], **kw)


SCHEDULERS: dict[str, Callable[[Any, Any], Any]] = {
    "StepLR": lambda T, o: T.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda T, o: T.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda T, o: T.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda T, o: T.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
    "LambdaLR": lambda T, o: T.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda e: 0.95**e),
    "LambdaLR-list": lambda T, o: T.optim.lr_scheduler.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9**e]),
    "MultiplicativeLR": lambda T, o: T.optim.lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda e: 0.9),
    "ConstantLR": lambda T, o: T.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=4),
    "LinearLR": lambda T, o: T.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=6),
    "LinearLR-down": lambda T, o: T.optim.lr_scheduler.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                                                 total_iters=4),
    "SequentialLR": lambda T, o: T.optim.lr_scheduler.SequentialLR(
        o, [T.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
            T.optim.lr_scheduler.ExponentialLR(o, gamma=0.8)], milestones=[4]),
    "SequentialLR-3": lambda T, o: T.optim.lr_scheduler.SequentialLR(
        o, [T.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
            T.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4),
            T.optim.lr_scheduler.StepLR(o, step_size=2)], milestones=[3, 8]),
    "PolynomialLR": lambda T, o: T.optim.lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0),
    "CosineAnnealingWarmRestarts": lambda T, o: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                                                eta_min=0.01),
    "ChainedScheduler": lambda T, o: T.optim.lr_scheduler.ChainedScheduler(
        [T.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3), T.optim.lr_scheduler.ExponentialLR(o, 0.9)]),
    "OneCycleLR": lambda T, o: T.optim.lr_scheduler.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=16),
    "OneCycleLR-linear-3phase": lambda T, o: T.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, epochs=2, steps_per_epoch=8, anneal_strategy="linear", three_phase=True),
}


def _run(T: Any, make: Callable, steps: int, opt_name: str = "SGD", **kw: Any) -> tuple[list, Any]:
    opt = _opt(T, opt_name, **kw)
    sched = make(T, opt)
    seen = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups], [g.get("momentum") for g in opt.param_groups],
             [g.get("betas") for g in opt.param_groups])]
    for _ in range(steps):
        opt.step()
        sched.step()
        seen.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups],
                     [g.get("momentum") for g in opt.param_groups], [g.get("betas") for g in opt.param_groups]))
    return seen, sched


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_learning_rates_match_torch(name: str) -> None:
    steps = 15 if name.startswith("OneCycle") else 14
    want, _ = _run(torch, SCHEDULERS[name], steps)
    got, _ = _run(gradviz, SCHEDULERS[name], steps)
    assert got == want


def test_one_cycle_cycles_adam_betas() -> None:
    make = lambda T, o: T.optim.lr_scheduler.OneCycleLR(o, max_lr=0.01, total_steps=10)  # noqa: E731
    want, _ = _run(torch, make, 9, "Adam", lr=0.001)
    got, _ = _run(gradviz, make, 9, "Adam", lr=0.001)
    assert got == want


def test_one_cycle_past_total_steps_raises() -> None:
    for T in (torch, gradviz):
        with pytest.raises(ValueError, match="Tried to step 5 times. The specified number of total steps is 4"):
            _run(T, lambda T, o: T.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=4), 5)


@pytest.mark.parametrize("kw", [
    {}, {"mode": "max", "factor": 0.5, "patience": 1}, {"threshold_mode": "abs", "threshold": 0.1, "cooldown": 2,
                                                        "patience": 0, "min_lr": [0.01, 0.02]},
])
def test_reduce_lr_on_plateau(kw: dict) -> None:
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.7]
    out = {}
    for T in (torch, gradviz):
        opt = _opt(T)
        sched = T.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        seen = []
        for m in metrics:
            opt.step()
            sched.step(m)
            seen.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter, sched.best))
        out[T.__name__] = (seen, sorted(sched.state_dict()))
    assert out["torch"] == out["gradviz"]


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LambdaLR", "SequentialLR", "OneCycleLR",
                                  "CosineAnnealingWarmRestarts", "ChainedScheduler"])
def test_state_dict_round_trip(name: str) -> None:
    for T in (torch, gradviz):
        _, sched = _run(T, SCHEDULERS[name], 5)
        sd = sched.state_dict()
        opt2 = _opt(T)
        sched2 = SCHEDULERS[name](T, opt2)
        sched2.load_state_dict(sd)
        for g, g2 in zip(sched.optimizer.param_groups, opt2.param_groups):
            g2["lr"] = g["lr"]
        for _ in range(4):
            sched.optimizer.step()
            sched.step()
            opt2.step()
            sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
    keys = {T.__name__: sorted(_run(T, SCHEDULERS[name], 2)[1].state_dict()) for T in (torch, gradviz)}
    assert keys["gradviz"] == keys["torch"]


def test_closed_form_with_epoch_argument() -> None:
    out = {}
    for T in (torch, gradviz):
        opt = _opt(T)
        sched = T.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            opt.step()
            sched.step(5)
        out[T.__name__] = (sched.get_last_lr(), [str(x.message)[:60] for x in w])
    assert out["torch"] == out["gradviz"]


def _warnings_of(T: Any, fn: Callable[[Any], Any]) -> list[str]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(T)
    return [str(x.message) for x in w if issubclass(x.category, UserWarning)]


def test_scheduler_before_optimizer_warns() -> None:
    def prog(T: Any) -> None:
        opt = _opt(T)
        sched = T.optim.lr_scheduler.StepLR(opt, 2)
        sched.step()

    assert _warnings_of(gradviz, prog) == _warnings_of(torch, prog)
    assert len(_warnings_of(torch, prog)) == 1


def test_get_lr_outside_step_warns() -> None:
    def prog(T: Any) -> None:
        opt = _opt(T)
        T.optim.lr_scheduler.ExponentialLR(opt, 0.5).get_lr()

    assert _warnings_of(gradviz, prog) == _warnings_of(torch, prog)


ERRORS = {
    "not an optimizer": lambda T: T.optim.lr_scheduler.StepLR(object(), 2),
    "resume without initial_lr": lambda T: T.optim.lr_scheduler.StepLR(_opt(T), 2, last_epoch=3),
    "lambda count": lambda T: T.optim.lr_scheduler.LambdaLR(_opt(T), [lambda e: 1.0]),
    "multiplicative not callable": lambda T: T.optim.lr_scheduler.MultiplicativeLR(_opt(T), [1.0, 2.0]),
    "constant factor": lambda T: T.optim.lr_scheduler.ConstantLR(_opt(T), factor=2.0),
    "linear start": lambda T: T.optim.lr_scheduler.LinearLR(_opt(T), start_factor=0.0),
    "linear end": lambda T: T.optim.lr_scheduler.LinearLR(_opt(T), end_factor=1.5),
    "sequential empty": lambda T: T.optim.lr_scheduler.SequentialLR(_opt(T), [], []),
    "sequential milestones": lambda T: _seq(T, milestones=[1, 2]),
    "sequential plateau": lambda T: _seq(T, plateau=True),
    "one cycle no steps": lambda T: T.optim.lr_scheduler.OneCycleLR(_opt(T), max_lr=0.1),
    "one cycle total": lambda T: T.optim.lr_scheduler.OneCycleLR(_opt(T), max_lr=0.1, total_steps=0),
    "one cycle pct": lambda T: T.optim.lr_scheduler.OneCycleLR(_opt(T), max_lr=0.1, total_steps=5, pct_start=2.0),
    "one cycle anneal": lambda T: T.optim.lr_scheduler.OneCycleLR(_opt(T), 0.1, 5, anneal_strategy="exp"),
    "one cycle max_lr list": lambda T: T.optim.lr_scheduler.OneCycleLR(_opt(T), [0.1], total_steps=5),
    "one cycle no momentum": lambda T: T.optim.lr_scheduler.OneCycleLR(_opt(T, "Adagrad", lr=0.1), 0.1, 5),
    "plateau factor": lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(_opt(T), factor=1.0),
    "plateau mode": lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(_opt(T), mode="avg"),
    "plateau threshold mode": lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(_opt(T), threshold_mode="x"),
    "plateau min_lrs": lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(_opt(T), min_lr=[0.1]),
    "warm restarts T_0": lambda T: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(T), T_0=0),
    "warm restarts T_mult": lambda T: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(T), T_0=2, T_mult=0),
    "chained empty": lambda T: T.optim.lr_scheduler.ChainedScheduler([]),
}


def _seq(T: Any, milestones: list | None = None, plateau: bool = False) -> Any:
    opt = _opt(T)
    first = T.optim.lr_scheduler.ReduceLROnPlateau(opt) if plateau else T.optim.lr_scheduler.StepLR(opt, 2)
    return T.optim.lr_scheduler.SequentialLR(opt, [first, T.optim.lr_scheduler.StepLR(opt, 3)],
                                             milestones=milestones or [2])


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case: str) -> None:
    with pytest.raises(Exception) as want:  # noqa: PT011 - compared below
        ERRORS[case](torch)
    with pytest.raises(Exception) as got:  # noqa: PT011
        ERRORS[case](gradviz)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))
