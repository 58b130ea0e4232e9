"""Tensor ops: compute with the array module, then join the graph through the derivative table."""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.graph import SavedVariable
from gradviz.device import CPU, array_module, as_device, device_context, to_device_array
from gradviz.ops import core as _core
from gradviz.ops.core import _ALPHA_ONE, node_class, record, save
from gradviz.ops.derivatives import _OUT_MIN, DERIVATIVES
from gradviz.tensor import Tensor

NODES = {key: node_class(row) for key, row in DERIVATIVES.items()}
# torch saves a Python number operand of mul and div as a tensor (a wrapped number), which a
# backward frees: gradviz keeps the number, and releases it with the node's tensors (OpNode._wrapped).
NODES["mul"]._wrapped = NODES["div"]._wrapped = ("other",)
# The hot paths' node classes, looked up once
_ADD_NODE, _MUL_NODE, _MM_NODE, _TANH_NODE = NODES["add"], NODES["mul"], NODES["mm"], NODES["tanh"]
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
    # A Python number takes the default dtype of its kind (float32 for floats), as torch's
    # wrapped numbers.
    if isinstance(s, (bool, np.bool_)):
        return _dtype.bool_
    if isinstance(s, (int, np.integer)):
        return _dtype.int64
    return _dtype.float32


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
    if type(x) is np.ndarray:
        return np.ascontiguousarray(x)
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
        # Two floating tensors of one dtype on one device (W3's bias adds): that dtype is the
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
        dt = _dtype.float32
    if isinstance(b, Tensor):
        _check_devices(a, b)
        x, y = a._data, b._data
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
    out = op(a._data, b)
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


# -- arithmetic ------------------------------------------------------------------------------


def _number_result(d: Any) -> Any:
    # numpy gives a scalar, not a 0-d array, for a 0-d operand: a tensor always holds an array.
    return d if type(d) is np.ndarray or not isinstance(d, np.generic) else np.asarray(d)


def add(a: Tensor, b: Tensor | Scalar, alpha: Scalar = 1) -> Tensor:
    tb = type(b)
    if (tb is float or tb is int) and alpha == 1 and type(a) is Tensor and a.dtype.is_floating_point:
        # A floating tensor plus a Python number (W1's + 0.0001): the tensor's dtype, one
        # numpy call, no promotion to work out.
        d = a._data + b
        out = _wrap(d if type(d) is np.ndarray else _number_result(d), a.dtype, a.device)
        # a.requires_grad without the property call (a view's flag is its base's)
        if _grad_state.enabled and (a._requires_grad or a._grad_fn is not None
                                    or (a._base is not None and a._base.requires_grad)):
            record(_ADD_NODE, (a, None), [out], _ALPHA_ONE if type(alpha) is int else {"alpha": alpha})
        return out
    if tb is Tensor and alpha == 1 and type(a) is Tensor:
        dt = a.dtype
        if dt is b.dtype and a.device is b.device and dt.is_floating_point:
            # Two floating tensors of one dtype on one device (W3's bias adds, W2's sum of
            # branches): the dtype is the result's; one numpy call.
            try:
                d = a._data + b._data
            except ValueError as e:
                raise (_broadcast_error(a._data.shape, b._data.shape) or e) from None
            out = _wrap(d if type(d) is np.ndarray else _number_result(d), dt, a.device)
            # requires_grad without the property calls (a view's flag is its base's)
            if _grad_state.enabled and (
                a._requires_grad
                or a._grad_fn is not None
                or b._requires_grad
                or b._grad_fn is not None
                or (a._base is not None and a._base.requires_grad)
                or (b._base is not None and b._base.requires_grad)
            ):
                record(_ADD_NODE, (a, b), [out], _ALPHA_ONE if type(alpha) is int else {"alpha": alpha})
            return out
    if not isinstance(a, Tensor):
        return add(_as_tensor(a, b), b, alpha)
    out_data, bt = _binary_data(a, b, (lambda x, y: x + y * alpha) if alpha != 1 else np.add)
    out = _new(out_data, _binary_device(a, bt))
    inputs = (a, bt)
    if _grad_state.enabled and (a.requires_grad or (bt is not None and bt.requires_grad)):
        record(NODES["add"], inputs, [out], {"alpha": alpha})
    return out


def _check_bool_sub(a: Tensor, b: Tensor | Scalar) -> None:
    a_bool = a.dtype is _dtype.bool_
    b_bool = isinstance(b, bool) or (isinstance(b, Tensor) and b.dtype is _dtype.bool_)
    if a_bool and b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if a_bool or (b_bool and isinstance(b, Tensor)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def sub(a: Tensor, b: Tensor | Scalar, alpha: Scalar = 1) -> Tensor:
    _check_bool_sub(a, b)
    out_data, bt = _binary_data(a, b, (lambda x, y: x - y * alpha) if alpha != 1 else np.subtract)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a.requires_grad or (bt is not None and bt.requires_grad)):
        record(NODES["sub"], (a, bt), [out], {"alpha": alpha})
    return out


def rsub(a: Tensor, b: Scalar, alpha: Scalar = 1) -> Tensor:
    """b - alpha * a for a Python number b (torch's RsubBackward1)."""
    _check_bool_sub(a, b)
    out = _new(_cast(_as_array(b - a._data * alpha), _result_dtype_scalar(a, b)), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["rsub"], (a,), [out], {"alpha": alpha})
    return out


def mul(a: Tensor, b: Tensor | Scalar) -> Tensor:
    tb = type(b)
    if (tb is float or tb is int) and a.dtype.is_floating_point:
        # A floating tensor times a Python number (W1's * 1.0001, W2's x * c): as add's.
        d = a._data * b
        out = _wrap(d if type(d) is np.ndarray else _number_result(d), a.dtype, a.device)
        # a.requires_grad without the property call (a view's flag is its base's)
        if _grad_state.enabled and (a._requires_grad or a._grad_fn is not None
                                    or (a._base is not None and a._base.requires_grad)):
            record(_MUL_NODE, (a, None), [out], {"other": b})
        return out
    out_data, bt = _binary_data(a, b, np.multiply)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a.requires_grad or (bt is not None and bt.requires_grad)):
        # Save only what a gradient will need, as torch does (it shows in saved tensors).
        saved: dict[str, Any] = {}
        saved["other"] = save(bt) if (bt is not None and a.requires_grad) else b
        if bt is not None and bt.requires_grad:
            saved["self"] = save(a)
        record(NODES["mul"], (a, bt), [out], saved)
    return out


def mul_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a * b for a Python number b as torch's C++ formulas write it (MulBackward1, one edge)."""
    out = _new(_binary_data(a, b, np.multiply)[0], a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["mul_scalar"], (a,), [out], {"other": b})
    return out


def add_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a + b for a Python number b as torch's C++ formulas write it (AddBackward1)."""
    out = _new(_binary_data(a, b, np.add)[0], a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["add_scalar"], (a,), [out], {})
    return out


def sub_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a - b for a Python number b as torch's C++ formulas write it (SubBackward1)."""
    out = _new(_binary_data(a, b, np.subtract)[0], a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["sub_scalar"], (a,), [out], {})
    return out


def div_scalar(a: Tensor, b: Scalar) -> Tensor:
    """a / b for a Python number b as torch's C++ formulas write it (DivBackward1)."""
    out = _new(_binary_data(a, b, np.true_divide, floating=True)[0], a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["div_scalar"], (a,), [out], {"other": b})
    return out


def masked_fill(a: Tensor, mask: Tensor, value: Tensor | Scalar) -> Tensor:
    """a with ``value`` where mask is true (MaskedFillBackward0 for a number, MaskedFillBackward1
    for a 0-dim tensor, whose gradient is the sum of the masked gradient)."""
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {_dtype.cpp_type_name(mask.dtype)}"
        )
    vt = value if isinstance(value, Tensor) else None
    if vt is not None and vt.ndim != 0:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {vt.ndim} dimension(s)."
        )
    err = _broadcast_error(mask._data.shape, a._data.shape)
    if err is not None:
        raise err
    data = np.where(mask._data, vt._data if vt is not None else value, a._data).astype(a._data.dtype, copy=False)
    out = _new(data, a.device)
    if vt is None:
        if _grad_state.enabled and a.requires_grad:
            record(NODES["masked_fill"], (a,), [out], {"mask": mask.detach()})
    elif _grad_state.enabled and (a.requires_grad or vt.requires_grad):
        record(NODES["masked_fill_tensor"], (a, vt), [out], {"mask": mask.detach()})
    return out


def _check_index_along(op: str, a: Tensor, dim: int, index: Tensor) -> int:
    """gather/scatter's checks, torch's messages: the dim in range, an int64 index of a's rank,
    every index value within the dim (numpy would wrap a negative one, or name an axis)."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    d = _wrap_dim(dim, a.ndim)
    if index.ndim != a.ndim and not (index.ndim <= 1 and a.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    idx = index._data
    if idx.size:
        size = a.shape[d] if a.ndim else 1
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise RuntimeError(f"index {int(idx[bad].ravel()[0])} is out of bounds for dimension {d} with size {size}")
    return d


def scatter(a: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """a with src written at index along dim (torch.scatter, ScatterBackward0)."""
    dim = _check_index_along("scatter", a, dim, index)
    data = a._data.copy()
    np.put_along_axis(data, index._data, src._data, axis=dim)
    out = _new(data, a.device)
    if _grad_state.enabled and (a.requires_grad or src.requires_grad):
        record(NODES["scatter"], (a, src), [out], {"dim": dim, "index": index.detach()})
    return out


def scatter_add(a: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """a with src added at index along dim (repeated indices accumulate; ScatterAddBackward0)."""
    dim = _check_index_along("scatter_add", a, dim, index)
    data = a._data.copy()
    # np.indices(index.shape, sparse=True), made where the data is (numpy's would be host arrays)
    xp = array_module(a.device)
    lead = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (index.ndim - d - 1)) for d, n in enumerate(index.shape)]
    key = tuple(index._data if d == _wrap_dim(dim, a.ndim) else lead[d] for d in range(a.ndim))
    np.add.at(data, key, src._data[tuple(slice(0, n) for n in index.shape)])
    out = _new(data, a.device)
    if _grad_state.enabled and (a.requires_grad or src.requires_grad):
        record(NODES["scatter_add"], (a, src), [out], {"dim": dim, "index": index.detach()})
    return out


def gather(a: Tensor, dim: int, index: Tensor) -> Tensor:
    dim = _check_index_along("gather", a, dim, index)
    out = _new(np.take_along_axis(a._data, index._data, axis=dim), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["gather"], (a,), [out], {"dim": dim, "index": index.detach(), "shape": a.shape})
    return out


def unsqueeze_to(g: Tensor, shape: tuple[int, ...], dim: int | tuple[int, ...] | None = None) -> Tensor:
    """torch's unsqueeze_to: put back the size-1 dims a squeeze removed (all, only ``dim``, or
    those of the sorted dims ``dim`` that had size 1)."""
    if type(dim) is tuple:
        for d in dim:  # ascending: each goes back where it was
            if shape[d] == 1:
                g = unsqueeze(g, d)
        return g
    if dim is not None:
        return unsqueeze(g, dim) if shape and shape[dim] == 1 and g.ndim < len(shape) else g
    for d, size in enumerate(shape):
        if size == 1:
            g = unsqueeze(g, d)
    return g


def div(a: Tensor, b: Tensor | Scalar) -> Tensor:
    out_data, bt = _binary_data(a, b, np.true_divide, floating=True)
    out = _new(out_data, _binary_device(a, bt))
    if _grad_state.enabled and (a.requires_grad or (bt is not None and bt.requires_grad)):
        saved: dict[str, Any] = {"other": save(bt) if bt is not None else b}
        if bt is not None and bt.requires_grad:
            saved["self"] = save(a)
        record(NODES["div"], (a, bt), [out], saved)
    return out


def neg(a: Tensor) -> Tensor:
    if a.dtype is _dtype.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
            "the `~` or `logical_not()` operator instead."
        )
    return _unary("neg", a, np.negative)


def reciprocal(a: Tensor) -> Tensor:
    return _unary("reciprocal", a, lambda x: 1.0 / x, save_result=True, floating=True)


def rdiv(a: Tensor, b: Scalar) -> Tensor:
    """b / a for a Python number b: torch computes reciprocal(a) * b."""
    return mul(reciprocal(a), b)


def pow(a: Tensor | Scalar, exponent: Tensor | Scalar) -> Tensor:  # noqa: A001
    if not isinstance(a, Tensor):
        return _pow_base(a, exponent)
    if isinstance(exponent, Tensor):
        _check_devices(a, exponent)
        data = _cast(np.power(a._data, exponent._data), result_type(a, exponent))
        out = _new(data, a.device)
        if _grad_state.enabled and (a.requires_grad or exponent.requires_grad):
            record(NODES["pow_tensor"], (a, exponent), [out],
                   {"self": save(a), "exponent": save(exponent), "result": save(out, True)})
        return out
    if type(exponent) is int and exponent < 0 and not a.dtype.is_floating_point:
        # numpy raises a ValueError with these words; torch a RuntimeError
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    data = _cast(np.power(a._data, exponent), _result_dtype_scalar(a, exponent))
    out = _new(data, a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["pow_scalar"], (a,), [out], {"self": save(a), "exponent": exponent})
    return out


def _pow_base(base: Scalar, e: Tensor) -> Tensor:
    data = np.power(base, e._data)
    out = _new(_cast(_as_array(data), result_type(base, e)), e.device)
    if _grad_state.enabled and e.requires_grad:
        record(NODES["pow_base"], (e,), [out], {"result": save(out, True), "log_base": math.log(base)})
    return out


def square(a: Tensor) -> Tensor:
    return pow(a, 2)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    return _minmax("maximum", a, b, np.maximum)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    return _minmax("minimum", a, b, np.minimum)


def _minmax(key: str, a: Tensor, b: Tensor, fn) -> Tensor:
    _check_devices(a, b)
    out = _new(_cast(_elementwise(fn, a._data, b._data), result_type(a, b)), a.device)
    if _grad_state.enabled and (a.requires_grad or b.requires_grad):
        record(NODES[key], (a, b), [out], {"self": save(a), "other": save(b)})
    return out


def where(condition: Tensor, a: Tensor | Scalar, b: Tensor | Scalar) -> Tensor:
    if condition.dtype is not _dtype.bool_:
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{_dtype.scalar_type_name(condition.dtype)}"
        )
    dt = result_type(a, b)
    dev = a.device if isinstance(a, Tensor) else b.device if isinstance(b, Tensor) else condition.device
    # Numbers become 0-dim tensors of the result dtype (their edges are (None, 0)).
    at = a if isinstance(a, Tensor) else _new(to_device_array(np.asarray(a, dtype=dt.np), dev), dev)
    bt = b if isinstance(b, Tensor) else _new(to_device_array(np.asarray(b, dtype=dt.np), dev), dev)
    _check_devices(at, bt)
    # torch's message names the first clash, broadcasting condition, then a, then b
    shape = condition._data.shape
    for other in (at._data.shape, bt._data.shape):
        err = _broadcast_error(shape, other)
        if err is not None:
            raise err
        shape = np.broadcast_shapes(shape, other)
    data = np.where(condition._data, at._data, bt._data)
    out = _new(_cast(data, dt), at.device)
    if _grad_state.enabled and (at.requires_grad or bt.requires_grad):
        record(NODES["where"], (at, bt), [out], {"condition": condition.detach()})
    return out


# -- pointwise -------------------------------------------------------------------------------


def _unary(key: str, a: Tensor, fn, save_self: bool = False, save_result: bool = False,
           floating: bool = False) -> Tensor:  # fmt: skip
    data = fn(a._data)
    if (floating and not np.issubdtype(data.dtype, np.floating)) or (
            data.dtype == np.float64 and a.dtype is not _dtype.float64):
        data = data.astype(np.float32)
    out = _new(data, a.device)
    if _grad_state.enabled and a.requires_grad:
        saved = {}
        if save_self:
            saved["self"] = save(a)
        if save_result:
            saved["result"] = save(out, True)
        record(NODES[key], (a,), [out], saved)
    return out


def _float_arg(a: Tensor) -> Any:
    # float32 and integers compute in float64 and round once to float32 (in _unary): numpy's
    # float32 kernels can be an ulp off where torch's are not.
    return a._data if a.dtype is _dtype.float64 else a._data.astype(np.float64)


def abs(a: Tensor) -> Tensor:  # noqa: A001
    return _unary("abs", a, np.abs, save_self=True)


def sqrt(a: Tensor) -> Tensor:
    return _unary("sqrt", a, lambda x: np.sqrt(_float_arg(a)), save_result=True)


def exp(a: Tensor) -> Tensor:
    return _unary("exp", a, lambda x: np.exp(_float_arg(a)), save_result=True)


def log(a: Tensor) -> Tensor:
    return _unary("log", a, lambda x: np.log(_float_arg(a)), save_self=True)


def log1p(a: Tensor) -> Tensor:
    return _unary("log1p", a, lambda x: np.log1p(_float_arg(a)), save_self=True)


def sin(a: Tensor) -> Tensor:
    return _unary("sin", a, lambda x: np.sin(_float_arg(a)), save_self=True)


def cos(a: Tensor) -> Tensor:
    return _unary("cos", a, lambda x: np.cos(_float_arg(a)), save_self=True)


def tanh(a: Tensor) -> Tensor:
    x = a._data
    dt = a.dtype
    if dt.is_floating_point:
        # numpy's own float32 kernel (SIMD), not float64 rounded: 6x faster on W3's activations.
        # Neither matches torch bit for bit; both stay within 1 ulp of it (measured over every
        # 13th float32, tests/test_ops_float32.py).
        data = np.tanh(x)
        if type(data) is not np.ndarray and isinstance(data, np.generic):
            data = np.array(data)
    else:
        data = np.tanh(x.astype(np.float64)).astype(np.float32)
        dt = _dtype.float32
    out = _wrap(data, dt, a.device)
    # a.requires_grad without the property call (a view's flag is its base's)
    if _grad_state.enabled and (
        a._requires_grad or a._grad_fn is not None or (a._base is not None and a._base.requires_grad)
    ):
        record(_TANH_NODE, (a,), [out], {"result": SavedVariable(out, True)})
    return out


def sigmoid(a: Tensor) -> Tensor:
    def fn(x):
        x = _float_arg(a)
        # Split by sign so that exp never overflows.
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)

    return _unary("sigmoid", a, fn, save_result=True)


def relu(a: Tensor) -> Tensor:
    return _unary("relu", a, lambda x: np.maximum(x, 0).astype(x.dtype, copy=False), save_result=True)


def sign(a: Tensor) -> Tensor:
    return _unary("sign", a, np.sign)


def sgn(a: Tensor) -> Tensor:
    return _unary("sgn", a, np.sign)


def clamp(a: Tensor, min: Scalar | None = None, max: Scalar | None = None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = a._data
    data = np.clip(x, min, max).astype(result_type(a, min, max).np, copy=False)
    out = _new(data, a.device)
    if _grad_state.enabled and a.requires_grad:
        mask = ((x >= min) if min is not None else True) & ((x <= max) if max is not None else True)
        record(NODES["clamp"], (a,), [out], {"mask": _new(_as_array(mask), a.device)})
    return out


clip = clamp


# -- comparisons (no gradient) --------------------------------------------------------------


def _compare(fn):
    def op(a: Tensor, b: Tensor | Scalar) -> Tensor:
        if isinstance(b, Tensor):
            _check_devices(a, b)
            return _new(_as_array(_elementwise(fn, a._data, b._data)), a.device)
        return _new(_as_array(fn(a._data, b)), a.device)

    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)


def _bitwise(name: str, fn):
    """The operators &, |, ^ as torch has them: bitwise on integers, logical on bools (the
    promoted dtype is the result's), refused for floats."""

    def op(a: Tensor, b: Tensor | Scalar) -> Tensor:
        dt = result_type(a, b)
        if dt.is_floating_point:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
        if isinstance(b, Tensor):
            _check_devices(a, b)
            data = _elementwise(fn, a._data, b._data)
        else:
            data = fn(a._data, b)
        return _new(_cast(_as_array(data), dt), a.device)

    return op


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)


def bitwise_not(a: Tensor) -> Tensor:
    if a.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _new(np.invert(a._data), a.device)


def logical_not(a: Tensor) -> Tensor:
    return _new(np.logical_not(a._data), a.device)


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    return _new(np.logical_and(a._data, b._data), a.device)


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    return _new(np.logical_or(a._data, b._data), a.device)


def isnan(a: Tensor) -> Tensor:
    return _new(np.isnan(a._data), a.device)


def isinf(a: Tensor) -> Tensor:
    return _new(np.isinf(a._data), a.device)


def isfinite(a: Tensor) -> Tensor:
    return _new(np.isfinite(a._data), a.device)


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    return bool(np.allclose(to_device_array(a._data, CPU), to_device_array(b._data, CPU), rtol, atol))


def equal(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.all(a._data == b._data))


# -- linear algebra --------------------------------------------------------------------------


def _check_float_mm(a: Tensor, b: Tensor) -> None:
    _check_devices(a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_dtype.cpp_type_name(a.dtype)} != "
            f"{_dtype.cpp_type_name(b.dtype)}"
        )


def _colmajor(x: Any) -> bool:
    # torch's test in mm's backward: strides (1, rows), in elements
    item = x.itemsize
    st = x.strides
    return st[0] == item and st[1] == x.shape[0] * item


def _check_mm(a: Tensor, b: Tensor) -> None:
    _check_float_mm(a, b)
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError("self must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )


def mm(a: Tensor, b: Tensor) -> Tensor:
    x, y = a._data, b._data
    dt = a.dtype
    if not (dt is b.dtype and a.device is b.device and x.ndim == 2 and y.ndim == 2 and x.shape[1] == y.shape[0]):
        _check_mm(a, b)  # raises, or passes (equal devices that are distinct objects)
    if _grad_state.enabled:
        # requires_grad and _colmajor inline, SavedVariable without save()'s call.
        ra = a._requires_grad or a._grad_fn is not None or (a._base is not None and a._base.requires_grad)
        rb = b._requires_grad or b._grad_fn is not None or (b._base is not None and b._base.requires_grad)
        if ra or rb:
            item = x.itemsize
            st = x.strides
            c1 = st[0] == item and st[1] == x.shape[0] * item
            st = y.strides
            c2 = st[0] == item and st[1] == y.shape[0] * item
            if ra:
                if rb:
                    saved = {
                        "self_colmajor": c1,
                        "mat2_colmajor": c2,
                        "mat2": SavedVariable(b),
                        "self": SavedVariable(a),
                    }
                else:
                    saved = {"self_colmajor": c1, "mat2_colmajor": c2, "mat2": SavedVariable(b)}
            else:
                saved = {"self_colmajor": c1, "mat2_colmajor": c2, "self": SavedVariable(a)}
            if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype is y.dtype:
                # The node first and the product into its output after, as torch's generated code
                # orders them: the graph building then runs on the caches the ops before left
                # warm, not on those a large product just evicted (2-4x slower there). matmul
                # into a fresh C-contiguous buffer is the same BLAS call as ``x @ y``.
                data = np.empty((x.shape[0], y.shape[1]), x.dtype)
                out = _wrap(data, dt, a.device)
                record(_MM_NODE, (a, b), [out], saved)
                np.matmul(x, y, out=data)
                return out
            out = _wrap(x @ y, dt, a.device)
            record(_MM_NODE, (a, b), [out], saved)
            return out
    return _wrap(x @ y, dt, a.device)


def mv(a: Tensor, v: Tensor) -> Tensor:
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    _check_float_mm(a, v)
    if a.ndim == 2 and v.ndim == 1 and a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})"
        )
    out = _new(a._data @ v._data, a.device)
    if _grad_state.enabled and (a.requires_grad or v.requires_grad):
        saved = {}
        if a.requires_grad:
            saved["vec"] = save(v)
        if v.requires_grad:
            saved["self"] = save(a)
        record(NODES["mv"], (a, v), [out], saved)
    return out


def dot(a: Tensor, b: Tensor) -> Tensor:
    _check_float_mm(a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same "
            f"number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
        )
    out = _new(_as_array(np.dot(a._data, b._data)), a.device)
    if _grad_state.enabled and (a.requires_grad or b.requires_grad):
        saved = {}
        if a.requires_grad:
            saved["tensor"] = save(b)
        if b.requires_grad:
            saved["self"] = save(a)
        record(NODES["dot"], (a, b), [out], saved)
    return out


def bmm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"batch{1 if a.ndim != 3 else 2} must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, {a.shape[2]}] but "
            f"got: [{b.shape[0]}, {b.shape[1]}]."
        )
    _check_float_mm(a, b)
    out = _new(np.matmul(a._data, b._data), a.device)
    if _grad_state.enabled and (a.requires_grad or b.requires_grad):
        saved = {}
        if a.requires_grad:
            saved["mat2"] = save(b)
        if b.requires_grad:
            saved["self"] = save(a)
        record(NODES["bmm"], (a, b), [out], saved)
    return out


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """torch.matmul's dispatch: dot, mv, mm, or folded/batched forms ending in an unsafe view."""
    da, db = a._data.ndim, b._data.ndim
    if da == 2 and db == 2:
        return mm(a, b)
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        # torch squeezes the mm result in place: SqueezeBackward4, and the result is no view.
        r = mm(unsqueeze(a, 0), b)
        out = _new(np.squeeze(r._data, 0), r.device)
        if _grad_state.enabled and r.requires_grad:
            record(NODES["squeeze_dim_"], (r,), [out], {"shape": r.shape, "dim": 0})
        return out
    if _should_fold(a, b):
        # Fold the batch of the larger operand into matrix rows: one mm (or mv) and a view back.
        transpose = db > da
        t1 = _mT(b) if transpose else a
        t2 = (t(a) if da == 2 else a) if transpose else b
        lead = t1.shape[:-1]
        folded = reshape(t1, (int(np.prod(lead)), t1.shape[-1]))
        if t2.ndim == 2:
            r = _unsafe_view(mm(folded, t2), lead + (t2.shape[1],))
            return contiguous(_mT(r)) if transpose else r
        return _unsafe_view(mv(folded, t2), lead)
    # Broadcast the batch dims, then one bmm.
    n = a.shape[-2] if da > 1 else 1
    p = b.shape[-1] if db > 1 else 1
    m2 = b.shape[-2] if db > 1 else b.shape[0]
    ba, bb = a.shape[:-2] if da > 2 else (), b.shape[:-2] if db > 2 else ()
    err = _broadcast_error(ba, bb)
    if err is not None:
        raise err
    batch = tuple(np.broadcast_shapes(ba, bb))
    count = int(np.prod(batch))
    a3 = reshape(expand(a, batch + (n, a.shape[-1])), (count, n, a.shape[-1]))
    if db == 1:
        b3 = unsqueeze(reshape(expand(b, batch + (m2,)), (count, m2)), 2)
    else:
        b3 = reshape(expand(b, batch + (m2, p)), (count, m2, p))
    shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    r = bmm(a3, b3)
    return _unsafe_view(squeeze(r, -1) if db == 1 else r, shape)


def _mT(a: Tensor) -> Tensor:  # noqa: N802 - torch's Tensor.mT
    return transpose(a, -2, -1)


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """torch's should_fold: use mm/mv on the larger operand folded to a matrix when the smaller
    one requires grad (a cheaper backward) or the fold needs no copy."""
    a_larger = a.ndim >= b.ndim
    big_ndim, small = (a.ndim, b) if a_larger else (b.ndim, a)
    if not (big_ndim >= 3 and small.ndim <= 2):
        return False
    if small.requires_grad and _grad_state.enabled:
        return True
    if a.ndim == 2:
        return False
    big = a._data if a_larger else np.swapaxes(b._data, -1, -2)
    if big.size == 0:
        return True
    strides, sizes = big.strides, big.shape
    return builtins.all(strides[i] == strides[i + 1] * sizes[i + 1] for i in range(big.ndim - 1))


# -- reductions ------------------------------------------------------------------------------


def sum(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False,  # noqa: A001
        dtype: _dtype.dtype | None = None) -> Tensor:  # fmt: skip
    x = a._data
    if dim is None:
        data = _as_array(x.sum(dtype=np.int64 if x.dtype == np.bool_ else None))
        out = _new(data if dtype is None else data.astype(dtype.np), a.device)
        if _grad_state.enabled and a.requires_grad:
            record(NODES["sum"], (a,), [out], {"shape": a.shape})
        return out
    dims = _dims(dim, a.ndim)
    data = _as_array(x.sum(axis=dims, keepdims=keepdim, dtype=np.int64 if x.dtype == np.bool_ else None))
    out = _new(data if dtype is None else data.astype(dtype.np), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["sum_dim"], (a,), [out], {"shape": a.shape, "dim": dims, "keepdim": keepdim})
    return out


def mean(a: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    if not a.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_dtype.scalar_type_name(a.dtype)}"
        )
    if a._data.size == 0:
        # nan, as torch's, without numpy's "Mean of empty slice" RuntimeWarnings
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return _mean(a, dim, keepdim)
    return _mean(a, dim, keepdim)


def _mean(a: Tensor, dim: int | Sequence[int] | None, keepdim: bool) -> Tensor:
    if dim is None:
        out = _new(_as_array(a._data.mean()), a.device)
        if _grad_state.enabled and a.requires_grad:
            record(NODES["mean"], (a,), [out], {"shape": a.shape, "count": a.numel()})
        return out
    dims = _dims(dim, a.ndim)
    out = _new(_as_array(a._data.mean(axis=dims, keepdims=keepdim)), a.device)
    if _grad_state.enabled and a.requires_grad:
        count = int(np.prod([a.shape[d] for d in dims])) if dims else 1
        record(NODES["mean_dim"], (a,), [out], {"shape": a.shape, "dim": dims, "keepdim": keepdim,
                                                "count": count})
    return out


class _ValuesIndices(tuple):
    """(values, indices) of max/min over a dim, as torch's namedtuple."""

    _op = "max"

    def __repr__(self) -> str:
        return f"gradviz.return_types.{self._op}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    __str__ = __repr__

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]


def _reduce_select(key: str, a: Tensor, dim: int | Tensor | None, keepdim: bool, fn, argfn):
    if isinstance(dim, Tensor):  # torch.max(a, b) is maximum
        return maximum(a, dim) if key == "max" else minimum(a, dim)
    if dim is None:
        if a.numel() == 0:
            raise RuntimeError(
                f"{key}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        out = _new(_as_array(fn(a._data)), a.device)
        if _grad_state.enabled and a.requires_grad:
            record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True)})
        return out
    d = _wrap_dim(dim, a.ndim)
    idx = _as_array(argfn(a._data, axis=d))
    vals = np.take_along_axis(a._data, np.expand_dims(idx, d), axis=d)
    if not keepdim:
        vals = np.squeeze(vals, d)
    else:
        idx = np.expand_dims(idx, d)
    values, indices = _new(vals, a.device), _new(idx.astype(np.int64), a.device)
    if _grad_state.enabled and a.requires_grad:
        # Only the values output is differentiable; its node has 2 inputs (values, indices).
        record(NODES[key + "_dim"], (a,), [values], {
            "dim": d, "keepdim": keepdim, "indices": indices, "shape": a.shape,
        })
        fn = values.grad_fn
        meta = fn.input_metadata[0]
        fn.input_metadata = (meta, (indices.shape, _dtype.int64, meta[2]))  # plain tuples: see graph.Edge
    result = _ValuesIndices((values, indices))
    result._op = key
    return result


def max(a: Tensor, dim: int | Tensor | None = None, keepdim: bool = False):  # noqa: A001
    return _reduce_select("max", a, dim, keepdim, np.max, np.argmax)


def min(a: Tensor, dim: int | Tensor | None = None, keepdim: bool = False):  # noqa: A001
    return _reduce_select("min", a, dim, keepdim, np.min, np.argmin)


def amax(a: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False) -> Tensor:
    return _amaxmin("amax", a, dim, keepdim, np.max)


def amin(a: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False) -> Tensor:
    return _amaxmin("amin", a, dim, keepdim, np.min)


def _amaxmin(key: str, a: Tensor, dim: Any, keepdim: bool, fn) -> Tensor:
    # An empty dim list (the default) reduces over every dim, as torch.
    dims = tuple(range(a.ndim)) if dim is None or (not isinstance(dim, int) and len(dim) == 0) else _dims(dim, a.ndim)
    out = _new(_as_array(fn(a._data, axis=dims, keepdims=keepdim)), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES[key], (a,), [out], {"self": save(a), "result": save(out, True), "dim": dims,
                                         "keepdim": keepdim})
    return out


def all(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    dim = None if dim is None else _wrap_dim(dim, a.ndim)
    return _new(_as_array(np.all(a._data, axis=dim, keepdims=keepdim)), a.device)


def any(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    dim = None if dim is None else _wrap_dim(dim, a.ndim)
    return _new(_as_array(np.any(a._data, axis=dim, keepdims=keepdim)), a.device)


def argmax(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    if dim is None:
        return _new(_as_array(np.argmax(a._data)), a.device)
    return max(a, dim, keepdim)[1]


def argmin(a: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    if dim is None:
        return _new(_as_array(np.argmin(a._data)), a.device)
    return min(a, dim, keepdim)[1]


def _var_std(key: str, a: Tensor, dim, unbiased: bool | None, keepdim: bool, correction) -> Tensor:
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not a.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(dim, a.ndim)
    n = a.numel() if dims is None else int(np.prod([a.shape[d] for d in dims]))
    denom = builtins.max(n - correction, 0)
    if denom <= 0:
        # torch's one warning (the result is nan or inf), not numpy's RuntimeWarnings
        warnings.warn(
            f"{key}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
            "(input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            data = _as_array(a._data.var(axis=dims, ddof=correction, keepdims=keepdim))
    else:
        data = _as_array(a._data.var(axis=dims, ddof=correction, keepdims=keepdim))
    if key == "std":
        data = np.sqrt(data)
    out = _new(data.astype(a._data.dtype, copy=False), a.device)
    if _grad_state.enabled and a.requires_grad:
        saved = {"self": save(a), "dim": dims, "keepdim": keepdim, "denom": denom}
        if key == "std":
            saved["result"] = save(out, True)
        record(NODES[key], (a,), [out], saved)
    return out


def var(a: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    return _var_std("var", a, dim, unbiased, keepdim, correction)


def std(a: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    return _var_std("std", a, dim, unbiased, keepdim, correction)


def softmax(a: Tensor, dim: int, dtype: _dtype.dtype | None = None) -> Tensor:
    dim = _wrap_dim(dim, a.ndim)
    x = a._data if dtype is None else a._data.astype(dtype.np)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    out = _new(e / e.sum(axis=dim, keepdims=True), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["softmax"], (a,), [out], {"result": save(out, True), "dim": dim % a.ndim})
    return out


def log_softmax(a: Tensor, dim: int, dtype: _dtype.dtype | None = None) -> Tensor:
    if not -a._data.ndim <= dim < a._data.ndim:
        dim = _wrap_dim(dim, a._data.ndim)  # torch's IndexError (a 0-dim tensor takes 0 and -1)
    x = a._data if dtype is None else a._data.astype(dtype.np)
    if type(x) is np.ndarray and x.ndim:
        # shifted - log(sum(exp(shifted))) with the shifted buffer reused for the result, and
        # the ufuncs' reductions called directly (the same numbers, fewer temporaries and wrappers).
        if x.ndim == 2 and (dim == 1 or dim == -1) and x.shape[1] <= 64:
            # Short rows (W3's 10 classes): numpy's max along a short inner axis costs 4 us on
            # 64x10, along the outer axis of a transposed copy 1.6 (max is exact either way).
            shifted = x - np.maximum.reduce(np.ascontiguousarray(x.T), axis=0)[:, None]
        else:
            shifted = x - np.maximum.reduce(x, axis=dim, keepdims=True)
        lse = np.add.reduce(np.exp(shifted), axis=dim, keepdims=True)
        np.log(lse, out=lse)
        out = _new(np.subtract(shifted, lse, out=shifted), a.device)
    else:
        shifted = x - x.max(axis=dim, keepdims=True)
        out = _new(shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True)), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["log_softmax"], (a,), [out], {"result": save(out, True), "dim": dim % a.ndim})
    return out


# -- backward ops: torch's fused gradient kernels, recorded when a backward builds a graph ----


def _backward_op(key: str, grad: Tensor, saved: Tensor, data: Any, extra: dict) -> Tensor:
    out = _new(data, grad.device)
    if _grad_state.enabled and (grad.requires_grad or saved.requires_grad):
        record(NODES[key], (grad, saved), [out], {"grad_output": save(grad), "output": save(saved), **extra})
    return out


# The kernels on arrays: the backward formulas call these directly when no graph is being built
# (create_graph off), the Tensor functions below when one may be.
#
# A kernel builds its result in one fresh buffer with out= when y is a numpy array of at least
# _OUT_MIN elements and g has its dtype and shape: the temporaries saved then cost more than
# out='s own overhead (measured: break-even at 2-4k elements, 1.5 us saved at 16k). The test is
# written out in each kernel: W2 calls them a thousand times on 16 elements, where a call shows.
# (_OUT_MIN itself is defined in derivatives.py, whose formulas test it too.)


def _threshold_backward_kernel(g: Any, a: Any, threshold: float) -> Any:
    return np.where(a > threshold, g, 0).astype(g.dtype, copy=False)


def _tanh_backward_kernel(g: Any, y: Any) -> Any:
    """g * (1 - y * y)."""
    if type(y) is np.ndarray and y.size >= _OUT_MIN and g.dtype is y.dtype and g.shape == y.shape:
        # One buffer: the same roundings, two fewer temporaries (1.5 us on a 64x256 gradient).
        data = y * y
        np.subtract(1, data, out=data)
        np.multiply(g, data, out=data)
        return data
    return g * (1 - y * y)


def _sigmoid_backward_kernel(g: Any, y: Any) -> Any:
    """g * y * (1 - y), multiplied left to right."""
    if type(y) is np.ndarray and y.size >= _OUT_MIN and g.dtype is y.dtype and g.shape == y.shape:
        data = g * y
        np.multiply(data, 1 - y, out=data)
        return data
    return g * y * (1 - y)


def _softmax_backward_kernel(g: Any, y: Any, dim: int) -> Any:
    """y * (g - sum(g * y, dim))."""
    return y * (g - (g * y).sum(axis=dim, keepdims=True))


def _log_softmax_backward_kernel(g: Any, y: Any, dim: int) -> Any:
    """g - exp(y) * sum(g, dim)."""
    if type(y) is np.ndarray and y.size >= _OUT_MIN and g.dtype is y.dtype and g.shape == y.shape:
        data = np.exp(y)
        np.multiply(data, np.add.reduce(g, axis=dim, keepdims=True), out=data)
        np.subtract(g, data, out=data)
        return data
    gsum = np.add.reduce(g, axis=dim, keepdims=True) if type(g) is np.ndarray else g.sum(axis=dim, keepdims=True)
    return g - np.exp(y) * gsum


def threshold_backward(grad: Tensor, a: Tensor, threshold: float) -> Tensor:
    """grad where a > threshold, else 0 (relu's backward)."""
    data = _threshold_backward_kernel(grad._data, a._data, threshold)
    return _backward_op("threshold_backward", grad, a, data, {"threshold": threshold})


def tanh_backward(grad: Tensor, y: Tensor) -> Tensor:
    return _backward_op("tanh_backward", grad, y, _tanh_backward_kernel(grad._data, y._data), {})


def sigmoid_backward(grad: Tensor, y: Tensor) -> Tensor:
    return _backward_op("sigmoid_backward", grad, y, _sigmoid_backward_kernel(grad._data, y._data), {})


def softmax_backward_data(grad: Tensor, y: Tensor, dim: int) -> Tensor:
    data = _softmax_backward_kernel(grad._data, y._data, dim)
    return _backward_op("softmax_backward_data", grad, y, data, {"dim": dim})


def log_softmax_backward_data(grad: Tensor, y: Tensor, dim: int) -> Tensor:
    data = _log_softmax_backward_kernel(grad._data, y._data, dim)
    return _backward_op("log_softmax_backward_data", grad, y, data, {"dim": dim})


# -- shapes and views ------------------------------------------------------------------------


def _infer_shape(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        if known == 0 and numel == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified dimension "
                "size -1 can be any value and is ambiguous"
            )
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if int(np.prod(shape)) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _view_of(a: Tensor, data: Any, key: str, saved: dict) -> Tensor:
    """A view: shares a's version counter; a node if a requires grad."""
    out = _new(data, a.device)
    out._version_counter = a._version_counter
    out._view_version = a._version_counter[0]
    out._base = a if a._base is None else a._base
    if a.requires_grad:
        if _grad_state.enabled:
            record(NODES[key], (a,), [out], saved)
        else:
            out._view_no_grad = True
    return out


def _view_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> list[int] | None:
    """torch's computeStride: strides (in elements) viewing ``shape``/``strides`` as ``new``, or
    None when that needs a copy. Follows torch rather than numpy, which refuses some views torch
    makes (all-zero strides of an expanded tensor)."""
    if not shape:
        return [1] * len(new)
    numel = int(np.prod(shape))
    if numel == 0:
        if tuple(shape) == tuple(new):
            return list(strides)
        out = [0] * len(new)
        for d in range(len(new) - 1, -1, -1):
            out[d] = 1 if d == len(new) - 1 else builtins.max(new[d + 1], 1) * out[d + 1]
        return out
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_base_stride
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    return out if view_d == -1 else None


def _try_view(x: Any, shape: tuple[int, ...]) -> Any | None:
    item = x.itemsize
    st = _view_strides(x.shape, tuple(s // item for s in x.strides), tuple(shape))
    if st is None:
        return None
    if hasattr(x, "__array_interface__"):
        return np.lib.stride_tricks.as_strided(x, shape, tuple(s * item for s in st), writeable=x.flags.writeable)
    return x.reshape(shape)  # cupy: its own no-copy reshape


def view(a: Tensor, *shape: Any) -> Tensor:
    shape = _infer_shape(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape,
                         a.numel())
    data = _try_view(a._data, shape)
    if data is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension "
            "spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return _view_of(a, data, "view", {"shape": a.shape})


def reshape(a: Tensor, *shape: Any) -> Tensor:
    shape = _infer_shape(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape,
                         a.numel())
    data = _try_view(a._data, shape)
    if data is not None:
        # torch views contiguous data; strided data that still allows a view is _reshape_alias.
        key = "view" if a._data.flags["C_CONTIGUOUS"] else "reshape_alias"
        return _view_of(a, data, key, {"shape": a.shape})
    # Not expressible as a view: torch copies (CloneBackward0) and views the copy unsafely.
    return _unsafe_view(clone(a, contiguous=True), shape)


def _unsafe_view(a: Tensor, shape: tuple[int, ...]) -> Tensor:
    out = _new(_ascontiguous(a._data).reshape(shape), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["unsafe_view"], (a,), [out], {"shape": a.shape})
    return out


def flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if a.ndim == 0:
        return reshape(a, (1,))
    s, e = _wrap_dim(start_dim, a.ndim), _wrap_dim(end_dim, a.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    shape = a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:]
    return reshape(a, shape)


def t(a: Tensor) -> Tensor:
    if a.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {a.ndim}D")
    return _view_of(a, a._data.T, "t", {})


def transpose(a: Tensor, dim0: int, dim1: int) -> Tensor:
    d0, d1 = _wrap_dim(dim0, a.ndim), _wrap_dim(dim1, a.ndim)
    return _view_of(a, np.swapaxes(a._data, d0, d1), "transpose", {"dim0": d0, "dim1": d1})


def permute(a: Tensor, *dims: Any) -> Tensor:
    dims = tuple(dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)
    if len(dims) != a.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {a.ndim} is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(_wrap_dim(d, a.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = tuple(int(i) for i in np.argsort(dims))
    return _view_of(a, np.transpose(a._data, dims), "permute", {"inverse": inverse})


def unsqueeze(a: Tensor, dim: int) -> Tensor:
    d = _wrap_dim(dim, a.ndim + 1)
    return _view_of(a, np.expand_dims(a._data, d), "unsqueeze", {"dim": d})


def unsqueeze_dims(g: Tensor, dims: Sequence[int], ndim: int) -> Tensor:
    """Re-insert reduced dims (sorted, non-negative) into g: a chain of unsqueezes."""
    for d in sorted(dims):
        g = unsqueeze(g, d)
    return g


def squeeze(a: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    if dim is None:
        return _view_of(a, np.squeeze(a._data), "squeeze", {"shape": a.shape})
    if isinstance(dim, (tuple, list)):
        # torch's squeeze.dims (SqueezeBackward2): of the dims listed, those of size 1 go
        dims = _dims(dim, a.ndim) if dim else ()
        gone = tuple(d for d in dims if a.shape[d] == 1)
        return _view_of(a, np.squeeze(a._data, gone) if gone else a._data, "squeeze_dims",
                        {"shape": a.shape, "dims": dims})  # fmt: skip
    if a.ndim == 0:
        return _view_of(a, a._data, "squeeze_dim", {"shape": a.shape, "dim": None})
    d = _wrap_dim(dim, a.ndim)
    data = np.squeeze(a._data, d) if a.shape[d] == 1 else a._data
    return _view_of(a, data, "squeeze_dim", {"shape": a.shape, "dim": d})


def expand(a: Tensor, *shape: Any) -> Tensor:
    shape = tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)
    lead = len(shape) - a.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand(gradviz.{_dtype.scalar_type_name(a.dtype)}Tensor{{{list(a.shape)}}}, size={list(shape)}): the "
            f"number of sizes provided ({len(shape)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({a.ndim})"
        )
    # torch's checks, in its order: from the last dim to the first
    for i in range(len(shape) - 1, -1, -1):
        if i < lead:
            if shape[i] == -1:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                )
            continue
        have = a.shape[i - lead]
        if shape[i] != -1 and have != 1 and have != shape[i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[i]}) must match the existing size ({have}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: {list(a.shape)}"
            )
    full = tuple(a.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    data = np.broadcast_to(a._data, full)
    return _view_of(a, data, "expand", {"shape": a.shape})


def expand_as(a: Tensor, other: Tensor) -> Tensor:
    return expand(a, other.shape)


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum g over the dims that broadcasting added or stretched, back to ``shape``."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    x = g._data
    xs = x.shape
    if xs == shape:
        return g
    if not (_grad_state.enabled and g.requires_grad) and g.dtype.is_floating_point:
        # No graph to record: the same numpy reduction as below, without the ops around it.
        lead = len(xs) - len(shape)
        if shape and lead > 0 and xs[lead:] == shape and type(x) is np.ndarray:
            # Only leading dims summed (a bias): the result has the shape already, and owns its
            # memory (so AccumulateGrad can take it without a copy).
            return _wrap(np.add.reduce(x, 0 if lead == 1 else tuple(range(lead))), g.dtype, g.device)
        if not shape:
            return _new(_as_array(x.sum()), g.device)
        lead = x.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
        if not dims and not lead:
            return g
        if lead and dims == tuple(range(lead)):
            # Only leading dims summed (a bias): the result has the shape already, and owns its
            # memory (so AccumulateGrad can take it without a copy).
            return _new(x.sum(axis=dims), g.device)
        data = x.sum(axis=dims, keepdims=True) if dims else x
        return _new(data.reshape(shape) if lead else data, g.device)
    if not shape:
        return sum(g)
    lead = g.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if dims:
        g = sum(g, dims, keepdim=True)
    if lead:
        g = view(g, shape) if g.numel() == int(np.prod(shape)) else reshape(g, shape)
    return g


_core._sum_to = sum_to  # what OpNode's backward sums broadcast gradients with


# -- indexing --------------------------------------------------------------------------------


def _normalize_key(key: Any) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    return key


def select(a: Tensor, dim: int, index: int) -> Tensor:
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(a.shape)} at dimension {d}")
    idx = (slice(None),) * d + (index % size,)
    return _view_of(a, a._data[idx + (Ellipsis,)], "select", {"shape": a.shape, "key": idx})


_SEQUENCE_KEY_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use "
    "x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
    "x[gradviz.tensor(seq)], which will result either in an error or a different result"
)


def legacy_sequence_key(key: Any) -> Any:
    """torch's legacy rule: a short list holding a slice, None, Ellipsis, a tensor or a sequence
    indexes like the tuple of its items (with torch's deprecation warning), not like a tensor."""
    if type(key) is list and len(key) < 32:
        for k in key:
            if k is None or k is Ellipsis or isinstance(k, (slice, Tensor, list, tuple)):
                warnings.warn(_SEQUENCE_KEY_WARNING, UserWarning, stacklevel=3)
                return tuple(key)
    return key


def getitem(a: Tensor, key: Any) -> Tensor:
    """Indexing as torch decomposes it: select per int, slice per non-trivial slice, unsqueeze per
    None, then one IndexBackward0 for all tensor/list indices together."""
    if type(key) is list:
        key = legacy_sequence_key(key)
    # torch's single-index fast paths: a lone slice is always sliced (even a full one), a lone
    # Ellipsis is an alias.
    if isinstance(key, slice):
        start, stop, step = key.indices(a.shape[0]) if a.ndim else (0, 0, 1)
        if a.ndim == 0:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        if step <= 0:
            raise ValueError("step must be greater than zero")
        idx = (slice(start, stop, step),)
        return _view_of(a, a._data[idx], "slice", {"shape": a.shape, "key": idx})
    if key is Ellipsis:
        return alias(a)
    if a.ndim == 0 and isinstance(key, int) and not isinstance(key, bool):
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert "
            "a 0-dim tensor to a number"
        )
    key = _normalize_key(key)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis
                          and not (isinstance(k, Tensor) and k.dtype is _dtype.bool_))
    n_real += builtins.sum(k.ndim for k in key if isinstance(k, Tensor) and k.dtype is _dtype.bool_)
    if n_real > a.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a.ndim}")
    out = a
    dim = 0
    advanced: list[tuple[int, Any]] = []
    for k in key:
        if k is Ellipsis:
            dim += a.ndim - n_real
        elif k is None:
            out = unsqueeze(out, dim)
            dim += 1
        elif isinstance(k, bool):
            raise IndexError("gradviz does not support bool scalars as indices")
        elif isinstance(k, float):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                "(got float)"
            )
        elif isinstance(k, int) or (isinstance(k, Tensor) and k.ndim == 0 and k.dtype is _dtype.int64):
            k = int(k)
            size = out.shape[dim]
            if not -size <= k < size:
                raise IndexError(
                    f"index {k} is out of bounds for dimension {dim} with size {size}"
                )
            idx = (slice(None),) * dim + (k % size,)
            out = _view_of(out, out._data[idx + (Ellipsis,)], "select", {"shape": out.shape, "key": idx})
        elif isinstance(k, slice):
            start, stop, step = k.indices(out.shape[dim])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if (start, stop, step) != (0, out.shape[dim], 1):
                idx = (slice(None),) * dim + (slice(start, stop, step),)
                out = _view_of(out, out._data[idx], "slice", {"shape": out.shape, "key": idx})
            dim += 1
        else:
            # a list index goes where the data is (a host array would meet device data)
            arr = k._data if isinstance(k, Tensor) else array_module(a.device).asarray(k)
            _check_index_array(arr, out.shape, dim)
            advanced.append((dim, arr))
            dim += arr.ndim if arr.dtype == np.bool_ else 1
    if advanced:
        idx_list: list[Any] = [slice(None)] * out.ndim
        for d, arr in advanced:
            if arr.dtype == np.bool_:
                for j, part in enumerate(np.nonzero(arr)):
                    idx_list[d + j] = part
            else:
                idx_list[d] = arr
        idx = tuple(idx_list)
        data = out._data[idx]
        # torch's index output is contiguous; numpy's puts the indexed dims' layout first.
        res = _new(_c_copy(data), out.device)
        if _grad_state.enabled and out.requires_grad:
            record(NODES["index"], (out,), [res], {"shape": out.shape, "key": idx})
        out = res
    if out is a:
        # Nothing applied (x[:, :], x[..., :]): torch returns an alias, not x itself.
        out = alias(a)
    return out


def _check_index_array(arr: Any, shape: tuple[int, ...], dim: int) -> None:
    """torch's IndexErrors for a tensor (or list) index at ``dim`` (numpy's would name axes, or
    take a bool mask of the wrong shape)."""
    if arr.dtype == np.bool_:
        for j, n in enumerate(arr.shape):
            if dim + j >= len(shape) or shape[dim + j] != n:
                raise IndexError(
                    f"The shape of the mask {list(arr.shape)} at index {j} does not match the shape of the indexed "
                    f"tensor {list(shape)} at index {dim + j}"
                )
        return
    if arr.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    size = shape[dim]
    bad = (arr >= size) | (arr < -size)
    if bad.any():
        # torch names the first bad value, and dimension 0 whichever dim it indexes
        v = int(arr[bad].ravel()[0])
        raise IndexError(f"index {v} is out of bounds for dimension 0 with size {size}")


def alias(a: Tensor) -> Tensor:
    return _view_of(a, a._data.view(), "alias", {})


def getitem_raw(g: Tensor, key: tuple, kind: str) -> Tensor:
    """g[key] with a normalized numpy key: a select or slice view, or an index copy (the double
    backward of the indexing nodes)."""
    if kind != "index":
        return _view_of(g, g._data[key + (Ellipsis,)], kind, {"shape": g.shape, "key": key})
    res = _new(_c_copy(g._data[key]), g.device)
    if _grad_state.enabled and g.requires_grad:
        record(NODES["index"], (g,), [res], {"shape": g.shape, "key": key})
    return res


def index_backward(g: Tensor, shape: tuple[int, ...], key: tuple, kind: str) -> Tensor:
    """Zeros of ``shape`` with g added at ``key`` (repeated indices accumulate).

    Recorded as torch's kernels are: select_backward / slice_backward, or for tensor indices an
    in-place _index_put_impl_ into new zeros (whose first input, the zeros, needs no gradient)."""
    xp = array_module(g.device)
    data = xp.zeros(shape, dtype=g._data.dtype)
    if kind == "index":
        np.add.at(data, key, g._data)
    else:
        data[key] = g._data
    out = _new(data, g.device)
    if _grad_state.enabled and g.requires_grad:
        inputs = (None, g) if kind == "index" else (g,)
        record(NODES[kind + "_backward"], inputs, [out], {"key": key})
    return out


# -- joining and splitting -------------------------------------------------------------------


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    if isinstance(tensors, Tensor):  # iterating it would cat its rows
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t_ in enumerate(tensors):
        if t_.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = _wrap_dim(dim, tensors[0].ndim)
    first = tensors[0]
    for i, t_ in enumerate(tensors[1:], 1):
        _check_devices(first, t_)
        if t_.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {t_.ndim}")
        for j in range(first.ndim):
            if j != d and t_.shape[j] != first.shape[j]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {first.shape[j]} but got "
                    f"size {t_.shape[j]} for tensor number {i} in the list."
                )
    # torch's cat is always contiguous; numpy keeps the inputs' layout (F-order for broadcasts),
    # which would change later view/reshape decisions.
    dt = result_type(*tensors) if builtins.any(t_.dtype is not tensors[0].dtype for t_ in tensors) else tensors[0].dtype
    data = np.concatenate([t_._data for t_ in tensors], axis=d)
    out = _new(_ascontiguous(_cast(data, dt)), tensors[0].device)
    if _grad_state.enabled and builtins.any(t_.requires_grad for t_ in tensors):
        record(NODES["cat"], tuple(tensors), [out], {"sizes": [t_.shape[d] for t_ in tensors], "dim": d})
    return out


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    if isinstance(tensors, Tensor):  # iterating it would stack its rows
        raise TypeError("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = _wrap_dim(dim, tensors[0].ndim + 1)
    for i, t_ in enumerate(tensors[1:], 1):  # by position: list.index would compare tensors with ==
        _check_devices(tensors[0], t_)
        if t_.shape != tensors[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                f"entry 0 and {list(t_.shape)} at entry {i}"
            )
    dt = result_type(*tensors) if builtins.any(t_.dtype is not tensors[0].dtype for t_ in tensors) else tensors[0].dtype
    out = _new(_ascontiguous(_cast(np.stack([t_._data for t_ in tensors], axis=d), dt)), tensors[0].device)
    if _grad_state.enabled and builtins.any(t_.requires_grad for t_ in tensors):
        record(NODES["stack"], tuple(tensors), [out], {"dim": d})
    return out


def _split_outputs(key: str, a: Tensor, pieces: list[Any], d: int, saved: dict) -> tuple[Tensor, ...]:
    outs = [_new(p, a.device) for p in pieces]
    for o in outs:
        o._version_counter = a._version_counter
        o._view_version = a._version_counter[0]
        o._base = a if a._base is None else a._base
    if _grad_state.enabled and a.requires_grad:
        saved.update({"sizes": [o.shape for o in outs], "dim": d, "dtype": a.dtype, "device": a.device})
        record(NODES[key], (a,), outs, saved)
    return tuple(outs)


def split(a: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, a.ndim)
    size = a.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        bounds = list(range(step, size, step))
    else:
        if builtins.sum(split_size_or_sections) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
                f"at dimension {d}), but got split_sizes={list(split_size_or_sections)}"
            )
        bounds = list(np.cumsum(split_size_or_sections)[:-1])
        return _split_outputs("split_with_sizes", a, np.split(a._data, bounds, axis=d), d, {})
    return _split_outputs("split", a, np.split(a._data, bounds, axis=d), d, {})


def split_sizes(g: Tensor, sizes: Sequence[int], dim: int) -> list[Tensor]:
    """Pieces of g along dim with the given sizes (used by cat's backward)."""
    out, start = [], 0
    for s in sizes:
        idx = (slice(None),) * dim + (slice(start, start + s),)
        out.append(_view_of(g, g._data[idx], "slice", {"shape": g.shape, "key": idx}))
        start += s
    return out


def chunk(a: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = a.shape[_wrap_dim(dim, a.ndim)]
    step = -(-size // chunks)
    return split(a, step, dim)


def unbind(a: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _wrap_dim(dim, a.ndim)
    # Views of a (np.take would copy: a later in-place change of a would not show in them).
    pieces = [a._data[(slice(None),) * d + (i, Ellipsis)] for i in range(a.shape[d])]
    return _split_outputs("unbind", a, pieces, d, {})


# -- copies ----------------------------------------------------------------------------------


def _dense_non_overlapping(x: Any) -> bool:
    """Whether x's elements fill its memory exactly, in some order of dims (torch's
    is_non_overlapping_and_dense): then a copy may keep the layout."""
    dims = sorted((st, n) for st, n in zip(x.strides, x.shape) if n != 1)
    expected = x.itemsize
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def clone(a: Tensor, contiguous: bool = False) -> Tensor:
    # torch's clone preserves a dense layout (a transposed tensor stays transposed), which decides
    # later view/reshape behaviour; numpy's order="K" does the same. Other layouts (expanded,
    # strided) copy to contiguous, as does reshape's copy.
    keep = not contiguous and _dense_non_overlapping(a._data)
    out = _new(a._data.copy(order="K" if keep else "C"), a.device)
    if _grad_state.enabled and a.requires_grad:
        record(NODES["clone"], (a,), [out], {})
    return out


def contiguous(a: Tensor) -> Tensor:
    if a._data.flags["C_CONTIGUOUS"]:  # numpy and cupy arrays alike
        return a
    return clone(a, contiguous=True)


def to_copy(a: Tensor, dtype: _dtype.dtype | None = None, device: Any = None) -> Tensor:
    """A copy in another dtype and/or on another device (ToCopyBackward0)."""
    dev = as_device(device) if device is not None else a.device
    dt = dtype or a.dtype
    if dev == a.device and dt is a.dtype:
        return a
    src = a._data
    # The cast where the data is (astype: numpy's or cupy's, a new array, made under the source's
    # GPU), then the move: a gpu's data never goes through host memory for a cast or a copy to
    # another gpu (to_device_array copies between gpus under the target's device).
    if src.dtype == dt.np:
        data = src
    elif a.device.type == "cuda":
        with device_context(a.device):
            data = src.astype(dt.np)
    else:
        data = src.astype(dt.np)
    if dev != a.device:
        data = to_device_array(data, dev)
    if data is src:  # no cast, and a move between numpy devices, which share host memory
        data = src.copy()
    out = _new(data, dev)
    if _grad_state.enabled and a.requires_grad:
        if not dt.is_floating_point:
            return out
        record(NODES["to_copy"], (a,), [out], {"dtype": a.dtype, "device": a.device})
    return out


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
