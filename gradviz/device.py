"""Devices, and the one place that chooses the array module for each.

- ``cpu``: numpy; CPU work runs on the calling thread.
- ``virtual:N``: numpy storage that the engine treats as an accelerator: its own worker thread
  and ready queue, so multi-device scheduling can be watched (and tested) without a GPU.
- ``cuda:N``: cupy arrays, where cupy and an NVIDIA GPU exist.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

_TYPES = ("cpu", "virtual", "cuda")


class device:  # noqa: N801 - mirrors torch.device
    __slots__ = ("type", "index", "_str")

    def __init__(self, spec: str | device, index: int | None = None):
        if isinstance(spec, device):
            self.type, self.index, self._str = spec.type, spec.index, spec._str
            return
        if not isinstance(spec, str):
            raise TypeError(f"device() expects a string such as 'cpu' or 'virtual:0', got {type(spec).__name__}")
        typ, _, idx = spec.partition(":")
        if typ not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, virtual device type at start of device string: {spec}"
            )
        if idx:
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{spec}'")
            index = int(idx)
        if typ != "cpu" and index is None:
            index = 0
        self.type = typ
        self.index = None if typ == "cpu" else index
        self._str = typ if typ == "cpu" else f"{typ}:{index}"

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other: object) -> bool:
        if other is self:  # the usual case (tensors share the device objects): no isinstance
            return True
        # torch's: a device equals only a device; "cpu" == device("cpu") is False, and never raises
        return isinstance(other, device) and other._str == self._str

    def __hash__(self) -> int:
        return hash(self._str)

    @property
    def is_accelerator(self) -> bool:
        """True for devices the engine gives a worker thread (everything but cpu)."""
        return self.type != "cpu"


CPU = device("cpu")


@cache
def _cached(spec: str) -> device:
    return device(spec)


_default_device: device = CPU  # torch.set_default_device's: where factories without device= put tensors


def set_default_device(spec: str | device | int | None) -> None:
    """torch.set_default_device: ``None`` puts factories back on the cpu. As in torch, a cuda
    device is accepted here without a GPU; making a tensor there then fails."""
    global _default_device
    if spec is None:
        _default_device = CPU
    elif isinstance(spec, int):
        _default_device = device("cuda", spec)
    else:
        _default_device = device(spec)


def get_default_device() -> device:
    return _default_device


def as_device(spec: str | device | None) -> device:
    if spec is None:
        return _default_device
    if isinstance(spec, device):
        return spec
    return _cached(spec)


class CudaUnavailableError(RuntimeError, AssertionError):
    """No usable CUDA device. torch's CPU build raises AssertionError("Torch not compiled with CUDA
    enabled") where a GPU is needed; gradviz's device errors are RuntimeErrors: this is both."""


def cupy_or_error() -> ModuleType:
    """cupy, or a CudaUnavailableError saying exactly what is missing for cuda devices."""
    prefix = "Torch not compiled with CUDA enabled; "
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError as exc:
        raise CudaUnavailableError(
            prefix + "cuda devices need cupy and an NVIDIA GPU: cupy is not installed "
            "(pip install cupy-cuda12x on a machine with a GPU), use 'virtual:N' to watch "
            "multi-device scheduling without one"
        ) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises its own CUDARuntimeError types
        raise CudaUnavailableError(prefix + f"cuda devices need an NVIDIA GPU: cupy found none ({exc})") from exc
    if count == 0:
        raise CudaUnavailableError(prefix + "cuda devices need an NVIDIA GPU: cupy found none")
    return cupy


def array_module(dev: device) -> ModuleType:
    """numpy for cpu and virtual devices, cupy for cuda: the only place this is decided."""
    if dev.type == "cuda":
        return cupy_or_error()
    return np


def module_of(a: Any) -> ModuleType:
    """The array module of an array: numpy for numpy's arrays, cupy for any other (device data)."""
    return np if type(a) is np.ndarray else cupy_or_error()


def add_at(a: Any, key: Any, values: Any) -> None:
    """``a[key] += values`` with repeated indices accumulating (np.add.at), in a's own array
    module: numpy's protocol does not hand cupy a tuple of indices (cupy's __array_ufunc__ takes
    arrays and scalars only), cupy.add.at does take it."""
    if type(a) is np.ndarray:
        np.add.at(a, key, values)
    else:
        cupy_or_error().add.at(a, key, values)


def as_strided(a: Any, shape: tuple[int, ...], strides: tuple[int, ...], writeable: bool = True) -> Any:
    """A strided view of a's memory in its own module (numpy's as_strided converts a cupy array
    to numpy first, which cupy refuses)."""
    if type(a) is np.ndarray:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=writeable)
    return cupy_or_error().lib.stride_tricks.as_strided(a, shape, strides)


def device_context(dev: device) -> AbstractContextManager:
    """Make ``dev`` current while arrays are made from its data: cupy allocates new arrays (an
    ``astype``, a ``copy``) on the *current* GPU, which for cuda:1's data on a thread whose
    current GPU is 0 would be the wrong one. A no-op for numpy devices."""
    if dev.type == "cuda":
        return cupy_or_error().cuda.Device(dev.index)
    return nullcontext()


def to_device_array(data, dev: device):
    """Move an array to the storage of ``dev`` (a no-op between numpy devices)."""
    if dev.type == "cuda":
        cp = cupy_or_error()
        with cp.cuda.Device(dev.index):
            return cp.asarray(data)
    if type(data) is not np.ndarray and hasattr(data, "get"):  # a cupy array coming home
        return data.get()
    return data


def set_thread_device(spec: str | device | None) -> None:
    """Make ``spec`` the current device of the calling thread, as torch's engine does with
    ``set_device(worker_device)`` before it runs nodes: cupy's current GPU for cuda:N (so that
    arrays a node makes land on its device), nothing for cpu and virtual devices."""
    if spec is None:
        return
    dev = as_device(spec)
    if dev.type == "cuda":
        cupy_or_error().cuda.Device(dev.index).use()
