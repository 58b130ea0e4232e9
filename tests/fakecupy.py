"""A strict stand-in for cupy, for tests on machines without a GPU.

It models cupy's *conversion rules*, not cupy: device data lives in ``ndarray`` objects that
are not numpy arrays (a numpy array wrapped inside, computed on by numpy), and it crosses to the
host only through ``.get()``/``asnumpy`` and back only through ``asarray``/``array``, as with
cupy. What real cupy refuses, this refuses the same way, so code that passes here does not
silently hand a device array to numpy or mix host arrays into device computations:

- ``np.asarray(device_array)`` (any implicit ``__array__``) raises cupy's TypeError;
- a numpy array as an operand of a ufunc, a numpy function or a method of a device array
  raises TypeError (cupy: "Unsupported type <class 'numpy.ndarray'>"): what ``np.zeros``,
  ``np.arange`` and friends make is host memory and must not meet device arrays;
- ufuncs and reductions on device arrays give 0-d device arrays, never numpy scalars.

Numpy's ``__array_ufunc__``/``__array_function__`` protocols route ``np.tanh(x)``,
``np.add.reduce(x)``, ``np.take_along_axis(x, ...)`` and the like to the device type, as real
cupy does for the functions it implements. Every numpy function is accepted; cupy lacks a few,
which this does not model.

One rule is stricter than cupy's by default: a numpy array as an index, an assigned value or
``put``/``take`` indices. cupy copies those to the device silently, on every call; here they are
refused (``install(strict_indices=False)`` accepts them as cupy does), so that gradviz's device
path is seen to make its index arrays where the data is.

``install()`` returns a fresh module to put in ``sys.modules["cupy"]``. Only what gradviz's
cuda path and the tests need is here.
"""

from __future__ import annotations

import threading
import types
from typing import Any

import numpy as np

_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
)


_STRICT_INDICES = [True]  # set by install()

# The device new arrays land on, per thread (cupy's current device: Device(i).use() or
# ``with Device(i)``), and how many host<->device copies were made, so tests can see that work
# meant to stay on the device does.
_CURRENT = threading.local()
_TRANSFERS = {"to_host": 0, "to_device": 0}


def _current_device() -> int:
    stack = getattr(_CURRENT, "stack", None)
    return stack[-1] if stack else 0


class _ArrayDevice:
    """What ``ndarray.device`` gives: the GPU the array's memory is on (cupy's Device)."""

    __slots__ = ("id",)

    def __init__(self, index: int) -> None:
        self.id = index


def _refuse_host(x: Any) -> None:
    raise TypeError(f"Unsupported type {type(x)!r} (a host numpy array meeting device arrays)")


def _unwrap_index(x: Any) -> Any:
    """An index, assigned value or put/take argument: device arrays unwrapped; host arrays
    refused, or taken as cupy takes them (a silent host-to-device copy) when not strict."""
    if type(x) is np.ndarray and not _STRICT_INDICES[0]:
        return x
    if type(x) is tuple:
        return tuple(_unwrap_index(v) for v in x)
    return _unwrap(x)


def _unwrap(x: Any) -> Any:
    """The numpy value inside device arrays, recursively through lists, tuples and dicts;
    host numpy arrays are refused."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is np.ndarray:
        _refuse_host(x)
    if t is list or t is tuple:
        return t(_unwrap(v) for v in x)
    if t is dict:
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(r: Any) -> Any:
    """Device arrays for numpy results; numpy scalars become 0-d device arrays, as cupy's
    results stay on the device."""
    if isinstance(r, np.ndarray):
        return ndarray(r)
    if isinstance(r, np.generic):
        return ndarray(np.asarray(r))
    if type(r) is tuple or type(r) is list:
        return type(r)(_wrap(v) for v in r)
    return r


class _Pointer:
    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr = ptr
        self.device_id = device_id


class ndarray:  # noqa: N801 - cupy's name
    """A device array: a numpy array that refuses to be seen as one implicitly."""

    __slots__ = ("_a", "_dev", "__weakref__")

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self._dev = _current_device()  # made by a kernel on the current device, as cupy's are

    # -- what cupy refuses
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(_IMPLICIT)

    # -- the protocols numpy dispatches through
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if method == "at":  # (a, indices[, b])
            if type(inputs[1]) is tuple:
                # cupy's protocol takes arrays and scalars only: np.add.at(a, (rows, cols), b)
                # reaches "returned NotImplemented"; cupy.add.at(a, (rows, cols), b) works.
                return NotImplemented
            args = (_unwrap(inputs[0]), _unwrap_index(inputs[1])) + _unwrap(inputs[2:])
        else:
            args = _unwrap(inputs)
        kw = _unwrap(kwargs)
        r = getattr(ufunc, method)(*args, **kw)
        if out is not None:
            # the caller's own device arrays, as numpy returns the out= arrays themselves
            return out[0] if len(out) == 1 else out
        return _wrap(r)

    def __array_function__(self, func: Any, types_: Any, args: tuple, kwargs: dict) -> Any:
        for t in types_:
            if t is not ndarray and not issubclass(t, np.ndarray):
                return NotImplemented
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- the host side, explicitly
    def get(self) -> np.ndarray:
        _TRANSFERS["to_host"] += 1
        return self._a.copy()

    def tolist(self) -> Any:
        return self._a.tolist()

    def item(self) -> Any:
        return self._a.item()

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __len__(self) -> int:
        return len(self._a)

    def __repr__(self) -> str:
        return f"fakecupy.{self._a!r}"

    # -- attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray(self._a.T))
    # cupy's memory pointer (gradviz compares views' addresses with it)
    data = property(lambda self: _Pointer(self._a.__array_interface__["data"][0], self._dev))
    device = property(lambda self: _ArrayDevice(self._dev))

    @property
    def __cuda_array_interface__(self) -> dict:
        # what torch and others look for to recognize a GPU array (read here, never followed)
        ai = self._a.__array_interface__
        return {"shape": ai["shape"], "typestr": ai["typestr"], "data": ai["data"], "version": 3,
                "strides": None if self._a.flags["C_CONTIGUOUS"] else self._a.strides}

    @property
    def base(self) -> Any:
        return None if self._a.base is None else ndarray(self._a.base)

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._a[_unwrap_index(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[_unwrap_index(key)] = _unwrap_index(value)

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        self._a.put(_unwrap_index(indices), _unwrap_index(values), mode)

    def take(self, indices: Any, axis: Any = None) -> Any:
        return _wrap(self._a.take(_unwrap_index(indices), axis))

    def __iter__(self):
        return (ndarray(self._a[i]) for i in range(len(self._a)))

    # -- operators: through numpy's ufuncs, hence through __array_ufunc__
    def __add__(self, o: Any) -> Any:
        return np.add(self, o)

    def __radd__(self, o: Any) -> Any:
        return np.add(o, self)

    def __iadd__(self, o: Any) -> Any:
        return np.add(self, o, out=(self,))

    def __sub__(self, o: Any) -> Any:
        return np.subtract(self, o)

    def __rsub__(self, o: Any) -> Any:
        return np.subtract(o, self)

    def __isub__(self, o: Any) -> Any:
        return np.subtract(self, o, out=(self,))

    def __mul__(self, o: Any) -> Any:
        return np.multiply(self, o)

    def __rmul__(self, o: Any) -> Any:
        return np.multiply(o, self)

    def __imul__(self, o: Any) -> Any:
        return np.multiply(self, o, out=(self,))

    def __truediv__(self, o: Any) -> Any:
        return np.true_divide(self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return np.true_divide(o, self)

    def __itruediv__(self, o: Any) -> Any:
        return np.true_divide(self, o, out=(self,))

    def __floordiv__(self, o: Any) -> Any:
        return np.floor_divide(self, o)

    def __mod__(self, o: Any) -> Any:
        return np.remainder(self, o)

    def __pow__(self, o: Any) -> Any:
        return np.power(self, o)

    def __rpow__(self, o: Any) -> Any:
        return np.power(o, self)

    def __matmul__(self, o: Any) -> Any:
        return np.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return np.matmul(o, self)

    def __neg__(self) -> Any:
        return np.negative(self)

    def __pos__(self) -> Any:
        return np.positive(self)

    def __abs__(self) -> Any:
        return np.absolute(self)

    def __invert__(self) -> Any:
        return np.invert(self)

    def __and__(self, o: Any) -> Any:
        return np.bitwise_and(self, o)

    def __rand__(self, o: Any) -> Any:
        return np.bitwise_and(o, self)

    def __or__(self, o: Any) -> Any:
        return np.bitwise_or(self, o)

    def __ror__(self, o: Any) -> Any:
        return np.bitwise_or(o, self)

    def __xor__(self, o: Any) -> Any:
        return np.bitwise_xor(self, o)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return np.equal(self, o)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return np.not_equal(self, o)

    def __lt__(self, o: Any) -> Any:
        return np.less(self, o)

    def __le__(self, o: Any) -> Any:
        return np.less_equal(self, o)

    def __gt__(self, o: Any) -> Any:
        return np.greater(self, o)

    def __ge__(self, o: Any) -> Any:
        return np.greater_equal(self, o)

    __hash__ = None  # type: ignore[assignment]


def _method(name: str):
    def m(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        return _wrap(getattr(self._a, name)(*_unwrap(args), **_unwrap(kwargs)))

    m.__name__ = name
    return m


for _name in (
    "all", "any", "argmax", "argmin", "astype", "clip", "copy", "cumsum", "fill", "max", "mean", "min",
    "nonzero", "prod", "ravel", "reshape", "squeeze", "std", "sum", "swapaxes", "transpose",
    "var", "view",
):
    setattr(ndarray, _name, _method(_name))


# -- the module ---------------------------------------------------------------------------------


def _asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """A device array: ``a`` itself when it already is one of ``dtype`` on the current device,
    else a copy on the current device (from host data: the explicit host-to-device transfer; from
    another GPU's array: a peer copy, as cupy makes)."""
    if type(a) is ndarray:
        if a._dev != _current_device():
            return ndarray(a._a.astype(dtype or a.dtype, copy=True))
        if dtype is None or a.dtype == np.dtype(dtype):
            return a
        return ndarray(a._a.astype(dtype))
    _TRANSFERS["to_device"] += 1
    return ndarray(np.array(a, dtype=dtype, order=order or "K", copy=True))


def _array(a: Any, dtype: Any = None, copy: bool = True, order: Any = "K") -> ndarray:
    if type(a) is ndarray:
        if a._dev != _current_device():
            copy = True
        return ndarray(np.array(a._a, dtype=dtype, copy=copy, order=order))
    _TRANSFERS["to_device"] += 1
    return ndarray(np.array(a, dtype=dtype, order=order, copy=True))


def _asnumpy(a: Any) -> np.ndarray:
    return a.get() if type(a) is ndarray else np.asarray(a)


def _as_strided(x: Any, shape: Any = None, strides: Any = None) -> ndarray:
    """cupy.lib.stride_tricks.as_strided: a view of device memory (numpy's own refuses a device
    array: it converts its argument with np.array)."""
    if type(x) is not ndarray:
        _refuse_host(x)
    return ndarray(np.lib.stride_tricks.as_strided(x._a, shape, strides))


def _device_function(fn: Any):
    # cupy.ascontiguousarray and the like: device arrays in (host arrays refused), device out
    def call(*args: Any, **kwargs: Any) -> Any:
        return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)))

    call.__name__ = fn.__name__
    return call


def _creation(fn: Any):
    # creation functions take no array argument: their result is made on the device
    def make(*args: Any, **kwargs: Any) -> ndarray:
        return ndarray(fn(*_unwrap(args), **_unwrap(kwargs)))

    make.__name__ = fn.__name__
    return make


class _Ufunc:
    """cupy.add and friends: called, the numpy ufunc through the protocol; ``at`` takes its
    indices, a tuple of them too, by the indexing rules (cupy's ufunc.at)."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self._u = ufunc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._u(*args, **kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        if type(a) is not ndarray:
            raise AttributeError(f"{type(a).__name__!r} object has no attribute '_scatter_op'")
        args = (a._a, _unwrap_index(indices)) + (() if b is None else (_unwrap(b),))
        self._u.at(*args)


def install(device_count: int = 1, strict_indices: bool = True) -> types.ModuleType:
    """A fresh stand-in module (its Device(i).use() calls recorded in ``used``, its host<->device
    copies counted in ``transfers``)."""
    _STRICT_INDICES[0] = strict_indices
    _TRANSFERS.update(to_host=0, to_device=0)
    mod = types.ModuleType("cupy")
    mod.__doc__ = __doc__
    used: list[tuple[str, int]] = []

    class Device:
        def __init__(self, index: int = 0) -> None:
            if not 0 <= index < device_count:
                raise ValueError(f"invalid device {index}")
            self.id = index

        def use(self) -> None:
            used.append((threading.current_thread().name, self.id))
            stack = getattr(_CURRENT, "stack", None)
            if stack:
                stack[-1] = self.id
            else:
                _CURRENT.stack = [self.id]

        def __enter__(self) -> Device:
            stack = getattr(_CURRENT, "stack", None)
            if stack is None:
                stack = _CURRENT.stack = [0]
            stack.append(self.id)
            return self

        def __exit__(self, *exc: object) -> None:
            _CURRENT.stack.pop()

    runtime = types.SimpleNamespace(getDeviceCount=lambda: device_count)
    mod.cuda = types.SimpleNamespace(Device=Device, runtime=runtime)
    mod.used = used
    mod.transfers = _TRANSFERS
    mod.ndarray = ndarray
    mod.asarray = _asarray
    mod.array = _array
    mod.asnumpy = _asnumpy
    mod.get_array_module = lambda *args: mod if any(type(a) is ndarray for a in args) else np
    for name in ("zeros", "ones", "empty", "full", "arange", "eye", "linspace", "indices"):
        setattr(mod, name, _creation(getattr(np, name)))
    for name in ("bincount", "stack"):
        setattr(mod, name, _device_function(getattr(np, name)))
    for name in ("add", "subtract", "maximum", "minimum"):
        setattr(mod, name, _Ufunc(getattr(np, name)))
    mod.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))
    for name in ("zeros_like", "ones_like", "empty_like", "full_like"):
        setattr(mod, name, _creation(getattr(np, name)))
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "bool_", "dtype"):
        setattr(mod, name, getattr(np, name))
    return mod
