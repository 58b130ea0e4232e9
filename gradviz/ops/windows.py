"""Window functions (hann, hamming, blackman, bartlett, kaiser) and tril/triu_indices: tensors
made from their sizes, computed in float64 and rounded to the dtype asked for."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.device import as_device, to_device_array
from gradviz.tensor import Tensor

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window", "tril_indices",
           "triu_indices"]


def _make(data: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dt = dtype or _dtype._default[0]
    dev = as_device(device if device is not None else "cpu")
    t = Tensor(to_device_array(np.asarray(data, dtype=dt.np), dev), dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _window(n: int, periodic: bool, fn) -> np.ndarray:
    if n < 0:
        raise RuntimeError(f"window_length must be non-negative, got {n}")
    if n == 0:
        return np.zeros(0)
    if n == 1:
        return np.ones(1)
    m = n + 1 if periodic else n
    return fn(np.arange(m, dtype=np.float64), m)[:n]


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                device: Any = None, requires_grad: bool = False) -> Tensor:
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, layout: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    data = _window(window_length, periodic, lambda k, m: alpha - beta * np.cos(2 * np.pi * k / (m - 1)))
    return _make(data, dtype, device, requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    data = _window(window_length, periodic, lambda k, m: 0.42 - 0.5 * np.cos(2 * np.pi * k / (m - 1))
                   + 0.08 * np.cos(4 * np.pi * k / (m - 1)))
    return _make(data, dtype, device, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    data = _window(window_length, periodic, lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))
    return _make(data, dtype, device, requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    data = _window(window_length, periodic,
                   lambda k, m: np.i0(beta * np.sqrt(1 - ((k - (m - 1) / 2) / ((m - 1) / 2)) ** 2)) / np.i0(beta))
    return _make(data, dtype, device, requires_grad)


def _indices(rows: int, cols: int, offset: int, lower: bool, dtype: Any, device: Any) -> Tensor:
    r, c = np.tril_indices(rows, offset, cols) if lower else np.triu_indices(rows, offset, cols)
    return _make(np.stack([r, c]), dtype or _dtype.int64, device, False)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    return _indices(row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    return _indices(row, col, offset, False, dtype, device)
