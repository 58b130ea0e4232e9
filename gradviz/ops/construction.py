"""Construction: tensors from data (tensor, from_numpy), the factories (zeros, ones, full, arange,
linspace, eye, *_like), and the zeros and ones that ops and backward formulas build."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz._dtype import dtype as DType
from gradviz.autograd import forward_events as _forward
from gradviz.device import CPU, array_module, as_device, device_context, to_device_array
from gradviz.device import device as Device
from gradviz.ops._common import _new, _scalar_dtype
from gradviz.tensor import Tensor, _legacy_init, _shape, make_tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
    "IntTensor", "LongTensor", "ShortTensor", "arange", "as_tensor", "asarray", "empty", "empty_like", "eye",
    "from_numpy", "full", "full_like", "linspace", "logspace", "meshgrid", "ones", "ones_like", "tensor",
    "zeros", "zeros_like",
]


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


def _infer(data: Any, dtype: DType | None = None) -> Any:
    """numpy array for nested Python data, with torch's default dtypes. Tensors inside a list
    are scalars, as torch reads them: each must hold one element, and its dtype joins the
    promotion (from any device: the result is built in host memory, as torch's)."""
    if isinstance(data, Tensor):
        return to_device_array(data._data, CPU)
    if isinstance(data, (list, tuple)) and _has_tensor(data):
        values, dt = _scalars(data)
        return np.array(values, dtype=(dt or _dtype._default[0]).np)
    arr = np.asarray(data)
    if dtype is not None:
        return arr  # cast once, to dtype, by the caller (not through the default dtype first)
    if arr.dtype == np.float64 and not isinstance(data, (np.ndarray, np.generic)):
        arr = arr.astype(_dtype._default[0].np)  # Python floats take the default dtype, as torch
    elif arr.dtype not in _dtype._BY_NP:
        arr = arr.astype(_dtype.from_numpy_dtype(arr.dtype).np)  # numpy types torch lacks
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
        return data, _dtype._default[0]
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
    # a gpu array keeps its dtype where torch has it (a numpy array's rule)
    return _dtype.from_numpy_dtype(arr.dtype).np


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
        out = make_tensor(arr, dev, requires_grad)
        if _forward.engine.probe is not None:
            _forward.detach("tensor", data, out)
        return out
    if _is_gpu_array(data):
        src = as_device(f"cuda:{data.device.id}")
        dev = src if device is None else as_device(device)
        return make_tensor(_copy_array(data, src, dev, _device_array_dtype(data, dtype)), dev, requires_grad)
    dev = as_device(device)
    arr = np.array(_infer(data, dtype), copy=True)
    if dtype is not None:
        arr = arr.astype(dtype.np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)


def _size(size: tuple, kw: Any) -> tuple[int, ...]:
    """The sizes of zeros(2, 3), zeros((2, 3)), zeros([2, 3]) and numpy's zeros(size=(2, 3))."""
    if kw is not None:
        if size:
            raise TypeError("zeros() received an invalid combination of arguments - got both sizes and size=")
        size = (kw,)
    return _shape(size)


def _filled(shape: tuple[int, ...], value: Any, dtype: DType | None, device: Any, requires_grad: bool) -> Tensor:
    dev = as_device(device)
    if dtype is None:
        dtype = _scalar_dtype(value)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    xp = array_module(dev)
    return make_tensor(xp.full(shape, value, dtype=dtype.np), dev, requires_grad)


def zeros(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
          **kw: Any) -> Tensor:
    shape = _size(size, kw.get("size"))
    if any(s < 0 for s in shape):
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return _filled(_size(size, kw.pop("size", None)), 0, dtype or _dtype._default[0], device, requires_grad)


def ones(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
         **kw: Any) -> Tensor:
    return _filled(_size(size, kw.pop("size", None)), 1, dtype or _dtype._default[0], device, requires_grad)


def empty(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
          **kw: Any) -> Tensor:
    """torch leaves an empty tensor's memory uninitialized; gradviz's holds zeros."""
    return _filled(_size(size, kw.pop("size", None)), 0, dtype or _dtype._default[0], device, requires_grad)


def full(size: Any, fill_value: Any, dtype: DType | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """The fill value's dtype when none is given: bool, int64, or the default float dtype."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _filled(_shape((size,)), fill_value, dtype, device, requires_grad)


def _like(t: Tensor, value: Any, dtype: DType | None, device: Any, requires_grad: bool) -> Tensor:
    return _filled(tuple(t.shape), value, dtype or t.dtype, device or t.device, requires_grad)


def zeros_like(t: Tensor, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
               **_: Any) -> Tensor:
    return _like(t, 0, dtype, device, requires_grad)


def ones_like(t: Tensor, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
              **_: Any) -> Tensor:
    return _like(t, 1, dtype, device, requires_grad)


def empty_like(t: Tensor, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
               **_: Any) -> Tensor:
    return _like(t, 0, dtype, device, requires_grad)


def full_like(t: Tensor, fill_value: Any, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False, **_: Any) -> Tensor:
    return _like(t, fill_value, dtype, device, requires_grad)


# -- Tensor.new_*: the tensor's dtype and device unless given ---------------------------------


def new_tensor(self: Tensor, data: Any, dtype: DType | None = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    if isinstance(data, Tensor):
        warnings.warn(_COPY_CONSTRUCT_WARNING.replace("torch.tensor(", "sourceTensor.new_tensor("), UserWarning,
                      stacklevel=2)
        data = to_device_array(data._data, CPU)
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_zeros(self: Tensor, *size: Any, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return _filled(_shape(size), 0, dtype or self.dtype, device or self.device, requires_grad)


def new_ones(self: Tensor, *size: Any, dtype: DType | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    return _filled(_shape(size), 1, dtype or self.dtype, device or self.device, requires_grad)


def new_empty(self: Tensor, *size: Any, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return _filled(_shape(size), 0, dtype or self.dtype, device or self.device, requires_grad)


def new_full(self: Tensor, size: Any, fill_value: Any, dtype: DType | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    return _filled(_shape((size,)), fill_value, dtype or self.dtype, device or self.device, requires_grad)


# -- ranges and grids ----------------------------------------------------------------------------


def arange(start: Any, end: Any = None, step: Any = 1, dtype: DType | None = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch's arange: int64 when start, end and step are all integers, else the default dtype;
    the length is ceil((end - start) / step), computed in double."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dev = as_device(device)
    is_int = all(isinstance(v, int) for v in vals)
    dt = dtype or (_dtype.int64 if is_int else _dtype._default[0])
    n = math.ceil((end - start) / step)
    if dt.is_floating_point and dt.np in (np.float32, np.float64):
        arr = _arange_float(float(start), float(step), n, dt.np)
    elif dt.is_floating_point:
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    else:
        arr = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(dt.np) if is_int else np.array(
            [start + i * step for i in range(n)], dtype=np.float64).astype(dt.np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)


def _fma(a: np.ndarray, b: float, c: np.ndarray) -> np.ndarray:
    """a*b + c rounded once, in float64 (the compiled kernel's fused multiply-add): the product's
    rounding error recovered exactly by Dekker's split, the sum's by Knuth's two-sum."""
    split = 134217729.0  # 2**27 + 1
    p = a * b
    ta, tb = split * a, split * b
    ahi, bhi = ta - (ta - a), tb - (tb - b)
    alo, blo = a - ahi, b - bhi
    perr = ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
    s = p + c
    bb = s - p
    serr = (p - (s - bb)) + (c - bb)
    return s + (serr + perr)


_ARANGE_GRAIN = 32768  # torch's at::internal::GRAIN_SIZE: below it the kernel runs as one chunk


def _arange_float(start: float, step: float, n: int, npdt: Any) -> np.ndarray:
    """torch's CPU arange for float32/float64, value for value: the kernel fills 32-byte vectors two
    at a time, each from a base start + step*idx (double, fused) cast to the dtype, its lanes
    base + k*step (double, fused) cast again; the tail past the last pair is start + step*idx."""
    lanes = 32 // np.dtype(npdt).itemsize
    idx = np.arange(n, dtype=np.float64)
    out = _fma(idx, step, np.full(n, start)).astype(npdt)  # the scalar path
    vec_end = (n // (2 * lanes)) * (2 * lanes) if n <= _ARANGE_GRAIN else 0
    if vec_end:
        bases = out[:vec_end:lanes].astype(np.float64)  # already start + step*idx cast to the dtype
        k = np.arange(lanes, dtype=np.float64)
        vals = _fma(np.broadcast_to(k, (len(bases), lanes)), step, bases[:, None])
        out[:vec_end] = vals.astype(npdt).reshape(-1)
    return out


def _steps(steps: Any) -> int:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return int(steps)


def _linspace_float(start: Any, end: Any, n: int, npdt: Any) -> np.ndarray:
    """torch's CPU linspace for float32/float64, value for value: the step in the dtype, then
    start + step*i for the first half and end - step*(n-1-i) for the rest, each rounded once (the
    kernel's fused multiply-add), in double, then cast (a float32 step times an index is exact in
    double)."""
    s, e = npdt(start), npdt(end)
    step = float((e - s) / npdt(n - 1))
    half = n // 2
    up = np.arange(half, dtype=np.float64)
    down = -np.arange(n - 1 - half, -1, -1, dtype=np.float64)
    lo = _fma(up, step, np.full(half, float(s)))
    hi = _fma(down, step, np.full(n - half, float(e)))
    return np.concatenate([lo, hi]).astype(npdt)


def _linspace_half(start: Any, end: Any, n: int, h: Any) -> np.ndarray:
    """float16/bfloat16: torch's kernel computes in the dtype itself, each c10::Half (BFloat16)
    operation in float and rounded back: the step, the index, each product and each sum."""
    f = np.float32
    s, e = h(start), h(end)
    step = f(h(f(h(f(e) - f(s))) / f(h(n - 1))))
    half = n // 2
    up = np.arange(half).astype(h).astype(f)
    down = np.arange(n - 1 - half, -1, -1).astype(h).astype(f)
    lo = (f(s) + (step * up).astype(h).astype(f)).astype(h)
    hi = (f(e) - (step * down).astype(h).astype(f)).astype(h)
    return np.concatenate([lo, hi])


def _linspace_int(start: Any, end: Any, n: int) -> np.ndarray:
    """Integer dtypes: start and end truncated to integers first, the step in double, each value
    rounded once (fused) and truncated."""
    s, e = int(start), int(end)
    step = (float(e) - float(s)) / (n - 1)
    half = n // 2
    lo = _fma(np.arange(half, dtype=np.float64), step, np.full(half, float(s)))
    hi = _fma(-np.arange(n - 1 - half, -1, -1, dtype=np.float64), step, np.full(n - half, float(e)))
    return np.trunc(np.concatenate([lo, hi]))


def linspace(start: Any, end: Any, steps: int, dtype: DType | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """torch's linspace: the first half stepped up from start, the second stepped down from end
    (so both ends are exact), in the output dtype's precision."""
    n = _steps(steps)
    dev = as_device(device)
    dt = dtype or _dtype._default[0]
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    if n == 1:
        arr = np.array([start], dtype=np.float64)
    elif dt is _dtype.float32 or dt is _dtype.float64:
        arr = _linspace_float(start, end, n, dt.np.type)
    elif dt is _dtype.float16 or dt is _dtype.bfloat16:
        arr = _linspace_half(start, end, n, dt.np.type)
    elif not dt.is_floating_point and not dt.is_complex:
        arr = _linspace_int(start, end, n)
    else:
        work = np.float64
        step = (work(end) - work(start)) / work(n - 1)
        i = np.arange(n)
        half = n // 2
        arr = np.where(i < half, work(start) + step * i.astype(work), work(end) - step * (n - 1 - i).astype(work))
    return make_tensor(to_device_array(np.asarray(arr).astype(dt.np), dev), dev, requires_grad)


def _pow(base: float, x: float) -> float:
    """C's pow, as torch's kernel calls it per element (numpy's vectorised float64 power rounds
    differently in the last bit on AVX-512 machines)."""
    try:
        return math.pow(base, x)
    except OverflowError:
        return math.inf
    except ValueError:  # 0 to a negative power (C: inf), a negative base to a fractional one (nan)
        return math.inf if base == 0 else math.nan


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, dtype: DType | None = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch's logspace kernel: the ends in the output dtype, the exponent stepped in double from
    the start for the first half and back from the end for the second, C's pow on each."""
    n = _steps(steps)
    dt = dtype or _dtype._default[0]
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    b = float(base)
    if dt.is_floating_point:
        s, e = dt.np.type(start), dt.np.type(end)  # scalar_t, rounded from the Python numbers
        span = float(e - s)  # subtracted in scalar_t, then double
        s, e = float(s), float(e)
    else:
        s, e = int(start), int(end)
        span = float(e - s)
    if n == 1:
        vals = [_pow(float(base), float(start))]  # torch fills pow(base, start) in double
    else:
        step = span / (n - 1)
        half = n // 2
        vals = [_pow(b, s + step * i) if i < half else _pow(b, e - step * (n - i - 1)) for i in range(n)]
    arr = np.array(vals, dtype=np.float64)
    if not dt.is_floating_point:
        with np.errstate(invalid="ignore"):
            arr = np.trunc(arr)
    elif dt.itemsize == 2:  # double -> float -> half or bfloat16, c10's conversions: two roundings
        arr = arr.astype(np.float32)
    dev = as_device(device)
    return make_tensor(to_device_array(arr.astype(dt.np), dev), dev, requires_grad)


def eye(n: int, m: int | None = None, dtype: DType | None = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dev = as_device(device)
    arr = np.eye(n, m, dtype=(dtype or _dtype._default[0]).np)
    return make_tensor(to_device_array(arr, dev), dev, requires_grad)


# -- sharing memory with numpy and the legacy typed constructors ----------------------------------


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor over ``arr`` itself: writes through either show in the other, as torch's."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    if arr.dtype not in _dtype._BY_NP and not _dtype.is_bfloat16(arr.dtype):  # bfloat16's joins at first use
        raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. {_dtype.SUPPORTED_NUMPY}")
    return Tensor(arr, CPU)


def as_tensor(data: Any, dtype: DType | None = None, device: Any = None) -> Tensor:
    """data itself when it is a tensor of that dtype and device; a numpy array's memory shared
    when no cast or move is asked for; otherwise a new tensor, as torch.tensor makes."""
    if isinstance(data, Tensor):
        dev = data.device if device is None else as_device(device)
        if (dtype is None or dtype is data.dtype) and dev == data.device:
            return data
        return data.to(dev, dtype or data.dtype)
    if isinstance(data, np.ndarray) and data.dtype in _dtype._BY_NP and (dtype is None or dtype.np == data.dtype) \
            and (device is None or as_device(device).type != "cuda"):
        t = Tensor(data, CPU if device is None else as_device(device))
        return t
    return tensor(data, dtype=dtype, device=device)


def asarray(obj: Any, dtype: DType | None = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    t = tensor(obj, dtype=dtype, device=device) if copy else as_tensor(obj, dtype, device)
    return t.requires_grad_(requires_grad) if requires_grad else t


class _LegacyType(type):
    """torch's typed tensor classes: calling one builds a tensor of its dtype as torch.Tensor(...)
    builds one of the default dtype, and isinstance asks for that dtype."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        t = object.__new__(Tensor)
        _legacy_init(t, cls.dtype, args, device)
        return t


class FloatTensor(metaclass=_LegacyType):
    dtype = _dtype.float32


class DoubleTensor(metaclass=_LegacyType):
    dtype = _dtype.float64


class HalfTensor(metaclass=_LegacyType):
    dtype = _dtype.float16


class BFloat16Tensor(metaclass=_LegacyType):
    dtype = _dtype.bfloat16


class LongTensor(metaclass=_LegacyType):
    dtype = _dtype.int64


class IntTensor(metaclass=_LegacyType):
    dtype = _dtype.int32


class ShortTensor(metaclass=_LegacyType):
    dtype = _dtype.int16


class CharTensor(metaclass=_LegacyType):
    dtype = _dtype.int8


class ByteTensor(metaclass=_LegacyType):
    dtype = _dtype.uint8


class BoolTensor(metaclass=_LegacyType):
    dtype = _dtype.bool_


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """torch.meshgrid: each input viewed and expanded (ViewBackward0, ExpandBackward0), 'ij' by
    default (torch warns when indexing is not given)."""
    from gradviz.ops import views as _views

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}")
    # 'xy' is 'ij' of the first two inputs swapped, the first two grids swapped back
    swap = indexing == "xy" and len(tensors) >= 2
    ts = list(tensors)
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for i, t in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[i] = -1
        out.append(_views.expand(_views.view(t, view_shape), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


_MESHGRID_WARNING = (
    "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument."
)
