"""What every op family shares: the derivative table's registry, dtype promotion, the
helpers that run a binary op on arrays, dims, and the helpers backward formulas build results with."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import to_device_array
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import OpNode, node_class, record, save
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "is_floating_point", "promote_types", "result_type",
]

# Every op's row of the derivative table by key, and the node class made from it (named as
# torch names the node). Each family module registers its rows when it is imported.
DERIVATIVES: dict[str, D] = {}
NODES: dict[str, type[OpNode]] = {}


def register(rows: dict[str, D]) -> None:
    for key, row in rows.items():
        DERIVATIVES[key] = row
        NODES[key] = node_class(row)


# numpy's floating-point RuntimeWarnings from these ops are silenced by gradviz/_numpy_warnings.py
# (one filter, installed at import); the few ops that go through numpy's Python-level functions
# (whose frames are numpy's, not gradviz's) use np.errstate themselves.

_BY_NP_DTYPE = _dtype._BY_NP_DTYPE
_wrap = Tensor._wrap

Scalar = int | float | bool


# -- helpers ---------------------------------------------------------------------------------


def _new(data: Any, dev) -> Tensor:
    # numpy ufuncs on 0-d arrays return numpy scalars: a tensor always holds a (writable) array.
    if isinstance(data, np.generic):
        data = np.array(data)
    dt = _BY_NP_DTYPE.get(data.dtype)
    if dt is not None:
        return _wrap(data, dt, dev)
    return Tensor(data, dev)


def _check_devices(a: Tensor, b: Tensor) -> None:
    if a.device is not b.device and a.device != b.device:
        # A 0-dim CPU tensor may meet any device, as torch allows for scalars.
        if (b.device.type == "cpu" and b.ndim == 0) or (a.device.type == "cpu" and a.ndim == 0):
            return
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{a.device} and {b.device}!"
        )


def _scalar_dtype(s: Any) -> _dtype.dtype:
    # A Python number takes the default dtype of its kind (the default dtype for floats), as
    # torch's wrapped numbers.
    if isinstance(s, (bool, np.bool_)):
        return _dtype.bool_
    if isinstance(s, (int, np.integer)):
        return _dtype.int64
    return _dtype._default[0]


def _promote(a: _dtype.dtype | None, b: _dtype.dtype | None) -> _dtype.dtype | None:
    if a is None:
        return b
    if b is None:
        return a
    return _dtype.promote(a, b)


def _combine(higher: _dtype.dtype | None, lower: _dtype.dtype | None) -> _dtype.dtype | None:
    # torch's combine_categories: a lower tier only counts when it is of a higher category.
    if higher is None:
        return lower
    if lower is None or higher.is_floating_point:
        return higher
    if higher is _dtype.bool_ or lower.is_floating_point:
        return _dtype.promote(higher, lower)
    return higher


def result_type(*operands: Any) -> _dtype.dtype:
    """torch's result_type: tensors with dimensions first, then 0-dim tensors, then Python numbers,
    each lower tier deciding only when its category (bool < int < float) is higher."""
    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, Tensor):
            if o.ndim:
                dim = _promote(dim, o.dtype)
            else:
                zero = _promote(zero, o.dtype)
        elif o is not None:
            wrapped = _promote(wrapped, _scalar_dtype(o))
    return _combine(dim, _combine(zero, wrapped))


def promote_types(a: _dtype.dtype, b: _dtype.dtype) -> _dtype.dtype:
    return _dtype.promote(a, b)


def is_floating_point(t: Tensor) -> bool:
    return t.dtype.is_floating_point


def _result_dtype_scalar(t: Tensor, s: Scalar) -> _dtype.dtype:
    return result_type(t, s)


def _cast(arr: Any, dt: _dtype.dtype) -> Any:
    return arr if arr.dtype == dt.np else arr.astype(dt.np)


def _as_array(d: Any, dtype: Any = None) -> Any:
    """``np.asarray(d, dtype)`` for what an array operation returned, on any device: numpy's
    scalars (from full reductions and 0-d operands) become 0-d arrays, as a tensor always holds an
    array; a cupy array stays on its device (np.asarray would refuse it: cupy does not convert to
    the host implicitly, and its reductions give 0-d arrays already)."""
    if isinstance(d, (np.ndarray, np.generic)) or not hasattr(d, "__array_ufunc__"):
        return np.asarray(d, dtype=dtype)
    return d if dtype is None or d.dtype == dtype else d.astype(dtype)


def _ascontiguous(x: Any) -> Any:
    """np.ascontiguousarray on any device (numpy's would take a cupy array to the host, which
    cupy refuses): the array itself when C-contiguous, else its C-ordered copy."""
    if type(x) is np.ndarray:  # not np.ascontiguousarray: it makes a 0-d array 1-d
        return np.asarray(x, order="C")
    return x if x.flags["C_CONTIGUOUS"] else x.copy(order="C")


def _c_copy(x: Any) -> Any:
    """np.array(x, order="C") (a C-ordered copy) on any device."""
    if type(x) is np.ndarray:
        return np.array(x, order="C")
    return x.copy(order="C")


def _binary_data(a: Tensor, b: Tensor | Scalar, op, floating: bool = False) -> tuple[Any, Tensor | None]:
    """op on the data, in torch's result dtype (``floating``: an integral result becomes the
    default float, as true division)."""
    tb = type(b)
    if (tb is float or tb is int) and a.dtype.is_floating_point:
        # A floating tensor and a Python number: the result is the tensor's dtype (torch's
        # wrapped numbers; numpy's weak Python scalars agree), so no promotion or cast to work out.
        out = op(a._data, b)
        return (np.asarray(out) if isinstance(out, np.generic) else out), None
    if tb is Tensor and a.dtype is b.dtype and a.device is b.device and a.dtype.is_floating_point:
        # Two floating tensors of one dtype on one device (any same-dtype binary op): that dtype is the
        # result's (an alpha that is a numpy float64 may widen numpy's result: cast back then).
        x = a._data
        try:
            out = op(x, b._data)
        except ValueError as e:
            raise (_broadcast_error(x.shape, b._data.shape) or e) from None
        if type(out) is not np.ndarray or out.dtype is not x.dtype:
            out = _cast(_as_array(out), a.dtype)
        return out, b
    if isinstance(b, np.ndarray):
        raise TypeError("gradviz ops take tensors or Python numbers, not numpy arrays")
    dt = result_type(a, b)
    if floating and not dt.is_floating_point:
        dt = _dtype._default[0]
    if isinstance(b, Tensor):
        _check_devices(a, b)
        x, y = a._data, b._data
        # computed in the result dtype, as torch's kernels (numpy would widen int and float32
        # to float64, and has no common type for float16 and bfloat16)
        if x.dtype != dt.np:
            x = x.astype(dt.np)
        if y.dtype != dt.np:
            y = y.astype(dt.np)
        if a.device is not b.device and a.device != b.device:
            # One is a 0-dim cpu tensor, which meets any device as a scalar (torch): its value
            # joins the other's device, as cupy takes no host arrays; the result is on that
            # device too (_binary_device).
            if b.device.type == "cpu":
                y = to_device_array(y, a.device)
            else:
                x = to_device_array(x, b.device)
        try:
            out = op(x, y)
        except ValueError as e:
            raise (_broadcast_error(x.shape, y.shape) or e) from None
        return _cast(out if type(out) is np.ndarray else _as_array(out), dt), b
    x = a._data
    if dt.is_floating_point and x.dtype != dt.np:
        x = x.astype(dt.np)  # an integer tensor and a float: computed in the default dtype, as torch
    out = op(x, b)
    return _cast(out if type(out) is np.ndarray else _as_array(out), dt), None


def _broadcast_error(xs: tuple[int, ...], ys: tuple[int, ...]) -> RuntimeError | None:
    """torch's error for shapes that do not broadcast (the first clash from the right), or None
    when they do (a numpy ValueError then had another cause)."""
    n = builtins.max(len(xs), len(ys))
    for i in range(1, n + 1):
        sa = xs[-i] if i <= len(xs) else 1
        sb = ys[-i] if i <= len(ys) else 1
        if sa != sb and sa != 1 and sb != 1:
            return RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at non-singleton dimension {n - i}"
            )
    return None


def _elementwise(fn: Any, x: Any, y: Any) -> Any:
    """fn(x, y) for a binary numpy function, with torch's error when the shapes do not
    broadcast. (The hot arithmetic paths keep this try inline: a call costs them more.)"""
    try:
        return fn(x, y)
    except ValueError as e:
        raise (_broadcast_error(x.shape, y.shape) or e) from None


def _binary_device(a: Tensor, bt: Tensor | None) -> Any:
    """The device of a binary op's result: a's, unless a is a 0-dim cpu tensor that met another
    device's tensor (then that device, as torch's scalar-on-cpu rule)."""
    if bt is None or a.device is bt.device or a.device.type != "cpu" or bt.device.type == "cpu":
        return a.device
    return bt.device


def _as_tensor(x: Any, like: Tensor) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return Tensor(to_device_array(np.asarray(x, dtype=like.dtype.np), like.device), like.device)


def _wrap_dim(dim: int, ndim: int) -> int:
    """dim as a non-negative index into ``ndim`` dims, or torch's IndexError when it is out of
    range (a modulo alone would quietly pick another dim). A 0-dim tensor takes dims -1 and 0,
    as torch's."""
    n = ndim if ndim > 0 else 1
    if -n <= dim < n:
        return dim + n if dim < 0 else dim
    raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")


def _dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = (dim,)
    elif len(dim) == 0:
        # torch reads an empty dim list as every dim (numpy's axis=() would reduce none)
        return tuple(range(ndim))
    dims = tuple(sorted(_wrap_dim(d, ndim) for d in dim))
    for i in range(1, len(dims)):
        if dims[i] == dims[i - 1]:
            raise RuntimeError(f"dim {dims[i]} appears multiple times in the list of dims")
    # a 0-dim tensor takes dim 0 (or -1) as torch does, and numpy reduces it over no axis
    return dims if ndim else ()

def _np_aliases(name: str, kw: dict, dim: Any, keepdim: Any) -> tuple[Any, Any]:
    """The numpy spellings torch also takes (axis= for dim=, keepdims= for keepdim=)."""
    if "axis" in kw:
        dim = kw.pop("axis")
    if "keepdims" in kw:
        keepdim = kw.pop("keepdims")
    if kw:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kw))}'")
    return dim, keepdim


def _number_result(d: Any) -> Any:
    # numpy gives a scalar, not a 0-d array, for a 0-d operand: a tensor always holds an array.
    return d if type(d) is np.ndarray or not isinstance(d, np.generic) else np.asarray(d)

def _unary(key: str, a: Tensor, fn, save_self: bool = False, save_result: bool = False,
           floating: bool = False) -> Tensor:
    data = fn(a._data)
    if (floating and data.dtype.kind != "f" and not _dtype.is_bfloat16(data.dtype)) or (
            data.dtype == np.float64 and a.dtype is not _dtype.float64):
        # a floating result in a's floating dtype, an integer's in the default dtype
        data = data.astype(a.dtype.np if a.dtype.is_floating_point else _dtype._default[0].np)
    out = _new(data, a.device)
    if _grad_state.enabled and a._tracked:
        saved = {}
        if save_self:
            saved["self"] = save(a)
        if save_result:
            saved["result"] = save(out, True)
        record(NODES[key], (a,), [out], saved)
    return out


def _float_arg(a: Tensor) -> Any:
    # float32, the half types and integers compute in float64 and round once (in _unary):
    # numpy's float32 kernels can be an ulp off where torch's are not.
    return a._data if a.dtype is _dtype.float64 else a._data.astype(np.float64)

# -- backward formulas ----------------------------------------------------------------------


# Formulas written with tensor ops build the graph a create_graph=True backward needs. Without
# one (grad mode off in the engine: create_graph=False), the hot ones compute on the arrays
# directly and make one tensor: no views, no intermediate tensors, no per-op dispatch. The
# numbers are the same (the same numpy operations in the same order).
_wrap = Tensor._wrap


def _out(data, g):
    """The gradient tensor over ``data``: g's dtype and device when numpy kept them (always, for
    gradients that arrive validated), else what the data says (0-d results, cupy arrays)."""
    dt = g.dtype
    if type(data) is np.ndarray and data.dtype is dt.np:
        return _wrap(data, dt, g.device)
    return _new(data, g.device)


def _saved_data(n, key):
    """The array of saved tensor ``key``, with unpack's checks (released, modified in place)
    but without the tensor unpack builds for a saved output."""
    v = n.saved[key]
    t = v.tensor
    if t is not None and not v.released and t._version_counter[0] == v.version:
        return t._data
    return n[key]._data  # raises unpack's error


def _number_fast(g, c) -> bool:
    """Whether g * c may skip the tensor op: no graph to build, c a Python int or float, g
    floating (numpy then keeps g's dtype, torch's result for a wrapped number)."""
    tc = type(c)
    return not _grad_state.enabled and (tc is float or tc is int) and g.dtype.is_floating_point
