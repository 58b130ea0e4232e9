"""Construction: tensors from data (tensor, from_numpy), the factories (zeros, ones, full, arange,
linspace, eye, *_like), and the zeros and ones that ops and backward formulas build."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz._dtype import dtype as DType
from gradviz.device import CPU, array_module, as_device, device_context, to_device_array
from gradviz.device import device as Device
from gradviz.ops._common import _new
from gradviz.tensor import Tensor, _shape, make_tensor


def zeros_for(shape: tuple[int, ...], dtype: _dtype.dtype, device: Any) -> Tensor:
    return _new(array_module(device).zeros(shape, dtype=dtype.np), device)


def ones_for(t: Tensor) -> Tensor:
    return _new(array_module(t.device).ones(t.shape, dtype=t.dtype.np), t.device)


def arange_like_dim(shape: tuple[int, ...], dim: int, device: Any) -> Tensor:
    """Positions along ``dim``, shaped to broadcast against a tensor of ``shape``."""
    view_shape = [1] * len(shape)
    view_shape[dim] = shape[dim]
    arr = array_module(device).arange(shape[dim], dtype=np.int64).reshape(view_shape)
    return _new(arr, device)


# -- backward formulas ----------------------------------------------------------------------


def _zero_scalar(g):
    # torch's at::zeros({}, grad.options()): a 0-dim zero that broadcasts
    return zeros_for((), g.dtype, g.device)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _zeros(n, g):
    return zeros_for(g.shape, g.dtype, g.device)

def _zeros_filled(grads, like_shapes, dtype, device):
    return [g if g is not None else zeros_for(s, dtype, device) for g, s in zip(grads, like_shapes, strict=True)]



# -- tensors from data and factories ------------------------------------------------------------


def _infer(data: Any) -> Any:
    """numpy array for nested Python data, with torch's default dtypes. Tensors inside a list
    are scalars, as torch reads them: each must hold one element, and its dtype joins the
    promotion (from any device: the result is built in host memory, as torch's)."""
    if isinstance(data, Tensor):
        return to_device_array(data._data, CPU)
    if isinstance(data, (list, tuple)) and _has_tensor(data):
        values, dt = _scalars(data)
        return np.array(values, dtype=(dt or _dtype.float32).np)
    arr = np.asarray(data)
    if arr.dtype == np.float64 and not isinstance(data, (np.ndarray, np.generic)):
        arr = arr.astype(np.float32)  # Python floats default to float32, as torch
    elif arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    return arr


def _has_tensor(seq: list | tuple) -> bool:
    for x in seq:
        if isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and _has_tensor(x)):
            return True
    return False


def _scalars(data: Any) -> tuple[Any, _dtype.dtype | None]:
    """``data`` with each tensor replaced by its one value, and the dtype torch infers for the
    whole: the promotion of every element's (a tensor's own, bool, int64 for ints, the default
    float32 for floats, an array's); None for no element at all."""
    if isinstance(data, Tensor):
        if data.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return data.item(), data.dtype
    if isinstance(data, (list, tuple)):
        values = []
        dt: _dtype.dtype | None = None
        for x in data:
            v, d = _scalars(x)
            values.append(v)
            if d is not None:
                dt = d if dt is None else _dtype.promote(dt, d)
        return values, dt
    if isinstance(data, bool):
        return data, _dtype.bool_
    if isinstance(data, int):
        return data, _dtype.int64
    if isinstance(data, float):
        return data, _dtype.float32
    arr = np.asarray(data)
    return arr.tolist(), _dtype.from_numpy_dtype(arr.dtype)


def _is_gpu_array(data: Any) -> bool:
    # what torch recognizes a foreign gpu array by (cupy's, numba's, ...)
    return type(data) is not np.ndarray and hasattr(data, "__cuda_array_interface__")


_COPY_CONSTRUCT_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor)."
)


def _copy_array(arr: Any, src: Device, dev: Device, np_dtype: Any) -> Any:
    """A copy of ``arr`` (on ``src``) on ``dev``, cast to ``np_dtype``: cast where the data is,
    then moved (a gpu's data never passes through the host on the way to itself or another gpu)."""
    if type(arr) is np.ndarray:
        data = arr.astype(np_dtype) if arr.dtype != np_dtype else arr
    else:
        with device_context(src):  # cupy makes the cast and the copy on the current GPU
            data = arr.astype(np_dtype) if arr.dtype != np_dtype else arr
            if data is arr and dev == src:
                data = arr.copy()
    if dev != src:
        data = to_device_array(data, dev)
    if data is arr:  # neither cast nor moved (or moved between numpy devices): still shared
        data = np.array(arr, copy=True)
    return data


def _device_array_dtype(arr: Any, dtype: DType | None) -> Any:
    if dtype is not None:
        return dtype.np
    # a gpu array keeps its dtype, but gradviz's integers are int64 (as for numpy arrays)
    return np.dtype(np.int64) if arr.dtype.kind in "iu" else arr.dtype


def tensor(
    data: Any,
    dtype: DType | None = None,
    device: str | Device | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """A new leaf tensor holding a copy of ``data``.

    From a tensor or a gpu array (``__cuda_array_interface__``, as cupy's), the copy is on the
    source's device unless ``device`` says otherwise, as torch's; a tensor also warns, as torch
    does, that ``detach().clone()`` says what is meant."""
    if isinstance(data, Tensor):
        warnings.warn(_COPY_CONSTRUCT_WARNING, UserWarning, stacklevel=2)
        src = data.device
        dev = src if device is None else as_device(device)
        arr = _copy_array(data._data, src, dev, dtype.np if dtype is not None else data._data.dtype)
        return make_tensor(arr, dev, requires_grad)
    if _is_gpu_array(data):
        src = as_device(f"cuda:{data.device.id}")
        dev = src if device is None else as_device(device)
        return make_tensor(_copy_array(data, src, dev, _device_array_dtype(data, dtype)), dev, requires_grad)
    dev = as_device(device)
    arr = np.array(_infer(data), copy=True)
    if dtype is not None:
        arr = arr.astype(dtype.np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)


def from_numpy(arr: np.ndarray) -> Tensor:
    return Tensor(arr, CPU)


def _filled(size: tuple, value: Any, dtype: DType | None, device: Any, requires_grad: bool) -> Tensor:
    dev = as_device(device)
    if dtype is None:
        dtype = _dtype.float32 if isinstance(value, float) else (
            _dtype.bool_ if isinstance(value, bool) else (_dtype.int64 if isinstance(value, int) else _dtype.float32)
        )
    xp = array_module(dev)
    return make_tensor(xp.full(_shape(size), value, dtype=dtype.np), dev, requires_grad)


def zeros(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled(size, 0.0, dtype, device, requires_grad)


def ones(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled(size, 1.0, dtype, device, requires_grad)


def full(size: Any, fill_value: Any, dtype: DType | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:  # fmt: skip
    return _filled((size,), fill_value, dtype, device, requires_grad)


def zeros_like(t: Tensor, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled((t.shape,), 0.0, dtype or t.dtype, device or t.device, requires_grad)


def ones_like(t: Tensor, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled((t.shape,), 1.0, dtype or t.dtype, device or t.device, requires_grad)


def full_like(t: Tensor, fill_value: Any, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:  # fmt: skip
    return _filled((t.shape,), fill_value, dtype or t.dtype, device or t.device, requires_grad)


def empty(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def arange(start: float, end: float | None = None, step: float = 1, dtype: DType | None = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dev = as_device(device)
    is_int = all(isinstance(v, int) for v in (start, end, step))
    dt = dtype or (_dtype.int64 if is_int else _dtype.float32)
    arr = np.arange(start, end, step, dtype=np.float64 if dt.is_floating_point else np.int64).astype(dt.np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)


def linspace(start: float, end: float, steps: int, dtype: DType | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    dev = as_device(device)
    arr = np.linspace(start, end, steps).astype((dtype or _dtype.float32).np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)


def eye(n: int, m: int | None = None, dtype: DType | None = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:  # fmt: skip
    dev = as_device(device)
    arr = np.eye(n, m, dtype=(dtype or _dtype.float32).np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)

