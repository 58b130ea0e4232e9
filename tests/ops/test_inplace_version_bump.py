"""Every in-place write is a step of the trace: each in-place name gradviz has (Tensor methods,
torch functions, nn.functional's, nn.init's fills, ``a[k] = v``), found in its namespace, emits
exactly one ``version_bump`` named as torch names the call, with the user's line and columns;
a name that writes nothing (``requires_grad_``) emits none. The slow test records the same calls
on real torch: both engines say the same."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

import gradviz


def _inplace_names(T: Any) -> list[tuple[str, str]]:
    """(namespace, name) of each public name ending in ``_`` of ``T`` (gradviz or torch)."""
    out = [("Tensor", n) for n in dir(T.Tensor) if n.endswith("_") and not n.startswith("_")]
    out += [("torch", n) for n in dir(T) if n.endswith("_") and not n.startswith("_") and callable(getattr(T, n))]
    out += [("functional", n) for n in dir(T.nn.functional) if n.endswith("_") and not n.startswith("_")]
    out += [("init", n) for n in dir(T.nn.init) if n.endswith("_") and not n.startswith("_")]
    return out


def _values(T: Any) -> Any:
    return T.tensor([[0.5, 0.25, 0.75], [0.3, 0.6, 0.9]])


def _other(T: Any) -> Any:
    return T.tensor([[0.2, 0.4, 0.1], [0.7, 0.8, 0.5]])


# The arguments tried after the tensor written, first that runs wins (a tensor, a number, dims)
_TRIES: list[Callable[[Any], tuple]] = [
    lambda T: (), lambda T: (_other(T),), lambda T: (0.5,), lambda T: (_other(T), 0.5), lambda T: (0,),
    lambda T: (0, 1),
]
# Names whose arguments no try above makes: index and mask arguments
_SPECIAL: dict[str, Callable[[Any], tuple]] = {
    "index_add_": lambda T: (0, T.tensor([1, 0]), _other(T)),
    "scatter_": lambda T: (0, T.tensor([[1, 0, 1]]), _other(T)[:1]),
    "scatter_add_": lambda T: (0, T.tensor([[1, 0, 1]]), _other(T)[:1]),
    "masked_fill_": lambda T: (T.tensor([[True, False, True], [False, False, True]]), 0.0),
}
# a[k] = v: basic, advanced and whole-tensor keys (each a different path inside)
_SETITEM = {
    "[0] = 1.0": lambda T: (0, 1.0), "[1, :2] = tensor": lambda T: ((1, slice(None, 2)), T.ones(2)),
    "[index] = 0.5": lambda T: (T.tensor([1]), 0.5), "[...] = 2.0": lambda T: (Ellipsis, 2.0),
}


def _call(T: Any, space: str, name: str, x: Any, args: tuple) -> Any:
    fn = getattr(x, name) if space == "Tensor" else getattr(
        {"torch": T, "functional": T.nn.functional, "init": T.nn.init}[space], name)
    return fn(x, *args) if space != "Tensor" else fn(*args)  # CALL


_CALL_LINE = _call.__code__.co_firstlineno + 3


def _args_for(T: Any, space: str, name: str) -> tuple | None:
    """The first arguments ``name`` runs with on a fresh tensor (None: none of them)."""
    for make in [_SPECIAL[name]] if name in _SPECIAL else _TRIES:
        try:
            args = make(T)
            _call(T, space, name, _values(T), args)
        except Exception:  # noqa: BLE001 - the wrong arguments for this name: the next try
            continue
        return args
    return None


def _bumps(engine: str, T: Any, run: Callable[[Any], Any]) -> tuple[int, list[Any]]:
    """(how far a fresh tensor's version moved, the version_bump events) when ``run(x)`` is
    recorded on ``engine``."""
    x = _values(T)
    with gradviz.record(engine=engine) as rec:
        v = x._version
        run(x)
        moved = x._version - v
    return moved, [e for e in rec.trace.events if e.kind == "version_bump"]


def _check(engine: str, T: Any, space: str, name: str) -> list[Any]:
    args = _args_for(T, space, name)
    if args is None:
        pytest.skip(f"{space}.{name} needs special inputs none of the tries make")
    moved, bumps = _bumps(engine, T, lambda x: _call(T, space, name, x, args))
    if moved == 0:  # writes nothing (requires_grad_, detach_): no step
        assert bumps == [], (name, bumps)
        return bumps
    assert [b.op for b in bumps] == [name], (name, bumps)
    assert bumps[0].source == f"{__file__}:{_CALL_LINE}", bumps[0]
    line = open(__file__).read().splitlines()[_CALL_LINE - 1]
    # the call's own columns (the inner call of ``return fn(...) if ... else fn(...)``)
    assert bumps[0].columns is not None and line[bumps[0].columns[0]:].startswith("fn("), bumps[0]
    return bumps


@pytest.mark.parametrize(("space", "name"), _inplace_names(gradviz), ids=lambda v: v)
def test_each_inplace_name_is_one_step(space: str, name: str) -> None:
    _check("gradviz", gradviz, space, name)


@pytest.mark.parametrize("key", sorted(_SETITEM))
def test_setitem_is_one_step(key: str) -> None:
    k, v = _SETITEM[key](gradviz)
    line = sys._getframe().f_lineno + 1
    moved, bumps = _bumps("gradviz", gradviz, lambda x: x.__setitem__(k, v))
    assert moved >= 1 and [b.op for b in bumps] == ["__setitem__"], bumps
    assert bumps[0].source == f"{__file__}:{line}"


def test_a_write_under_grad_names_its_op_once() -> None:
    """Under grad mode, with a node made (and a view's base rebased), still one step."""
    w = gradviz.randn(2, 3, requires_grad=True)
    with gradviz.record(engine="gradviz") as rec:
        y = w * 1
        y[0].sin_()
        y.abs_().clip_(0, 1)
    ops = [(e.op, e.tensor) for e in rec.trace.events if e.kind == "version_bump"]
    assert [op for op, _ in ops] == ["sin_", "abs_", "clip_"], ops


@pytest.mark.parametrize("engine", ["gradviz", "torch"])
def test_python_callable_maps_move_no_version(engine: str) -> None:
    """torch's apply_/map_/map2_ write through the raw data: no version moves, no step."""
    T = gradviz if engine == "gradviz" else pytest.importorskip("torch")
    for run in (lambda x: x.apply_(lambda v: v * 2), lambda x: x.map_(_other(T), lambda a, b: a + b),
                lambda x: x.map2_(_other(T), _other(T), lambda a, b, c: a + b * c)):
        assert _bumps(engine, T, run) == (0, [])


def _module_init_bumps(engine: str, T: Any) -> list[tuple[str, str]]:
    with gradviz.record(engine=engine) as rec:
        T.nn.Sequential(T.nn.Linear(2, 3), T.nn.LayerNorm(3))  # INIT
    return [(e.op, e.source) for e in rec.trace.events if e.kind == "version_bump"]


_INIT_LINE = _module_init_bumps.__code__.co_firstlineno + 2
# a module's init fills its parameters through nn.init: each fill one step, on the line that made it
_INIT_STEPS = [(op, f"{__file__}:{_INIT_LINE}") for op in ("kaiming_uniform_", "uniform_", "ones_", "zeros_")]


def test_a_modules_init_fills_are_steps() -> None:
    assert _module_init_bumps("gradviz", gradviz) == _INIT_STEPS


# Tensor methods whose torch binding never calls __torch_function__: torch's recorder, which sees
# calls through a TorchFunctionMode, cannot see them (test_torch_hides_these_calls proves it)
_UNSEEN_BY_TORCH = {("Tensor", "set_")}


def test_torch_hides_these_calls() -> None:
    torch = pytest.importorskip("torch")
    from torch.overrides import TorchFunctionMode

    seen = []

    class Seen(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(getattr(func, "__name__", ""))
            return func(*args, **(kwargs or {}))

    for space, name in sorted(_UNSEEN_BY_TORCH):
        x = _values(torch)
        args = _args_for(torch, space, name)
        with Seen():
            _call(torch, space, name, x, args)
        assert name not in seen, (name, seen)


@pytest.mark.slow
def test_torch_names_the_same_steps() -> None:
    """The same calls recorded on real torch (its recorder's TorchFunctionMode) give the same
    bumps: each name both have, one step named alike (nn.init's fills included)."""
    torch = pytest.importorskip("torch")
    ours = set(_inplace_names(gradviz))
    checked = 0
    for space, name in _inplace_names(torch):
        if (space, name) not in ours or (space, name) in _UNSEEN_BY_TORCH or _args_for(gradviz, space, name) is None:
            continue
        try:
            _check("torch", torch, space, name)
        except pytest.skip.Exception:
            continue
        checked += 1
    assert checked > 100
    for key, make in _SETITEM.items():
        k, v = make(torch)
        _, bumps = _bumps("torch", torch, lambda x, k=k, v=v: x.__setitem__(k, v))
        assert [b.op for b in bumps] == ["__setitem__"], (key, bumps)
    assert _module_init_bumps("torch", torch) == _INIT_STEPS
