"""The forward side's reports to the probe: ops, in-place writes, grad-mode blocks, ``.grad``
resets, detaches and backward calls, each with the user's ``file:line``. ``gradviz why`` reasons
over them (why a leaf's .grad is None, where a NaN came from, what an error's cause was).

This module imports nothing of the engine: grad_mode and tensor import it, and the engine
module sets ``engine`` when it makes the default engine. Each report costs one check when
nothing records (``engine.probe is None``).
"""

from __future__ import annotations

import sys
from typing import Any

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


def version_bump(t: Any, op: str | None) -> None:
    """``t`` was just written in place by ``op`` (None: the gradviz function the user called,
    e.g. ``add_``), its version counter already up."""
    p = probe()
    if p is not None:
        where, called = _user_call()
        p.version_bump(t, op or called, where)


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


def _user_call() -> tuple[str | None, str]:
    """(the user's file:line, the gradviz function that line called: the outermost one named as
    an in-place op (``add_``), else the outermost that is not a generic wrapper, such as ``step``)."""
    f = sys._getframe(2)
    names = []
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            break
        names.append(code.co_name)
        f = f.f_back
    where = f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None
    outer = names[::-1]
    called = next((n for n in outer if n.endswith("_") and not n.startswith("_")), None)
    if called is None:
        called = next((n for n in outer if n not in _GENERIC and not n.startswith("_")), names[0] if names else "")
    return where, called


# Names of gradviz's wrappers and decorators: never the op the user called.
_GENERIC = frozenset({"wrapper", "method", "inner", "decorate_context", "forward", "__call__", "_call_impl"})
