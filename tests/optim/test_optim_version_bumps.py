"""The in-place writes of an optimizer's step, gradient clipping and out= calls, against torch's.

Each case records one small program twice, on real torch (``gradviz.trace(path, engine="torch")``)
and on gradviz, and compares the version_bump events: their op names, the versions they report and
which tensor each writes (tensors numbered in the order they are first written), so a write torch
makes on a fresh intermediate (Adam's ``denom.add_(eps)``) must be a write of a tensor of its own
here too. The optimizers are every one torch.optim has, each with a few of its options.
"""

from __future__ import annotations

import sys
import warnings

import fakecupy
import numpy as np
import pytest
import torch

import gradviz
from gradviz.optim import _ops
from gradviz.trace.file import read_events

# Options of each optimizer's step (torch's CPU default is the single-tensor loop, foreach=False).
_VARIANTS: dict[str, list[dict]] = {
    "SGD": [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
            {"momentum": 0.5, "dampening": 0.1, "maximize": True, "foreach": False},
            {"foreach": True}, {"foreach": True, "momentum": 0.9, "nesterov": True},
            {"foreach": True, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1, "maximize": True},
            {"foreach": True, "momentum": 0.9, "dampening": 0.2, "weight_decay": 0.1}],
    "Adam": [{}, {"amsgrad": True}, {"maximize": True, "weight_decay": 0.1},
             {"decoupled_weight_decay": True, "weight_decay": 0.1}, {"foreach": False},
             {"foreach": True}, {"foreach": True, "amsgrad": True, "maximize": True, "weight_decay": 0.1}],
    "AdamW": [{}, {"amsgrad": True, "maximize": True}, {"foreach": True, "amsgrad": True}],
    "Adamax": [{}, {"weight_decay": 0.1, "maximize": True}],
    "NAdam": [{}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "decoupled_weight_decay": True}, {"maximize": True}],
    "RAdam": [{}, {"weight_decay": 0.1, "decoupled_weight_decay": True}, {"maximize": True, "weight_decay": 0.1}],
    "Adagrad": [{}, {"lr_decay": 0.1, "weight_decay": 0.1}, {"maximize": True, "initial_accumulator_value": 0.1}],
    "RMSprop": [{}, {"centered": True}, {"momentum": 0.9, "weight_decay": 0.1},
                {"maximize": True, "centered": True, "momentum": 0.5, "foreach": False}],
    "Adadelta": [{}, {"weight_decay": 0.1, "maximize": True}],
    "Rprop": [{}, {"maximize": True, "foreach": False}],
    "ASGD": [{}, {"t0": 1}, {"weight_decay": 0.1, "maximize": True}],
    "LBFGS": [{"history_size": 2, "max_iter": 5}, {"line_search_fn": "strong_wolfe", "max_iter": 4},
              {"history_size": 2, "max_iter": 3, "unused": True}],
}

# torch's multi-tensor loops (foreach=True) write with _foreach_* ops, list by list; gradviz has
# SGD's and Adam's (AdamW's), and runs the single-tensor loop of the others whatever foreach says.
_FOREACH = "foreach=True: torch's multi-tensor step writes with _foreach_* ops; gradviz runs the single-tensor step"


def _optimizer_names() -> list[str]:
    classes = {n: getattr(torch.optim, n) for n in torch.optim.__all__ if n != "Optimizer"}
    return sorted(n for n, c in classes.items() if isinstance(c, type) and issubclass(c, torch.optim.Optimizer))


def _cases() -> list:
    cases = []
    for name in _optimizer_names():
        if not hasattr(gradviz.optim, name):
            cases.append(pytest.param(name, {}, id=name, marks=pytest.mark.xfail(
                raises=AttributeError, strict=True, reason=f"gradviz has no torch.optim.{name}")))
            continue
        for i, kw in enumerate(_VARIANTS[name]):
            cases.append(pytest.param(name, kw, id=f"{name}-{i}"))
    for name in _optimizer_names():
        if name not in ("SGD", "Adam", "AdamW", "LBFGS") and hasattr(gradviz.optim, name):
            cases.append(pytest.param(name, {"foreach": True}, id=f"{name}-foreach",
                                      marks=pytest.mark.xfail(strict=True, reason=_FOREACH)))
    return cases


def _bumps(path: str) -> list[tuple[str, int, int]]:
    """(op, version, the tensor's number in the order tensors are first written) of each bump."""
    events, _ = read_events(path)
    numbers: dict[int, int] = {}
    return [(e.op, e.version, numbers.setdefault(e.tensor, len(numbers)))
            for e in events if type(e).__name__ == "VersionBump"]


def _both(tmp_path, program) -> tuple[list, list]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gradviz.trace(tmp_path / "torch.json", engine="torch"):
            program(torch)
        with gradviz.trace(tmp_path / "gradviz.json"):
            program(gradviz)
    return _bumps(tmp_path / "torch.json"), _bumps(tmp_path / "gradviz.json")


def _model(T):
    T.manual_seed(0)
    return T.nn.Linear(3, 2), T.randn(4, 3)


@pytest.mark.parametrize(("name", "options"), _cases())
def test_optimizer_step_writes_as_torch(tmp_path, name, options):
    cls = getattr(gradviz.optim, name)  # AttributeError: an optimizer gradviz lacks
    assert cls is not None
    options = dict(options)
    unused = options.pop("unused", False)

    def program(T):
        m, x = _model(T)
        params = list(m.parameters()) + ([T.zeros(2, requires_grad=True)] if unused else [])
        opt = getattr(T.optim, name)(params, lr=0.01, **options)
        for _ in range(2):
            opt.zero_grad()
            m(x).pow(2).sum().backward()
            if name == "LBFGS":
                opt.step(lambda: m(x).pow(2).sum())
            else:
                opt.step()

    theirs, ours = _both(tmp_path, program)
    assert len(theirs) > 4  # the step's writes, not only the model's initialisation
    assert ours == theirs


@pytest.mark.parametrize("options", [{}, {"foreach": False}, {"foreach": True}, {"fused": True}])
def test_zero_grad_writes_as_torch(tmp_path, options):
    def program(T):
        m, x = _model(T)
        opt = T.optim.Adam(m.parameters(), **options)
        for _ in range(2):
            m(x).pow(2).sum().backward()
            opt.zero_grad(set_to_none=False)  # foreach/fused: torch._foreach_zero_, else zero_

    theirs, ours = _both(tmp_path, program)
    assert any(op.endswith("zero_") for op, _, _ in theirs)
    assert ours == theirs


def test_fresh_intermediates_make_nothing_when_nothing_records():
    assert _ops.on_fresh(gradviz.device("cpu"), gradviz.ones(2)._data, "add_") is None


@pytest.mark.parametrize(("fn", "options"), [
    ("clip_grad_norm_", {}), ("clip_grad_norm_", {"foreach": False}), ("clip_grad_norm_", {"foreach": True}),
    ("clip_grad_norm_", {"norm_type": float("inf")}),
    ("clip_grad_value_", {}), ("clip_grad_value_", {"foreach": False}), ("clip_grad_value_", {"foreach": True}),
])
def test_gradient_clipping_writes_as_torch(tmp_path, fn, options):
    def program(T):
        m, x = _model(T)
        for _ in range(2):
            m.zero_grad()
            m(x).pow(2).sum().backward()
            getattr(T.nn.utils, fn)(m.parameters(), 0.1, **options)

    theirs, ours = _both(tmp_path, program)
    assert any(op.endswith(("mul_", "clamp_", "clamp_min_")) for op, _, _ in theirs)
    assert ours == theirs


_OUT_PROGRAMS = {
    "elementwise": lambda T, a, b, o, e: (T.add(a, 1.0, out=o), T.sub(a[0], a[1], alpha=2, out=o[0]),
                                          T.mul(a, a, out=o), T.div(a, 2.0, out=o), T.maximum(a, o, out=o),
                                          T.minimum(o, a, out=o), T.clamp(a, -0.5, 0.5, out=o),
                                          T.where(a > 0, a, o, out=o), T.neg(a, out=o)),
    "unary": lambda T, a, b, o, e: (T.sqrt(a.abs(), out=o), T.exp(a, out=o), T.log(a.abs(), out=o),
                                    T.abs(a, out=o)),
    "resized": lambda T, a, b, o, e: (T.matmul(a, b, out=e), T.mm(a, b, out=e), T.cat([a, a], out=e),
                                      T.stack([a, a], out=e), T.sum(a, 0, out=e), T.mean(a, 1, out=e)),
}


@pytest.mark.parametrize("kind", sorted(_OUT_PROGRAMS))
def test_out_writes_as_torch(tmp_path, kind):
    def program(T):
        T.manual_seed(0)
        a, b = T.randn(2, 3), T.randn(3, 2)
        with T.no_grad():
            _OUT_PROGRAMS[kind](T, a, b, T.empty(2, 3), T.empty(0))

    theirs, ours = _both(tmp_path, program)
    assert len(theirs) >= 4
    assert ours == theirs


def test_out_keeps_torchs_rules():
    for T in (torch, gradviz):
        a = T.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^add\(\): functions with out=\.\.\. arguments don't support"):
            T.add(a, 1.0, out=T.empty(3))
        with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
            T.add(T.ones(3), 1.0, out=T.empty(3, dtype=T.long))
        o = T.ones(2, 2)
        with pytest.raises(RuntimeError, match="^unsupported operation: some elements of the input tensor"):
            T.add(o[0], 1, out=o)
        with pytest.warns(UserWarning, match=r"resized since it had shape \[2\], which does not match .* \[3\]"):
            T.add(T.ones(3), 1, out=T.empty(2))
        out = T.zeros(6)
        assert T.mul(T.ones(3, dtype=T.long), 2, out=out[:3]) is not None
        assert out.tolist() == [2.0, 2.0, 2.0, 0.0, 0.0, 0.0] and out._version == 1


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch):
    """cuda:0 under cupy's strict conversion rules (tests/fakecupy.py's stand-in)."""
    mod = fakecupy.install(device_count=1, strict_indices=True)
    monkeypatch.setitem(sys.modules, "cupy", mod)
    engine = gradviz.autograd.get_default_engine()
    try:
        yield mod
    finally:
        assert engine.shutdown(timeout=10)


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
@pytest.mark.parametrize(("name", "options"), [
    ("Adam", {"amsgrad": True, "foreach": False}), ("Adamax", {}), ("NAdam", {}), ("Adagrad", {}),
    ("RMSprop", {"centered": True, "momentum": 0.5}), ("Adadelta", {}), ("Rprop", {}),
    ("LBFGS", {"history_size": 2, "max_iter": 4}), ("Adam", {"foreach": True, "amsgrad": True, "maximize": True}),
    ("SGD", {"foreach": True, "momentum": 0.9, "nesterov": True, "maximize": True}),
])
def test_recorded_steps_on_cuda_equal_cpu(tmp_path, fake_cuda, name, options):
    """A step that reports its fresh intermediates keeps them on the parameters' device: the
    same writes and the same updates on cuda:0 as on cpu while recording."""
    runs = {}
    for dev in ("cpu", "cuda:0"):
        p = gradviz.tensor(np.array([[1.5, -0.5], [2.0, 0.25]], np.float32), device=dev, requires_grad=True)
        opt = getattr(gradviz.optim, name)([p], lr=0.01, **options)

        def closure(p=p, opt=opt):
            opt.zero_grad()
            loss = (p * p * p).sum()
            loss.backward()
            return loss

        with gradviz.trace(tmp_path / f"{dev}.json"):
            for _ in range(3):
                if name == "LBFGS":
                    opt.step(closure)
                else:
                    closure()
                    opt.step()
        runs[dev] = (_bumps(tmp_path / f"{dev}.json"), p.detach().cpu().numpy().tolist())
    assert runs["cuda:0"] == runs["cpu"]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_cuda_parameters_take_the_foreach_loop_by_default(tmp_path, fake_cuda, name):
    """foreach left None: torch's multi-tensor loop for cuda parameters, the single-tensor one on
    cpu (torch's _default_to_fused_or_foreach), with the same updates."""
    runs = {}
    for dev in ("cpu", "cuda:0"):
        p = gradviz.tensor(np.array([1.5, -0.5, 2.0], np.float32), device=dev, requires_grad=True)
        opt = getattr(gradviz.optim, name)([p], lr=0.01, **({"momentum": 0.9} if name == "SGD" else {}))
        with gradviz.trace(tmp_path / f"{dev}.json"):
            for _ in range(2):
                opt.zero_grad()
                (p * p * p).sum().backward()
                opt.step()
        runs[dev] = ({op for op, _, _ in _bumps(tmp_path / f"{dev}.json")}, p.detach().cpu().numpy().tolist())
    assert "_foreach_add_" in runs["cuda:0"][0] and not any(op.startswith("_foreach") for op in runs["cpu"][0])
    assert runs["cuda:0"][1] == runs["cpu"][1]
