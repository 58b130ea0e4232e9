"""Activations: tanh, sigmoid, relu, clamp (and clamp_min, clamp_max), softmax, log_softmax, and torch's fused backward
kernels (threshold_backward, tanh_backward, ...) that a create_graph backward records."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import module_of
from gradviz.ops import arith as _arith
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops import views as _views
from gradviz.ops._common import (
    NODES,
    Scalar,
    _as_array,
    _ascontiguous,
    _check_devices,
    _elementwise,
    _float_arg,
    _new,
    _out,
    _saved_data,
    _unary,
    _wrap,
    _wrap_dim,
    register,
    result_type,
)
from gradviz.ops.construction import (
    _zero_scalar,
    _zeros,
)
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "clamp", "clamp_max", "clamp_min", "clip", "log_softmax", "relu", "sigmoid", "softmax", "tanh",
]


def tanh(a: Tensor) -> Tensor:
    x = a._data
    dt = a.dtype
    if dt.is_floating_point:
        # Any floating tensor: numpy's own kernel for its dtype (SIMD for float32), not float64
        # rounded, 6x faster on float32.
        # Neither matches torch bit for bit; both stay within 1 ulp of it (measured over every
        # 13th float32, tests/ops/test_ops_float32.py).
        data = np.tanh(x)
        if type(data) is not np.ndarray and isinstance(data, np.generic):
            data = np.array(data)
    else:
        data = np.tanh(x.astype(np.float64)).astype(np.float32)
        dt = _dtype.float32
    out = _wrap(data, dt, a.device)
    # a._tracked without the property call (a view's flag is its base's)
    if _grad_state.enabled and (
        a._requires_grad or a._grad_fn is not None or (a._base is not None and a._base._tracked)
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


def clamp(a: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(a, min, max)
    x = a._data
    data = np.clip(x, min, max).astype(result_type(a, min, max).np, copy=False)
    out = _new(data, a.device)
    if _grad_state.enabled and a._tracked:
        mask = ((x >= min) if min is not None else True) & ((x <= max) if max is not None else True)
        record(NODES["clamp"], (a,), [out], {"mask": _new(_as_array(mask), a.device)})
    return out


clip = clamp


def _clamp_tensor(a: Tensor, lo: Tensor | None, hi: Tensor | None) -> Tensor:
    """clamp with tensor bounds, broadcast against a (ClampBackward0: edges to a, min and max)."""
    if not all(b is None or isinstance(b, Tensor) for b in (lo, hi)):
        raise TypeError("clamp() received an invalid combination of arguments - got a Tensor bound and a number")
    for b in (lo, hi):
        if b is not None:
            _check_devices(a, b)
    x = a._data
    dt = result_type(a, lo, hi)
    data = x
    if lo is not None:
        data = _elementwise(np.maximum, data, lo._data)
    if hi is not None:
        data = _elementwise(np.minimum, data, hi._data)
    out = _new(_as_array(data).astype(dt.np, copy=False), a.device)
    if _grad_state.enabled and (a._tracked or any(b is not None and b._tracked for b in (lo, hi))):
        shape = out._data.shape
        inside = module_of(x).ones(shape, bool)  # made where x is (cupy's for device data)
        saved = {}
        if lo is not None:
            inside &= np.broadcast_to(x >= lo._data, shape)
            saved["min_mask"] = _new(_ascontiguous(np.broadcast_to(x < lo._data, shape)), a.device)
        if hi is not None:
            inside &= np.broadcast_to(x <= hi._data, shape)
            saved["max_mask"] = _new(_ascontiguous(np.broadcast_to(x > hi._data, shape)), a.device)
        saved["mask"] = _new(inside, a.device)
        record(NODES["clamp_tensor"], (a, lo, hi), [out], saved)
    return out


def _clamp_one(key: str, a: Tensor, bound: Scalar) -> Tensor:
    x = a._data
    lo, hi = (bound, None) if key == "clamp_min" else (None, bound)
    data = np.clip(x, lo, hi).astype(result_type(a, bound).np, copy=False)
    out = _new(data, a.device)
    if _grad_state.enabled and a._tracked:
        mask = (x >= bound) if key == "clamp_min" else (x <= bound)
        record(NODES[key], (a,), [out], {"mask": _new(_as_array(mask), a.device)})
    return out


def clamp_min(a: Tensor, min: Scalar) -> Tensor:  # noqa: A002
    return _clamp_one("clamp_min", a, min)


def clamp_max(a: Tensor, max: Scalar) -> Tensor:  # noqa: A002
    return _clamp_one("clamp_max", a, max)


def softmax(a: Tensor, dim: int, dtype: _dtype.dtype | None = None) -> Tensor:
    dim = _wrap_dim(dim, a.ndim)
    if dtype is not None and dtype is not a.dtype:  # torch casts first: a ToCopyBackward0 below
        a = _views.to_copy(a, dtype)
    x = a._data
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    out = _new(e / e.sum(axis=dim, keepdims=True), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["softmax"], (a,), [out], {"result": save(out, True), "dim": dim % a.ndim})
    return out


def log_softmax(a: Tensor, dim: int, dtype: _dtype.dtype | None = None) -> Tensor:
    if not -a._data.ndim <= dim < a._data.ndim:
        dim = _wrap_dim(dim, a._data.ndim)  # torch's IndexError (a 0-dim tensor takes 0 and -1)
    if dtype is not None and dtype is not a.dtype:  # torch casts first: a ToCopyBackward0 below
        a = _views.to_copy(a, dtype)
    x = a._data
    if type(x) is np.ndarray and x.ndim:
        # shifted - log(sum(exp(shifted))) with the shifted buffer reused for the result, and
        # the ufuncs' reductions called directly (the same numbers, fewer temporaries and wrappers).
        if x.ndim == 2 and (dim == 1 or dim == -1) and x.shape[1] <= 64:
            # A matrix with short rows (up to 64 classes): numpy's max along a short inner axis costs 4 us on
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
    if _grad_state.enabled and a._tracked:
        record(NODES["log_softmax"], (a,), [out], {"result": save(out, True), "dim": dim % a.ndim})
    return out


# -- backward ops: torch's fused gradient kernels, recorded when a backward builds a graph ----


def _backward_op(key: str, grad: Tensor, saved: Tensor, data: Any, extra: dict) -> Tensor:
    out = _new(data, grad.device)
    if _grad_state.enabled and (grad._tracked or saved._tracked):
        record(NODES[key], (grad, saved), [out], {"grad_output": save(grad), "output": save(saved), **extra})
    return out


# The kernels on arrays: the backward formulas call these directly when no graph is being built
# (create_graph off), the Tensor functions below when one may be.
#
# A kernel builds its result in one fresh buffer with out= when y is a numpy array of at least
# _OUT_MIN elements and g has its dtype and shape: the temporaries saved then cost more than
# out='s own overhead (measured: break-even at 2-4k elements, 1.5 us saved at 16k). The test is
# written out in each kernel: on small gradients (tens of elements) a call's cost shows.
_OUT_MIN = 4096


_UINT_OF_SIZE = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _threshold_backward_kernel(g: Any, a: Any, threshold: float) -> Any:
    """torch's ``a <= threshold ? 0 : g``: a NaN in ``a`` lets g through, a NaN in g where a is cut
    becomes +0."""
    if (type(g) is np.ndarray and type(a) is np.ndarray and g.shape == a.shape and g.dtype.kind == "f"
            and g.size >= 256 and g.dtype.itemsize in _UINT_OF_SIZE):
        # np.where branches per element and mispredicts on ReLU's random sign pattern (about 140 us
        # on 64x256); masking g's bits with all-ones/zero words is branch-free (about 10 us) and
        # selects exactly, NaN payloads and signed zeros included.
        u = _UINT_OF_SIZE[g.dtype.itemsize]
        keep = np.less_equal(a, threshold).view(np.uint8).astype(u)  # 1 where cut
        keep -= 1  # cut: 0, kept: all ones (unsigned wrap-around)
        np.bitwise_and(keep, g.view(u), out=keep)
        return keep.view(g.dtype)
    return np.where(a <= threshold, 0, g).astype(g.dtype, copy=False)


def _tanh_backward_kernel(g: Any, y: Any) -> Any:
    """g * (1 - y * y)."""
    if type(y) is not np.ndarray:
        return g * (1 - y * y)
    # The 1 as numpy makes it beside y, made once (_ONE below: about 250 ns a call less).
    one = _ONE.get(y.dtype, 1)
    if y.size >= _OUT_MIN and g.dtype is y.dtype and g.shape == y.shape:
        # One buffer: the same roundings, two fewer temporaries (1.5 us on a 64x256 gradient).
        data = y * y
        np.subtract(one, data, out=data)
        np.multiply(g, data, out=data)
        return data
    return g * (one - y * y)


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


# -- backward formulas ----------------------------------------------------------------------


# 1 as a 0-d array of each floating dtype: ``one - y * y`` then costs numpy an array-array
# subtraction (0.26 us on 16 floats) instead of converting a Python scalar (0.48 us), and gives
# the same floats (the Python 1 becomes the same exact one in y's dtype).
_ONE = {np.dtype(t): np.array(1, t) for t in (np.float16, np.float32, np.float64)}
for _one in _ONE.values():
    _one.flags.writeable = False


def _tanh(n, g):
    if not _grad_state.enabled:
        # _saved_data, the kernel and _out inline: on a small gradient (tens of elements)
        # each Python call is a tenth of the node.
        v = n.saved["result"]
        t = v.tensor
        if t is not None and not v.released and t._version_counter[0] == v.version:
            y = t._data
            if type(y) is np.ndarray and y.size < _OUT_MIN and (one := _ONE.get(y.dtype)) is not None:
                data = g._data * (one - y * y)
            else:
                data = _tanh_backward_kernel(g._data, y)
            dt = g.dtype
            if type(data) is np.ndarray and data.dtype is dt.np:
                return _wrap(data, dt, g.device)
            return _new(data, g.device)
        return _out(_tanh_backward_kernel(g._data, n["result"]._data), g)  # raises unpack's error
    return tanh_backward(g, n["result"])


def _sigmoid(n, g):
    if not _grad_state.enabled:
        return _out(_sigmoid_backward_kernel(g._data, _saved_data(n, "result")), g)
    return sigmoid_backward(g, n["result"])


def _softmax(n, g):
    if not _grad_state.enabled:
        data = _softmax_backward_kernel(g._data, _saved_data(n, "result"), n.saved["dim"])
        return _out(data, g)
    return softmax_backward_data(g, n["result"], n["dim"])


def _log_softmax(n, g):
    if not _grad_state.enabled:
        data = _log_softmax_backward_kernel(g._data, _saved_data(n, "result"), n.saved["dim"])
        return _out(data, g)
    return log_softmax_backward_data(g, n["result"], n["dim"])


def _relu(n, g):
    if not _grad_state.enabled:
        return _out(_threshold_backward_kernel(g._data, _saved_data(n, "result"), 0.0), g)
    return threshold_backward(g, n["result"], 0.0)


def _softmax_double_backward(n, g):
    # d/dy of y * (go - sum(go * y)) against g: g * (go - sum(go * y)) - go * sum(g * y)
    go, y, dim = n["grad_output"], n["output"], n["dim"]
    mul, sub, sum_ = _arith.mul, _arith.sub, _reductions.sum
    return sub(mul(g, sub(go, sum_(mul(go, y), dim, True))), mul(go, sum_(mul(g, y), dim, True)))


# -- derivative rows ----------------------------------------------------------------------


# -- forward formulas (forward AD)


def _softmax_forward(n, ts, outs):
    """result * (t - sum(result * t)) along dim."""
    y = n["result"]
    return _arith.mul(y, _arith.sub(ts[0], _reductions.sum(_arith.mul(y, ts[0]), n["dim"], True)))


def _log_softmax_forward(n, ts, outs):
    """t - sum(softmax * t) along dim."""
    return _arith.sub(ts[0], _reductions.sum(_arith.mul(_pointwise.exp(n["result"]), ts[0]), n["dim"], True))


ROWS: dict[str, D] = {
    "tanh": D("TanhBackward0", (_tanh,), forward=EW),
    "sigmoid": D("SigmoidBackward0", (_sigmoid,), forward=EW),
    "relu": D("ReluBackward0", (_relu,), forward=EW),
    "clamp": D("ClampBackward1", (lambda n, g: _arith.where(n["mask"], g, _zero_scalar(g)),), forward=EW),
    "clamp_tensor": D("ClampBackward0", (
        lambda n, g: _arith.where(n["mask"], g, _zero_scalar(g)),
        lambda n, g: _arith.where(n["min_mask"], g, _zero_scalar(g)),
        lambda n, g: _arith.where(n["max_mask"], g, _zero_scalar(g)),
    ), reduce_broadcast=True, forward=EW),
    "clamp_min": D("ClampMinBackward0", (lambda n, g: _arith.where(n["mask"], g, _zero_scalar(g)),), forward=EW),
    "clamp_max": D("ClampMaxBackward0", (lambda n, g: _arith.where(n["mask"], g, _zero_scalar(g)),), forward=EW),
    "softmax": D("SoftmaxBackward0", (_softmax,), forward=_softmax_forward),
    "log_softmax": D("LogSoftmaxBackward0", (_log_softmax,), forward=_log_softmax_forward),
    # torch's fused backward kernels, as nodes of a graph built by create_graph=True
    # (inputs: the incoming gradient, the saved forward value)
    "threshold_backward": D("ThresholdBackwardBackward0", (
        lambda n, g: threshold_backward(g, n["output"], n["threshold"]),
        _zeros,
    ), forward=EW),
    "tanh_backward": D("TanhBackwardBackward0", (
        lambda n, g: tanh_backward(g, n["output"]),
        # torch's grad * (-2 * output * grad_output): the scalar product first (MulBackward1)
        lambda n, g: _arith.mul(g, _arith.mul(_arith.mul_scalar(n["output"], -2.0), n["grad_output"])),
    ), forward=EW),
    "sigmoid_backward": D("SigmoidBackwardBackward0", (
        lambda n, g: sigmoid_backward(g, n["output"]),
        # torch's grad * grad_output * (-2 * output + 1)
        lambda n, g: _arith.mul(_arith.mul(g, n["grad_output"]),
                                _arith.add_scalar(_arith.mul_scalar(n["output"], -2.0), 1.0)),
    ), forward=EW),
    "softmax_backward_data": D("SoftmaxBackwardDataBackward0", (
        lambda n, g: softmax_backward_data(g, n["output"], n["dim"]),
        _softmax_double_backward,
    ), forward=TR),
    "log_softmax_backward_data": D("LogSoftmaxBackwardDataBackward0", (
        lambda n, g: _arith.sub(g, _reductions.sum(_arith.mul(g, _pointwise.exp(n["output"])), n["dim"], True)),
        lambda n, g: _arith.mul(_arith.mul(_arith.neg(_reductions.sum(n["grad_output"], n["dim"], True)),
                                           _pointwise.exp(n["output"])), g),
    ), forward=TR),
}
register(ROWS)
_TANH_NODE = NODES["tanh"]  # the hot path's node class, looked up once
