"""In-place ops (add_, mul_, zero_, fill_, copy_) and ``a[key] = value``: torch's checks on
in-place use, the node that replaces a's history, and CopySlices for views."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import array_module, to_device_array
from gradviz.ops import activations as _activations
from gradviz.ops import arith as _arith
from gradviz.ops import indexing as _indexing
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops._common import (
    NODES,
    _binary_data,
    _broadcast_error,
    register,
    result_type,
)
from gradviz.ops.construction import (
    _zeros,
    zeros_for,
)
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import save
from gradviz.ops.inplace_write import InplaceWrite, check_inplace, check_result_cast, named_inplace, old_edge_holder
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "exp_", "fill_", "neg_", "relu_", "sigmoid_", "sqrt_",
    "tanh_", "zero_",
]

# -- in-place ops ----------------------------------------------------------------------------


def _kind(d: _dtype.dtype) -> int:
    return 2 if d.is_floating_point else (0 if d is _dtype.bool_ else 1)


def _check_cast(a: Tensor, b: Any) -> None:
    """torch's refusal to write a result into a tensor of a lower kind (float into int, int or
    float into bool): numpy's in-place ufuncs would truncate it or raise their own error."""
    if a.dtype.is_floating_point:
        return
    dt = result_type(a, b)
    if _kind(dt) > _kind(a.dtype):
        raise RuntimeError(
            f"result type {_dtype.scalar_type_name(dt)} can't be cast to the desired output type "
            f"{_dtype.scalar_type_name(a.dtype)}"
        )


def _inplace(key: str, a: Tensor, b: Any, op, saved_fn=None, alpha: Any = 1) -> Tensor:
    check_inplace(a)
    _check_cast(a, b)
    w = InplaceWrite(a, (b,), checked=True)
    saved: dict[str, Any] = {}
    if w.grad:
        # after the node's edges, those of b (reading them may regenerate a stale view's
        # history), then the old value cloned for saving
        if isinstance(b, Tensor):
            b.grad_fn  # noqa: B018 - reading it regenerates a stale view's history now
        if saved_fn:
            saved = saved_fn(a, b)
        if key in ("add", "sub"):
            saved["alpha"] = alpha
    data, bt = _binary_data(a, b, op)
    if data.shape != a._data.shape:
        raise RuntimeError(
            f"output with shape {list(a.shape)} doesn't match the broadcast shape {list(data.shape)}"
        )
    a._data[...] = data.astype(a._data.dtype, copy=False)
    return w.done(NODES[key], (bt,), saved, op=key + "_")


def add_(a: Tensor, b: Any, alpha: Any = 1) -> Tensor:
    return _inplace("add", a, b, (lambda x, y: x + y * alpha) if alpha != 1 else np.add, alpha=alpha)


def sub_(a: Tensor, b: Any, alpha: Any = 1) -> Tensor:
    return _inplace("sub", a, b, (lambda x, y: x - y * alpha) if alpha != 1 else np.subtract, alpha=alpha)


def _saved_old_self(x: Tensor, y: Any) -> dict:
    """What mul_/div_ save: the old value of a is overwritten, so a gradient for b needs a copy of
    it: a recorded clone, as torch's original_self, so that double backward still reaches a's graph."""
    s: dict[str, Any] = {"other": save(y) if isinstance(y, Tensor) else y}
    if isinstance(y, Tensor) and y._tracked:
        s["self"] = save(x.clone())
    return s


def mul_(a: Tensor, b: Any) -> Tensor:
    return _inplace("mul", a, b, np.multiply, _saved_old_self)


def div_(a: Tensor, b: Any, *, rounding_mode: Any = _arith._NO_MODE) -> Tensor:
    if rounding_mode is not _arith._NO_MODE:
        return _div_mode_(a, b, rounding_mode)
    if not a.dtype.is_floating_point:
        raise RuntimeError(
            "result type Float can't be cast to the desired output type Long"
        )

    return _inplace("div", a, b, np.true_divide, _saved_old_self)


def _div_mode_(a: Tensor, b: Any, mode: str | None) -> Tensor:
    """div_ with rounding_mode: DivBackward2, whose edge for a number b is empty (torch wraps it)."""
    if mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    if mode is None and not a.dtype.is_floating_point:
        raise RuntimeError("result type Float can't be cast to the desired output type Long")
    op = {None: np.true_divide, "floor": np.floor_divide, "trunc": _arith._trunc_divide}[mode]

    def saved(x: Tensor, y: Any) -> dict:
        other = y if isinstance(y, Tensor) else _arith._wrapped(y, x)
        s: dict[str, Any] = {"other": save(other), "mode": mode}
        if other._tracked:
            s["self"] = save(x.clone())
        return s

    return _inplace("div_mode", a, b, op, saved)


def zero_(a: Tensor) -> Tensor:
    return _overwrite("zero", a, None, 0)


def fill_(a: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value.ndim} dimensions."
        )
    return _overwrite("fill_tensor" if isinstance(value, Tensor) else "fill", a, value, value)


def _overwrite(key: str, a: Tensor, value_tensor: Tensor | None, value: Any) -> Tensor:
    """zero_ and fill_: the old value gets a zero gradient, as torch's ZeroBackward0/FillBackward2
    (FillBackward3 when the value is a tensor, which gets the sum of the gradient)."""
    vt = value_tensor if isinstance(value_tensor, Tensor) else None
    w = InplaceWrite(a, (vt,))
    a._data[...] = value._data if isinstance(value, Tensor) else value
    return w.done(NODES[key], (vt,) if key == "fill_tensor" else (), {}, op="zero_" if key == "zero" else "fill_")


def copy_(a: Tensor, src: Any) -> Tensor:
    """Copy src (broadcast, cast) into a: CopyBackwards (a's old value gets no gradient)."""
    st = src if isinstance(src, Tensor) else None
    w = InplaceWrite(a, (st,))
    # src's edge as it is now: a src that views a's storage would otherwise show the write
    # below (its history regenerated as AsStridedBackward0), where torch keeps its own node
    if w.grad and st is not None and st.grad_fn is not None:
        st = old_edge_holder(st)
    value = to_device_array(st._data, a.device) if st is not None else src
    try:
        a._data[...] = value
    except ValueError as e:
        raise (_broadcast_error(a._data.shape, st._data.shape) if st is not None else None) or e from None
    return w.done(NODES["copy"], (st,), {}, op="copy_")


def _expand_error(src: tuple[int, ...], target: tuple[int, ...]) -> RuntimeError | None:
    """torch's error when ``src`` does not expand to ``target`` (copy_, a[key] = value), or None
    when the clash is another one."""
    for i in range(1, builtins.min(len(src), len(target)) + 1):
        s, t = src[-i], target[-i]
        if s != t and s != 1:
            return RuntimeError(
                f"The expanded size of the tensor ({t}) must match the existing size ({s}) at non-singleton "
                f"dimension {len(target) - i}.  Target sizes: {list(target)}.  Tensor sizes: {list(src)}"
            )
    return None


def _value_for(value: Tensor, shape: tuple[int, ...]) -> Tensor:
    """torch's copy_to: a value of another shape than its target is viewed without its leading
    1s, then expanded to the target (ViewBackward0, ExpandBackward0 in the graph)."""
    if value.shape == shape:
        return value
    value = _strip_leading_ones(value, always=True)
    err = _expand_error(value.shape, shape)
    if err is not None:
        raise err
    return value if value.shape == shape else value.expand(shape)


def _selects_all(a: Tensor, keys: tuple) -> bool:
    """Whether basic-indexing ``keys`` select all of ``a`` as torch's indexing sees it: nothing but
    one Ellipsis at most and slices that start at 0 (or None), step 1 (or None) and stop at or
    past the end of their dim (or None). -2: on a dim of 2 is not one: torch checks the start as
    written."""
    ell = -1
    for i, k in enumerate(keys):
        if k is Ellipsis:
            if ell >= 0:
                return False  # two Ellipses: getitem says why
            ell = i
        elif type(k) is not slice:
            return False
    n = len(keys) - (ell >= 0)
    if n > a.ndim:
        return False
    if ell >= 0:
        dims = [*range(ell), *range(a.ndim - (len(keys) - ell - 1), a.ndim)]
        slices = [*keys[:ell], *keys[ell + 1 :]]
    else:
        dims, slices = list(range(n)), list(keys)
    for d, k in zip(dims, slices, strict=True):
        start, stop, step = k.start, k.stop, k.step
        if not (start is None or (type(start) is int and start == 0)):
            return False
        if not (step is None or (type(step) is int and step == 1)):
            return False
        if not (stop is None or (type(stop) is int and stop >= a.shape[d])):
            return False
    return True


def setitem(a: Tensor, key: Any, value: Any) -> None:
    """a[key] = value as torch does it: basic indexing copies into the view a[key] (CopySlices on
    a), tensor indices go through index_put_ (IndexPutBackward0)."""
    if type(key) is list:
        key = _indexing.legacy_sequence_key(key)  # noqa: F405
    key = _indexing.numpy_keys(key)  # np.int64(k) writes through a select, as torch's
    keys = key if isinstance(key, tuple) else (key,)
    advanced = builtins.any(isinstance(k, (Tensor, list)) and not (isinstance(k, Tensor) and k.ndim == 0
                   and k.dtype is not _dtype.bool_) for k in keys)
    if not advanced and _selects_all(a, keys):
        # torch's indexing gives the tensor itself for a key that selects all of it (Ellipsis,
        # slices from 0 to the end with step 1): the value then goes into a itself, not into a
        # view of it: fill_ for a number or a 0-dim tensor (a number wrapped as one: FillBackward3),
        # copy_ otherwise (CopyBackwards), and no CopySlices.
        if not isinstance(value, Tensor):
            value = Tensor(to_device_array(np.asarray(value, dtype=a.dtype.np), a.device), a.device)
        if value.ndim == 0:
            fill_(a, value)
            return
        copy_(a, _value_for(value, a.shape))
        return
    if not advanced:
        with no_grad_if_plain(a, value):
            view = _indexing.getitem(a, key)
        if isinstance(value, Tensor) and value.ndim:
            value = _value_for(value, view.shape)
        copy_(view, value)
        return
    if isinstance(value, Tensor):
        value = _strip_leading_ones(value)
    check_inplace(a)
    vt = value if isinstance(value, Tensor) else None
    _check_advanced_keys(a, keys)
    if vt is not None and vt.dtype is not a.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got {_dtype.scalar_type_name(a.dtype)} "
            f"for the destination and {_dtype.scalar_type_name(vt.dtype)} for the source."
        )
    idx = _numpy_key(a, keys)
    if vt is not None:
        target = a._data[idx].shape
        vs = tuple(vt.shape)
        while len(vs) > len(target) and vs[0] == 1:  # leading 1s go, as torch strips them
            vs = vs[1:]
        if _expand_error(vs, target) is not None or len(vs) > len(target):
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(vt.shape)} cannot be broadcast to indexing result of "
                f"shape {list(target)}"
            )
    w = InplaceWrite(a, (vt,), checked=True)
    saved: dict[str, Any] = {}
    if w.grad:
        # made where a's data is: the key holds device arrays on a gpu, which a host mask
        # cannot be indexed with (nor could the result be a's device's mask)
        mask = array_module(a.device).zeros(a.shape, dtype=bool)
        mask[idx] = True
        saved = {"key": idx, "mask": Tensor(mask, a.device)}
    a._data[idx] = vt._data if vt is not None else value
    w.done(NODES["index_put"], (vt,), saved, op="index_put_", rebase=False)  # index_put_ on a view: its base as it was


# the user's a[key] = value: one step, named as torch's recorder sees it, whatever it writes through
setitem = named_inplace("__setitem__", setitem)


def _strip_leading_ones(value: Tensor, always: bool = False) -> Tensor:
    """value viewed without its leading size-1 dims, as torch's setitem takes it (a
    ViewBackward0 in the graph); value itself when it has none, unless ``always``."""
    shape = tuple(value.shape)
    if not always and (not shape or shape[0] != 1):
        return value
    while shape and shape[0] == 1:
        shape = shape[1:]
    return value.view(shape)


def _check_advanced_keys(a: Tensor, keys: tuple) -> None:
    """torch's IndexErrors for the tensor and list indices of a[keys] = v (as getitem's)."""
    n_real = builtins.sum(
        (k.ndim if isinstance(k, Tensor) and k.dtype is _dtype.bool_ else 1)
        for k in keys if k is not None and k is not Ellipsis
    )
    if n_real > a.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a.ndim}")
    dim = 0
    for k in keys:
        if k is Ellipsis:
            dim += a.ndim - n_real
        elif isinstance(k, (Tensor, list)):
            arr = k._data if isinstance(k, Tensor) else np.asarray(k)
            _indexing._check_index_array(arr, a.shape, dim)
            dim += arr.ndim if arr.dtype == np.bool_ else 1
        elif k is not None:
            dim += 1


class no_grad_if_plain:  # noqa: N801 - a context manager used like a function
    """Grad mode off while taking the view when nothing will need a gradient (saves nodes)."""

    def __init__(self, a: Tensor, value: Any):
        self.off = not (a._tracked or (isinstance(value, Tensor) and value._tracked))

    def __enter__(self) -> None:
        self.prev = _grad_state.enabled
        if self.off:
            _grad_state.enabled = False

    def __exit__(self, *exc: object) -> None:
        _grad_state.enabled = self.prev


def _numpy_key(a: Tensor, keys: tuple) -> tuple:
    """The key as arrays of a's array module, on a's device: cupy would copy host index arrays
    to the device at each use (and cpu tensor indices of a gpu tensor are allowed, as torch's)."""
    out = []
    for k in keys:
        if isinstance(k, Tensor):
            k = k._data if k.device is a.device else to_device_array(k._data, a.device)
        elif isinstance(k, list):
            k = to_device_array(np.asarray(k), a.device)
        out.append(k)
    return tuple(out)


# -- in-place activations and pointwise ops ---------------------------------------------------


def _unary_(key: str, a: Tensor, fn, *args: Any, save_result: bool = False, mask: Any = None) -> Tensor:
    """fn's result written into a (relu_, sigmoid_, clamp_, ...): fn's node, with a's old history
    as its edge, and the result saved where fn saves it (a itself, at its new version)."""
    from gradviz.autograd.grad_mode import no_grad

    w = InplaceWrite(a)
    saved: dict[str, Any] = {"mask": Tensor(mask, a.device)} if w.grad and mask is not None else {}
    with no_grad():
        r = fn(a, *args)
    check_result_cast(a, r)
    a._data[...] = r._data

    def with_result() -> dict[str, Any]:  # what the formula reads of the result: a at its new version
        return {**saved, "result": save(a, True)} if save_result else saved

    return w.done(NODES[key], (), with_result, op=key + "_")


def relu_(a: Tensor) -> Tensor:
    return _unary_("relu", a, _activations.relu, save_result=True)


def sigmoid_(a: Tensor) -> Tensor:
    return _unary_("sigmoid", a, _activations.sigmoid, save_result=True)


def tanh_(a: Tensor) -> Tensor:
    return _unary_("tanh", a, _activations.tanh, save_result=True)


def exp_(a: Tensor) -> Tensor:
    return _unary_("exp", a, _pointwise.exp, save_result=True)


def sqrt_(a: Tensor) -> Tensor:
    return _unary_("sqrt", a, _pointwise.sqrt, save_result=True)


def neg_(a: Tensor) -> Tensor:
    return _unary_("neg", a, _arith.neg)


def _bound_mask(a: Tensor, lo: Any, hi: Any) -> Any:
    if not a._tracked:
        return None
    x = a._data
    return np.asarray(((x >= lo) if lo is not None else True) & ((x <= hi) if hi is not None else True)) \
        | np.zeros(x.shape, bool)


def clamp_(a: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _unary_("clamp", a, _activations.clamp, min, max, mask=_bound_mask(a, min, max))


def clamp_min_(a: Tensor, min: Any) -> Tensor:  # noqa: A002
    return _unary_("clamp_min", a, _activations.clamp_min, min, mask=_bound_mask(a, min, None))


def clamp_max_(a: Tensor, max: Any) -> Tensor:  # noqa: A002
    return _unary_("clamp_max", a, _activations.clamp_max, max, mask=_bound_mask(a, None, max))


clip_ = named_inplace("clip_", clamp_)


def masked_fill_(a: Tensor, mask: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return _masked_fill_tensor_(a, mask, value)
    return _unary_("masked_fill", a, _indexing.masked_fill, mask, value,
                   mask=mask._data if a._tracked else None)


def _masked_fill_tensor_(a: Tensor, mask: Tensor, value: Tensor) -> Tensor:
    """masked_fill_ with a 0-dim value tensor: torch's MaskedFillBackward1 (inputs self, value)
    whenever either requires grad, the value getting the sum of the masked gradient."""
    from gradviz.autograd.grad_mode import no_grad

    w = InplaceWrite(a, (value,))
    with no_grad():
        r = _indexing.masked_fill(a, mask, value)
    if r.shape != a.shape:
        raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the broadcast shape {list(r.shape)}")
    a._data[...] = r._data
    return w.done(NODES["masked_fill_tensor"], (value,), lambda: {"mask": mask.detach()}, op="masked_fill_")


# -- derivative rows ----------------------------------------------------------------------


ROWS: dict[str, D] = {
    # x[key] = value: basic indexing writes through a view (CopySlices wraps this node),
    # tensor indices use index_put_
    "copy": D("CopyBackwards", (_zeros, lambda n, g: g), reduce_broadcast=True, forward=EW),
    "index_put": D("IndexPutBackward0", (
        lambda n, g: _indexing.masked_fill(g, n["mask"], 0.0),
        lambda n, g: _indexing.getitem_raw(g, n["key"], "index"),
    ), reduce_broadcast=True, forward=TR),
    # overwriting in place: the old value gets no gradient
    "zero": D("ZeroBackward0", (lambda n, g: zeros_for(g.shape, g.dtype, g.device),), forward=EW),
    "fill": D("FillBackward2", (lambda n, g: zeros_for(g.shape, g.dtype, g.device),), forward=EW),
    "fill_tensor": D("FillBackward3", (lambda n, g: zeros_for(g.shape, g.dtype, g.device),
                                       lambda n, g: _reductions.sum(g)), forward=TR),
}
register(ROWS)
