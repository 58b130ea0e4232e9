"""torch.accelerator for gradviz: the current accelerator is CUDA where cupy finds a GPU, else
there is none, and the calls that need one raise torch's error."""

from __future__ import annotations

from typing import Any

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    from gradviz import cuda

    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> Any:
    if not is_available():
        return None
    from gradviz.device import device

    return device("cuda")


def device_count() -> int:
    from gradviz import cuda

    return cuda.device_count()


def _cuda() -> Any:
    from gradviz import cuda

    if not cuda.is_available():
        raise RuntimeError(_NONE)
    return cuda


def current_device_index() -> int:
    return _cuda().current_device()


current_device_idx = current_device_index


def set_device_index(device: Any) -> None:
    _cuda().set_device(device)


set_device_idx = set_device_index


def synchronize(device: Any = None) -> None:
    _cuda().synchronize(device)
