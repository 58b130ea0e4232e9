"""torch.cuda for gradviz: truthful answers about the GPUs gradviz can use (through cupy).

Without cupy or an NVIDIA GPU, the queries answer as torch's do on a machine without CUDA
(``is_available()`` False, ``device_count()`` 0, seeding accepted and ignored), and the calls
that need a device raise ``gradviz.device.CudaUnavailableError``: an AssertionError, as torch's
CPU build raises, and a RuntimeError, as gradviz's other device errors are, naming what is missing.
"""

from __future__ import annotations

from typing import Any

from gradviz.device import CudaUnavailableError


def _cupy() -> Any:
    from gradviz.device import cupy_or_error

    return cupy_or_error()


def is_available() -> bool:
    try:
        _cupy()
        return True
    except CudaUnavailableError:
        return False


def device_count() -> int:
    return _cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def is_initialized() -> bool:
    return is_available()


def init() -> None:
    _cupy()


def current_device() -> int:
    return int(_cupy().cuda.Device().id)


def set_device(device: Any) -> None:
    from gradviz.device import as_device

    idx = device if isinstance(device, int) else as_device(device).index
    if idx is None or idx < 0:
        return  # torch ignores negative indices
    _cupy().cuda.Device(idx).use()


def synchronize(device: Any = None) -> None:
    _cupy().cuda.Device().synchronize()


def get_device_name(device: Any = None) -> str:
    cp = _cupy()
    idx = current_device() if device is None else (device if isinstance(device, int) else device.index or 0)
    name = cp.cuda.runtime.getDeviceProperties(idx)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_properties(device: Any = None) -> dict:
    cp = _cupy()
    idx = current_device() if device is None else (device if isinstance(device, int) else device.index or 0)
    return cp.cuda.runtime.getDeviceProperties(idx)


def get_device_capability(device: Any = None) -> tuple[int, int]:
    p = get_device_properties(device)
    return int(p["major"]), int(p["minor"])


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


# -- seeding: gradviz's cuda tensors take the CPU generator's stream, so these are accepted no-ops
def manual_seed(seed: int) -> None:
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def seed() -> None:
    return None


def seed_all() -> None:
    return None


def initial_seed() -> int:
    _cupy()
    from gradviz.random import initial_seed as cpu_initial_seed

    return cpu_initial_seed()


# -- memory: cupy's pool where there is one, zeros where there is no GPU -------------------------
def empty_cache() -> None:
    if is_available():
        _cupy().get_default_memory_pool().free_all_blocks()


def memory_allocated(device: Any = None) -> int:
    return int(_cupy().get_default_memory_pool().used_bytes()) if is_available() else 0


def memory_reserved(device: Any = None) -> int:
    return int(_cupy().get_default_memory_pool().total_bytes()) if is_available() else 0


def max_memory_allocated(device: Any = None) -> int:
    return memory_allocated(device)


def max_memory_reserved(device: Any = None) -> int:
    return memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    return None


class device:  # noqa: N801 - torch.cuda.device
    """Context manager that makes a CUDA device current (a negative index or None: no change)."""

    def __init__(self, device: Any) -> None:
        from gradviz.device import as_device

        self.idx = device if isinstance(device, int) or device is None else as_device(device).index
        self.prev = -1

    def __enter__(self) -> None:
        if self.idx is None or self.idx < 0:
            return
        if not is_available():
            raise CudaUnavailableError("PyTorch was compiled without CUDA support (gradviz: no usable CUDA device)")
        self.prev = current_device()
        set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.prev >= 0:
            set_device(self.prev)


from gradviz.cuda import amp  # noqa: E402 - torch.cuda.amp, which needs the names above
from gradviz.cuda._typed import (  # noqa: E402 - the typed classes, which need is_available above
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
