"""torch's ``sym_*`` helpers as they behave outside torch.compile, on plain Python numbers and
tensors (gradviz has no symbolic shapes: every size is a concrete int)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from gradviz.ops.construction import tensor

__all__ = [
    "sym_constrain_range", "sym_constrain_range_for_size", "sym_float", "sym_fresh_size", "sym_int", "sym_ite",
    "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
]

# torch's own tuple, named in its assertion messages
_ALL = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


def sym_int(a: Any) -> int:
    return builtins.int(a)


def sym_float(a: Any) -> float:
    return builtins.float(a)


def _numbers(a: Any, b: Any) -> None:
    for x in (a, b):
        if not isinstance(x, _ALL):
            raise AssertionError(f"expected {_ALL}, got {type(x)}")


def sym_max(a: Any, b: Any) -> Any:
    """max that promotes to float when either side is a float (unlike builtins.max)."""
    _numbers(a, b)
    out = builtins.max(a, b)
    return builtins.float(out) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else out


def sym_min(a: Any, b: Any) -> Any:
    _numbers(a, b)
    out = builtins.min(a, b)
    return builtins.float(out) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else out


def sym_not(a: Any) -> bool:
    return not a


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sqrt(a: Any) -> float:
    return math.sqrt(a)


def sym_sum(*args: Any) -> Any:
    """Accepts sym_sum([a, b, c]) and sym_sum(a, b, c); builtins.sum of the terms."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    return builtins.sum(args)


def sym_fresh_size(expr: Any) -> Any:
    return tensor(expr).item()


def sym_constrain_range(size: Any, *, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """A hint to torch.compile about an unbacked size; eager mode has nothing to constrain."""
    return None


def sym_constrain_range_for_size(size: Any, *, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    return None
