"""Pooling over any number of spatial dims (3-d pooling, adaptive max pooling, unpooling) and
the rows of their nodes: AvgPool3DBackward0, MaxPool3DWithIndicesBackward0,
AdaptiveAvgPool3DBackward0, AdaptiveMaxPool2DBackward0/3D, MaxUnpool2DBackward0/3D.

Windows are visited one kernel offset at a time over output-sized strided slices; indices are
flat in each input plane, as torch's. Ties go to the first offset in row-major kernel order, a
NaN wins over any number (torch's ``val > max || isnan(val)``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_conv_ops import _adaptive_bounds, _out_size
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []

def _strided(offset: tuple, out: tuple, stride: tuple, dilation: tuple) -> tuple:
    return (...,) + tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, n, s, d in zip(offset, out, stride, dilation))


def _flat_index(shape: tuple, coords: list) -> np.ndarray:
    idx = coords[0]
    for size, c in zip(shape[1:], coords[1:]):
        idx = idx * size + c
    return idx


def _int64_tensor(data: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._wrap(data.astype(np.int64, copy=False), _dtype.int64, like.device)


# -- max pool (n-d) ------------------------------------------------------------------------------


def max_pool_nd(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                ceil_mode: bool) -> tuple[Tensor, Tensor]:
    """(values, indices) of a max pool over the last len(kernel) dims."""
    nd = len(kernel)
    x = input._data
    sizes = x.shape[-nd:]
    outs = tuple(_out_size(sz, k, s, p, d, ceil_mode) for sz, k, s, p, d in zip(sizes, kernel, stride, padding,
                                                                                   dilation))
    pads = [(p, max(p, (o - 1) * s + d * (k - 1) + 1 - sz - p))
            for sz, k, s, p, d, o in zip(sizes, kernel, stride, padding, dilation, outs)]
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    xp = np.pad(x, [(0, 0)] * (x.ndim - nd) + pads, constant_values=fill)
    best = None
    won = None
    for k, off in enumerate(itertools.product(*(range(kk) for kk in kernel))):
        v = xp[_strided(off, outs, stride, dilation)]
        if best is None:
            best, won = v.copy(), np.zeros(v.shape, dtype=np.int64)
            continue
        better = (v > best) | np.isnan(v)
        best = np.where(better, v, best)
        won = np.where(better, k, won)
    offsets = np.array(list(itertools.product(*(range(kk) for kk in kernel))), dtype=np.int64)
    coords = []
    for axis in range(nd):
        start = np.arange(outs[axis]) * stride[axis] - padding[axis]
        start = start.reshape((-1,) + (1,) * (nd - 1 - axis))
        coords.append(start + offsets[won, axis] * dilation[axis])
    idx = _flat_index(sizes, coords)
    out = _out(best, input)
    ind = _int64_tensor(idx, input)
    if _grad_state.enabled and _requires(input):
        record(_MAXPOOL3D, (input,), [out], {"self": SavedVariable(input), "result1": ind, "nd": nd})
    return out, ind


def _scatter_to_planes(shape: tuple, nd: int, idx: np.ndarray, values: np.ndarray, dtype: Any) -> np.ndarray:
    plane = int(np.prod(shape[-nd:], dtype=np.int64))
    lead = int(np.prod(shape[:-nd], dtype=np.int64))
    flat = idx.reshape(lead, -1) + (np.arange(lead, dtype=np.int64) * plane)[:, None]
    dx = np.bincount(flat.ravel(), weights=values.ravel(), minlength=lead * plane)
    return dx.astype(dtype, copy=False).reshape(shape)


def _max_pool_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    return _out(_scatter_to_planes(x.shape, n.saved["nd"], n.saved["result1"]._data, g._data, x.dtype), g)


_MAXPOOL3D = _register("max_pool3d_with_indices", D("MaxPool3DWithIndicesBackward0", (_max_pool_grad,)))


# -- avg pool (3-d) ------------------------------------------------------------------------------


def _divisors(sizes: tuple, kernel: tuple, stride: tuple, padding: tuple, outs: tuple, include_pad: bool) -> np.ndarray:
    per_axis = []
    for sz, k, s, p, o in zip(sizes, kernel, stride, padding, outs):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, sz + p)
        count = end - start if include_pad else np.minimum(end, sz) - np.maximum(start, 0)
        per_axis.append(count)
    div = per_axis[0]
    for c in per_axis[1:]:
        div = np.multiply.outer(div, c)
    return div.astype(np.float64)


def avg_pool3d(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, ceil_mode: bool, count_include_pad: bool,
               divisor_override: int | None) -> Tensor:
    nd = 3
    x = input._data
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation=1")
    sizes = x.shape[-nd:]
    outs = tuple(_out_size(sz, k, s, p, 1, ceil_mode) for sz, k, s, p in zip(sizes, kernel, stride, padding))
    pads = [(p, max(p, (o - 1) * s + k - sz - p)) for sz, k, s, p, o in zip(sizes, kernel, stride, padding, outs)]
    xp = np.pad(x, [(0, 0)] * (x.ndim - nd) + pads)
    total = np.zeros(x.shape[:-nd] + outs, dtype=x.dtype)
    for off in itertools.product(*(range(k) for k in kernel)):
        total += xp[_strided(off, outs, stride, (1,) * nd)]
    div = float(divisor_override) if divisor_override else _divisors(sizes, kernel, stride, padding, outs,
                                                                      count_include_pad)
    out = _out((total / div).astype(x.dtype, copy=False), input)
    if _grad_state.enabled and _requires(input):
        record(_AVGPOOL3D, (input,), [out], {"shape": x.shape, "kernel": kernel, "stride": stride, "padding": padding,
                                             "outs": outs, "div": div})
    return out


def _avg_pool_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    shape, kernel, stride, padding, outs = s["shape"], s["kernel"], s["stride"], s["padding"], s["outs"]
    nd = len(kernel)
    sizes = shape[-nd:]
    pads = [(p, max(p, (o - 1) * st + k - sz - p)) for sz, k, st, p, o in zip(sizes, kernel, stride, padding, outs)]
    gp = np.zeros(shape[:-nd] + tuple(sz + a + b for sz, (a, b) in zip(sizes, pads)), dtype=g._data.dtype)
    part = g._data / s["div"]
    for off in itertools.product(*(range(k) for k in kernel)):
        gp[_strided(off, outs, stride, (1,) * nd)] += part
    crop = (...,) + tuple(slice(a, a + sz) for sz, (a, _) in zip(sizes, pads))
    return _out(np.ascontiguousarray(gp[crop]).astype(g._data.dtype, copy=False), g)


_AVGPOOL3D = _register("avg_pool3d", D("AvgPool3DBackward0", (_avg_pool_grad,)))


# -- adaptive pools ------------------------------------------------------------------------------


def adaptive_avg_pool3d(input: Tensor, output_size: tuple) -> Tensor:
    x = input._data
    sizes = x.shape[-3:]
    outs = tuple(sz if o is None else o for sz, o in zip(sizes, output_size))
    bounds = [_adaptive_bounds(sz, o) for sz, o in zip(sizes, outs)]
    y = np.empty(x.shape[:-3] + outs, dtype=x.dtype)
    for cell in itertools.product(*(range(o) for o in outs)):
        win = (...,) + tuple(slice(*bounds[a][c]) for a, c in enumerate(cell))
        y[(...,) + cell] = x[win].mean(axis=(-1, -2, -3))
    out = _out(y, input)
    if _grad_state.enabled and _requires(input):
        record(_ADAPTIVE_AVG3D, (input,), [out], {"shape": x.shape, "outs": outs})
    return out


def _adaptive_avg_grad(n: Any, g: Tensor) -> Tensor:
    shape, outs = n.saved["shape"], n.saved["outs"]
    bounds = [_adaptive_bounds(sz, o) for sz, o in zip(shape[-3:], outs)]
    dx = np.zeros(shape, dtype=g._data.dtype)
    for cell in itertools.product(*(range(o) for o in outs)):
        sl = tuple(slice(*bounds[a][c]) for a, c in enumerate(cell))
        count = int(np.prod([s.stop - s.start for s in sl]))
        dx[(...,) + sl] += (g._data[(...,) + cell] / count)[(...,) + (None,) * 3]
    return _out(dx, g)


_ADAPTIVE_AVG3D = _register("adaptive_avg_pool3d", D("AdaptiveAvgPool3DBackward0", (_adaptive_avg_grad,)))


def adaptive_max_pool(input: Tensor, output_size: tuple) -> tuple[Tensor, Tensor]:
    """Adaptive max pool over the last len(output_size) (2 or 3) dims: (values, flat indices)."""
    nd = len(output_size)
    x = input._data
    sizes = x.shape[-nd:]
    outs = tuple(sz if o is None else o for sz, o in zip(sizes, output_size))
    bounds = [_adaptive_bounds(sz, o) for sz, o in zip(sizes, outs)]
    y = np.empty(x.shape[:-nd] + outs, dtype=x.dtype)
    idx = np.empty(x.shape[:-nd] + outs, dtype=np.int64)
    lead = x.shape[:-nd]
    for cell in itertools.product(*(range(o) for o in outs)):
        sl = tuple(slice(*bounds[a][c]) for a, c in enumerate(cell))
        win = x[(...,) + sl]
        wshape = win.shape[-nd:]
        flat = win.reshape(lead + (-1,))
        # the first maximum, or the first NaN (torch's scan keeps a NaN once found)
        nan = np.isnan(flat) if np.issubdtype(x.dtype, np.floating) else np.zeros(flat.shape, bool)
        pick = np.where(nan.any(axis=-1), nan.argmax(axis=-1), flat.argmax(axis=-1))
        y[(...,) + cell] = np.take_along_axis(flat, pick[..., None], -1)[..., 0]
        local = np.unravel_index(pick, wshape)
        idx[(...,) + cell] = _flat_index(sizes, [lc + s.start for lc, s in zip(local, sl)])
    out = _out(y, input)
    ind = _int64_tensor(idx, input)
    if _grad_state.enabled and _requires(input):
        node = _ADAPTIVE_MAX2D if nd == 2 else _ADAPTIVE_MAX3D
        record(node, (input,), [out], {"self": SavedVariable(input), "result1": ind, "nd": nd})
    return out, ind


_ADAPTIVE_MAX2D = _register("adaptive_max_pool2d", D("AdaptiveMaxPool2DBackward0", (_max_pool_grad,)))
_ADAPTIVE_MAX3D = _register("adaptive_max_pool3d", D("AdaptiveMaxPool3DBackward0", (_max_pool_grad,)))


# -- max unpool ----------------------------------------------------------------------------------


def max_unpool(input: Tensor, indices: Tensor, output_size: tuple) -> Tensor:
    """Each value put at its flat index in a zero plane of ``output_size`` (2 or 3 dims)."""
    nd = len(output_size)
    x = input._data
    lead = x.shape[:-nd]
    plane = int(np.prod(output_size, dtype=np.int64))
    idx = indices._data.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= plane):
        bad = int(idx[(idx < 0) | (idx >= plane)].ravel()[0])
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           + "x".join(str(s) for s in output_size) + ")")
    flat = np.zeros(lead + (plane,), dtype=x.dtype)
    np.put_along_axis(flat, idx.reshape(lead + (-1,)), x.reshape(lead + (-1,)), -1)
    out = _out(flat.reshape(lead + tuple(output_size)), input)
    if _grad_state.enabled and _requires(input):
        node = _UNPOOL2D if nd == 2 else _UNPOOL3D
        record(node, (input,), [out], {"indices": idx, "nd": nd, "shape": x.shape})
    return out


def _unpool_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    nd, idx = s["nd"], s["indices"]
    lead = g._data.shape[:-nd]
    flat = g._data.reshape(lead + (-1,))
    picked = np.take_along_axis(flat, idx.reshape(lead + (-1,)), -1)
    return _out(picked.reshape(s["shape"]), g)


_UNPOOL2D = _register("max_unpool2d", D("MaxUnpool2DBackward0", (_unpool_grad,)))
_UNPOOL3D = _register("max_unpool3d", D("MaxUnpool3DBackward0", (_unpool_grad,)))


# -- fractional max pool -------------------------------------------------------------------------


def _intervals(sample: Any, in_size: int, out_size: int, pool: int, dt: Any) -> list[int]:
    """Where each window starts: torch's generate_intervals, computed in the input's dtype."""
    seq = [0] * out_size
    if out_size > 1:
        alpha = dt(in_size - pool) / dt(out_size - 1)
        for i in range(out_size - 1):
            seq[i] = int(dt(dt(i) + sample) * alpha) - int(dt(sample * alpha))
    if out_size > 0:
        seq[-1] = in_size - pool
    return seq


def fractional_max_pool(input: Tensor, kernel: tuple, output_size: tuple, samples: Tensor) -> tuple[Tensor, Tensor]:
    """Max pool over pseudo-random windows (2 or 3 spatial dims), their starts drawn from
    ``samples`` (N, C, dims): the first sample places the last dim's windows in 2-d, the first
    dim's in 3-d, as torch's kernels read them."""
    nd = len(kernel)
    x = input._data
    batched = x.ndim == nd + 2
    xb = x if batched else x[None]
    n, c = xb.shape[:2]
    sizes = xb.shape[2:]
    for k, o, s in zip(kernel, output_size, sizes):
        if o + k - 1 > s:
            raise RuntimeError(f"fractional_max_pool{nd}d_out(): pool size {k} too large relative to input size {s} "
                               f"and output size {o}")
    dt = x.dtype.type
    smp = samples._data
    order = (1, 0) if nd == 2 else (0, 1, 2)  # which sample places each spatial dim's windows
    y = np.empty((n, c) + tuple(output_size), dtype=x.dtype)
    idx = np.empty((n, c) + tuple(output_size), dtype=np.int64)
    for b in range(n):
        for ch in range(c):
            starts = [_intervals(smp[b, ch, order[d]], sizes[d], output_size[d], kernel[d], dt) for d in range(nd)]
            plane = xb[b, ch]
            for cell in itertools.product(*(range(o) for o in output_size)):
                win = plane[tuple(slice(starts[d][cell[d]], starts[d][cell[d]] + kernel[d]) for d in range(nd))]
                flat = win.reshape(-1)
                nan = np.isnan(flat)
                k = int(nan.argmax()) if nan.any() else int(flat.argmax())
                local = np.unravel_index(k, win.shape)
                y[(b, ch) + cell] = flat[k]
                idx[(b, ch) + cell] = _flat_index(sizes, [starts[d][cell[d]] + local[d] for d in range(nd)])
    if not batched:
        y, idx = y[0], idx[0]
    out = _out(y, input)
    ind = _int64_tensor(idx, input)
    if _grad_state.enabled and _requires(input):
        record(_FRACTIONAL2D if nd == 2 else _FRACTIONAL3D, (input,), [out],
               {"self": SavedVariable(input), "result1": ind, "nd": nd})
    return out, ind


_FRACTIONAL2D = _register("fractional_max_pool2d", D("FractionalMaxPool2DBackward0", (_max_pool_grad,)))
_FRACTIONAL3D = _register("fractional_max_pool3d", D("FractionalMaxPool3DBackward0", (_max_pool_grad,)))
