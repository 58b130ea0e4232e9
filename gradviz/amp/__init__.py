"""torch.amp for gradviz: autocast and GradScaler.

- ``enabled=False`` (and CUDA autocast or a CUDA GradScaler where no GPU is usable, which torch
  disables with a warning) changes nothing.
- CPU autocast, which in torch runs matmuls and convolutions in bfloat16, is not supported:
  entering it raises NotImplementedError, rather than silently computing in float32.
- An enabled GradScaler scales, unscales, skips steps with inf/NaN gradients and updates its
  scale as torch's does.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled"]

_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
          "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_enabled: dict[str, bool] = {}
_dtypes: dict[str, Any] = {}  # torch.set_autocast_dtype's choice per device type (gradviz/_autocast_state.py)


def is_autocast_available(device_type: str) -> bool:
    return device_type in ("cpu", "cuda")


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    if device_type.split(":")[0] not in _TYPES:
        raise RuntimeError(
            f"Expected one of {', '.join(_TYPES)} device type at start of device string: {device_type}"
        )
    return _enabled.get(device_type.split(":")[0], False)


def get_autocast_dtype(device_type: str) -> Any:
    from gradviz import _dtype

    if device_type in _dtypes:
        return _dtypes[device_type]
    name = "bfloat16" if device_type in ("cpu", "xla") else "float16"
    return getattr(_dtype, name, name)


class autocast:  # noqa: N801 - torch.amp.autocast
    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type.split(":")[0] not in _TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_TYPES)} device type at start of device string: {device_type}"
            )
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(device_type)
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda":
            from gradviz import cuda

            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                self._enabled = False
        self._prev = False

    def __enter__(self) -> autocast:
        if self._enabled:
            raise NotImplementedError(
                f"gradviz has no autocast: torch would run matmuls and convolutions on {self.device} in "
                f"{self.fast_dtype}; gradviz computes in the tensors' own dtypes. Use enabled=False."
            )
        self._prev = _enabled.get(self.device, False)
        _enabled[self.device] = False
        return self

    def __exit__(self, *exc: object) -> None:
        _enabled[self.device] = self._prev

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper


class GradScaler:
    """torch.amp.GradScaler: loss scaling with dynamic growth and back-off."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda":
            from gradviz import cuda

            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def scale(self, outputs: Any) -> Any:
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer: Any) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": False})

    def unscale_(self, optimizer: Any) -> None:
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        import numpy as np

        inv = np.float32(1.0 / self._scale)  # torch: the double reciprocal, as float
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad._data
                if not bool(np.isfinite(np.asarray(g)).all()):
                    found = True
                g[...] = g * inv.astype(g.dtype)
        st.update(unscaled=True, found_inf=found)

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if not st["unscaled"]:
            self.unscale_(optimizer)
        if st["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        else:
            found = any(st["found_inf"] for st in self._per_optimizer.values())
            if found:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    if math.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]
