"""The forward side's reports to the probe: ops, in-place writes, grad-mode blocks, ``.grad``
resets, detaches and backward calls, each with the user's ``file:line``. ``gradviz why`` reasons
over them (why a leaf's .grad is None, where a NaN came from, what an error's cause was).

This module imports nothing of the engine: grad_mode and tensor import it, and the engine
module sets ``engine`` when it makes the default engine. Each report costs one check when
nothing records (``engine.probe is None``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from gradviz._code_positions import columns as _columns

_PKG_DIR = __file__.rsplit("/autograd/", 1)[0]



class _NoEngine:
    probe = None


# The default Engine (gradviz.autograd.engine sets it as it makes it): its ``probe`` records.
# A stand-in until then, so that ``engine.probe`` is the one check everywhere.
engine: Any = _NoEngine()


def probe() -> Any:
    """The recording's probe, or None when nothing records."""
    return engine.probe


def source() -> str | None:
    """file:line of the innermost frame outside the gradviz package: the user's call."""
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            return f"{code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return None


class _Called(threading.local):
    op: str | None = None  # the in-place op the user called (inplace_call), while its writes run


_called = _Called()


def version_bump(t: Any, op: str | None) -> None:
    """``t`` was just written in place by ``op`` (torch's name, e.g. ``add_``; None: the gradviz
    function the user called), its version counter already up. Inside an ``inplace_call`` the
    call reports its own writes, once."""
    p = probe()
    if p is not None and _called.op is None:
        where, cols, called = _user_call()
        p.version_bump(t, op or called, where, cols)


def inplace_call(op: str, t: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``: the in-place op the user called by the name ``op``, writing ``t``,
    made of other in-place writes (an alias: ``clip_`` runs ``clamp_``; ``a[k] = v`` runs
    ``copy_``; nn.init's fills). While it records, its writes report nothing themselves and the
    call reports one version bump of ``t`` named ``op``, when it changed t's version: one step,
    the one the user's line took, as torch names it."""
    if engine.probe is None or _called.op is not None:
        return fn(*args, **kwargs)
    before = t._version_counter[0]
    _called.op = op
    try:
        return fn(*args, **kwargs)
    finally:
        _called.op = None
        p = engine.probe
        if p is not None and t._version_counter[0] != before:
            where, cols, _ = _user_call()
            p.version_bump(t, op, where, cols)


def grad_mode(mode: str, enter: bool, enabled: bool) -> None:
    """A grad-mode block was entered or left; ``enabled`` is the thread's grad mode now."""
    p = probe()
    if p is not None:
        p.grad_mode(mode, enter, enabled, source())


def grad_reset(t: Any, how: str) -> None:
    """``t.grad`` was set back ("none": to None, "zero": zeroed)."""
    p = probe()
    if p is not None:
        p.grad_reset(t, how, source())


def non_leaf_grad_read(t: Any) -> None:
    """The program read ``t.grad`` of a non-leaf that does not retain its gradient: None."""
    p = probe()
    if p is not None:
        p.non_leaf_grad_read(t, source())


def detach(op: str, t: Any, out: Any) -> None:
    """``op`` took ``t``'s value out of autograd (``out``: the new tensor, or None)."""
    p = probe()
    if p is not None and (t._requires_grad or t._grad_fn is not None or t._base is not None and t.requires_grad):
        p.detach(op, t, out, source())


def backward_call(api: str, tensors: Any, inputs: Any, retain_graph: bool) -> None:
    """The user called backward()/grad() on ``tensors`` (``inputs``: inputs=, or empty)."""
    p = probe()
    if p is not None:
        p.backward_call(api, tuple(tensors), tuple(inputs or ()), bool(retain_graph), source())


def _user_call() -> tuple[str | None, tuple[int, int] | None, str]:
    """(the user's file:line, the call's columns on it, the gradviz function that line called:
    the outermost one named as an in-place op (``add_``), else the outermost that is not a
    generic wrapper, such as ``step``)."""
    f = sys._getframe(2)
    names = []
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            break
        names.append(code.co_name)
        f = f.f_back
    if f is None:
        where, cols = None, None
    else:
        where, cols = f"{f.f_code.co_filename}:{f.f_lineno}", _columns(f.f_code, f.f_lasti)
    outer = names[::-1]
    called = next((n for n in outer if n.endswith("_") and not n.startswith("_")), None)
    if called is None:
        called = next((n for n in outer if n not in _GENERIC and not n.startswith("_")), names[0] if names else "")
    return where, cols, called


# Names of gradviz's wrappers and decorators: never the op the user called.
_GENERIC = frozenset({"wrapper", "method", "inner", "decorate_context", "forward", "__call__", "_call_impl"})
