"""torch's process-wide settings that scripts set and read: thread counts, deterministic
algorithms and their debug mode, float32 matmul precision, warn-always, flush-denormal. The values
are kept and answered as torch answers them; gradviz's kernels are numpy's and deterministic, and
compute float32 products in float32 whatever the precision says."""

from __future__ import annotations

import os
from typing import Any

from gradviz import _dtype

__all__ = [
    "are_deterministic_algorithms_enabled", "can_cast", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "get_num_interop_threads", "get_num_threads", "init_num_threads",
    "is_deterministic_algorithms_warn_only_enabled", "is_storage", "is_warn_always_enabled",
    "set_deterministic_debug_mode", "set_float32_matmul_precision", "set_flush_denormal",
    "set_num_interop_threads", "set_num_threads", "set_warn_always", "typename", "use_deterministic_algorithms",
]

# the settings, as torch's globals (one process-wide value each)
_threads = [max(1, (os.cpu_count() or 2) // 2)]  # torch's default: one per physical core
_interop_threads = [_threads[0]]
_deterministic = {"mode": False, "warn_only": False}
_matmul_precision = ["highest"]
_warn_always = [False]
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def get_num_threads() -> int:
    return _threads[0]


def set_num_threads(n: int) -> None:
    if n <= 0:
        raise RuntimeError("Number of threads must be positive")
    _threads[0] = int(n)


def get_num_interop_threads() -> int:
    return _interop_threads[0]


def set_num_interop_threads(n: int) -> None:
    if n <= 0:
        raise RuntimeError("Number of threads must be positive")
    _interop_threads[0] = int(n)


def init_num_threads() -> None:
    return None


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    _deterministic["mode"], _deterministic["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}; expected one of highest, high, medium")
    _matmul_precision[0] = precision


def set_warn_always(b: bool) -> None:
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always[0]


def set_flush_denormal(mode: bool) -> bool:
    """Whether the CPU supports flushing denormals (x86 with SSE3 does); numpy does not flush."""
    return True


def typename(obj: Any) -> str:
    """torch.typename: 'torch.FloatTensor' for a tensor, the class's name otherwise."""
    type_method = getattr(obj, "type", None)
    if callable(type_method) and hasattr(obj, "_data"):
        return type_method()
    module = getattr(type(obj), "__module__", "") or ""
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__", "") else f"{module}.{name}"


def is_storage(obj: Any) -> bool:
    return False  # gradviz has no storages


def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """torch's canCast: no float to integral, no (non-bool) to bool."""
    if from_.is_floating_point and not to.is_floating_point:
        return False
    return not (from_.name != "bool" and to.name == "bool")
