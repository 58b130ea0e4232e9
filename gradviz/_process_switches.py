"""torch's remaining top-level switches and predicates: ``set_anomaly_enabled`` (anomaly mode as a
plain setter), the deprecated ``set_default_tensor_type`` (the default dtype by legacy class), and
``is_distributed``."""

from __future__ import annotations

import warnings
from typing import Any

from gradviz import _dtype
from gradviz.autograd.grad_mode import anomaly
from gradviz.ops import construction
from gradviz.tensor import Tensor

__all__ = ["cudnn_is_acceptable", "is_distributed", "is_vulkan_available", "set_anomaly_enabled",
           "set_default_tensor_type"]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    anomaly.enabled, anomaly.check_nan = bool(enabled), bool(check_nan)


_warned: list[bool] = []


def set_default_tensor_type(t: Any) -> None:
    """torch.FloatTensor / torch.DoubleTensor (or their names) set the default dtype."""
    # torch warns once per process (TORCH_WARN_ONCE)
    if not _warned:
        _warned.append(True)
        warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                      "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                      stacklevel=2)
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if module == "torch.cuda":
            raise TypeError(f"type {t} not available. Torch not compiled with CUDA enabled.")
        if module != "torch":
            raise ModuleNotFoundError(f"No module named '{module or t}'")
        if not hasattr(construction, name):
            raise AttributeError(f"module 'torch' has no attribute '{name}'")
        t = getattr(construction, name)
    if not isinstance(t, construction._LegacyType):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(t.dtype)


def is_distributed(input: Tensor) -> bool:  # noqa: A002 - torch's parameter name
    """No gradviz tensor is distributed (torch's CPU answer)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return False


def is_vulkan_available() -> bool:
    return False


def cudnn_is_acceptable(input: Tensor) -> bool:  # noqa: A002
    """Whether cuDNN could run an op on this tensor: never, without CUDA."""
    if not isinstance(input, Tensor):
        raise TypeError(f"cudnn_is_acceptable(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False
