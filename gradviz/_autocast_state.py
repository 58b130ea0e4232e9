"""torch's process-wide autocast state functions (``torch.set_autocast_enabled``, the dtype per
device type, the nesting counter, the cast cache flag), over gradviz.amp's flags.

gradviz computes in the tensors' own dtypes (gradviz/amp): turning CPU autocast on raises the same
NotImplementedError as entering ``autocast("cpu")`` rather than being silently ignored. The other
device types keep their flag, as torch does on a machine without that hardware.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any

from gradviz import amp
from gradviz._dtype import dtype

__all__ = [
    "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache", "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "get_autocast_ipu_dtype", "get_autocast_xla_dtype", "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "is_autocast_ipu_enabled", "is_autocast_xla_enabled", "set_autocast_cache_enabled",
    "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype", "set_autocast_enabled",
    "set_autocast_gpu_dtype", "set_autocast_ipu_dtype", "set_autocast_ipu_enabled", "set_autocast_xla_dtype",
    "set_autocast_xla_enabled",
]

_nesting = [0]
_cache = [True]


def _check_device(device_type: str) -> str:
    if device_type.split(":")[0] not in amp._TYPES:
        raise RuntimeError(
            f"Expected one of {', '.join(amp._TYPES)} device type at start of device string: {device_type}"
        )
    return device_type.split(":")[0]


def _deprecated(old: str, new: str) -> None:
    # torch's C++ TORCH_WARN_DEPRECATION: a DeprecationWarning pointing at the caller
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def _autocast_dtype(device_type: str) -> dtype:
    return amp.get_autocast_dtype(_check_device(device_type))


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    if not isinstance(enabled, builtins.bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}")
    device_type = _check_device(device_type)
    if enabled and device_type == "cpu":
        raise NotImplementedError(
            f"gradviz has no autocast: torch would run matmuls and convolutions on cpu in "
            f"{_autocast_dtype('cpu')}; gradviz computes in the tensors' own dtypes. Leave it disabled."
        )
    amp._enabled[device_type] = enabled


def set_autocast_dtype(device_type: str, dtype: dtype) -> None:
    amp._dtypes[_check_device(device_type)] = dtype


def _getter(device: str, old: str) -> Any:
    def get() -> dtype:
        _deprecated(f"{old}()", f"get_autocast_dtype('{device}')")
        return _autocast_dtype(device)

    get.__name__ = get.__qualname__ = old
    return get


def _setter(device: str, old: str) -> Any:
    def set_(dtype: dtype) -> None:
        _deprecated(f"{old}(dtype)", f"set_autocast_dtype('{device}', dtype)")
        set_autocast_dtype(device, dtype)

    set_.__name__ = set_.__qualname__ = old
    return set_


def _is_enabled(device: str, old: str) -> Any:
    def is_enabled() -> bool:
        _deprecated(f"{old}()", f"is_autocast_enabled('{device}')")
        return amp.is_autocast_enabled(device)

    is_enabled.__name__ = is_enabled.__qualname__ = old
    return is_enabled


def _set_enabled(device: str, old: str) -> Any:
    def set_enabled(enabled: bool) -> None:
        _deprecated(f"{old}(enabled)", f"set_autocast_enabled('{device}', enabled)")
        set_autocast_enabled(device, enabled)

    set_enabled.__name__ = set_enabled.__qualname__ = old
    return set_enabled


get_autocast_cpu_dtype = _getter("cpu", "get_autocast_cpu_dtype")
get_autocast_gpu_dtype = _getter("cuda", "get_autocast_gpu_dtype")
get_autocast_ipu_dtype = _getter("ipu", "get_autocast_ipu_dtype")
get_autocast_xla_dtype = _getter("xla", "get_autocast_xla_dtype")
set_autocast_cpu_dtype = _setter("cpu", "set_autocast_cpu_dtype")
set_autocast_gpu_dtype = _setter("cuda", "set_autocast_gpu_dtype")
set_autocast_ipu_dtype = _setter("ipu", "set_autocast_ipu_dtype")
set_autocast_xla_dtype = _setter("xla", "set_autocast_xla_dtype")
is_autocast_cpu_enabled = _is_enabled("cpu", "is_autocast_cpu_enabled")
is_autocast_ipu_enabled = _is_enabled("ipu", "is_autocast_ipu_enabled")
is_autocast_xla_enabled = _is_enabled("xla", "is_autocast_xla_enabled")
set_autocast_cpu_enabled = _set_enabled("cpu", "set_autocast_cpu_enabled")
set_autocast_ipu_enabled = _set_enabled("ipu", "set_autocast_ipu_enabled")
set_autocast_xla_enabled = _set_enabled("xla", "set_autocast_xla_enabled")


def autocast_increment_nesting() -> int:
    _nesting[0] += 1
    return _nesting[0]


def autocast_decrement_nesting() -> int:
    _nesting[0] -= 1
    return _nesting[0]


def is_autocast_cache_enabled() -> bool:
    return _cache[0]


def set_autocast_cache_enabled(enabled: bool) -> None:
    _cache[0] = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing is cached: gradviz never casts weights under autocast."""
