"""Upsampling (F.interpolate's nearest, nearest-exact, linear, bilinear, bicubic and trilinear modes), with
torch 2.13's backward nodes (UpsampleNearest2DBackward0, UpsampleBilinear2DBackward0, ...).

Every mode is separable: along each spatial dim, an output position reads one input position
(nearest), or two (linear) or four (bicubic) with weights. The positions and weights are computed as torch's CPU
kernels compute them (ATen/native/UpSample.h): in float for float32 input and in double for
float64, with torch's shortcuts (an unchanged size copies; nearest at exactly twice the size
halves the index). The forward interpolates the last dim first and the first spatial dim last,
the nesting of torch's kernel (``t(h) = x[h, w0] * lw0 + x[h, w1] * lw1``, then
``t(h0) * lh0 + t(h1) * lh1``); the backward adds the gradient back along each dim in reverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import module_of
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap
_SCALE_NAMES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}


def _scale(opm: type, in_size: int, out_size: int, scale: float | None, align_corners: bool) -> Any:
    """torch's area_pixel_compute_scale (compute_scales_value without align_corners), in opm."""
    if align_corners:
        return opm(in_size - 1) / opm(out_size - 1) if out_size > 1 else opm(0)
    if scale is not None and scale > 0:
        return opm(1.0 / scale)
    return opm(in_size) / opm(out_size)


def _nearest_index(in_size: int, out_size: int, scale: float | None, exact: bool) -> np.ndarray:
    """Source index of each output position: torch's nearest_idx / nearest_exact_idx."""
    i = np.arange(out_size)
    if not exact and out_size == in_size:
        return i
    if not exact and out_size == 2 * in_size:
        return i >> 1
    s = _scale(np.float32, in_size, out_size, scale, False)
    # nearest: the index times a float scale, in float; exact: (index + 0.5) is a double, the
    # product is a double, and floorf takes it as a float
    src = i.astype(np.float32) * s if not exact else ((i + 0.5) * np.float64(s)).astype(np.float32)
    return np.minimum(np.floor(src).astype(np.int64), in_size - 1)


def _linear_taps(opm: type, in_size: int, out_size: int, scale: float | None, align_corners: bool) -> tuple:
    """(i0, i1, l0, l1): torch's compute_source_index_and_lambda for every output position."""
    i = np.arange(out_size)
    if out_size == in_size:
        one = np.ones(out_size, opm)
        return i, i, one, np.zeros(out_size, opm)
    s = _scale(opm, in_size, out_size, scale, align_corners)
    idx = i.astype(opm)
    src = s * idx if align_corners else np.maximum(s * (idx + opm(0.5)) - opm(0.5), opm(0))
    # guard_index_and_lambda: floorf (a float) even for double input
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), in_size - 1)
    l1 = np.minimum(np.maximum(src - i0.astype(opm), opm(0)), opm(1)).astype(opm)
    i1 = i0 + (i0 < in_size - 1)
    return i0, i1, (opm(1) - l1).astype(opm), l1


def _fma32(a: Any, b: Any, c: Any) -> Any:
    """float32 a * b + c rounded once, as the fused multiply-add torch's CPU kernels are compiled to
    (the float32 product is exact in float64)."""
    on_host = all(isinstance(v, (np.ndarray, np.generic, float, int)) for v in (a, b, c))
    xm = np if on_host else module_of(a)
    return (xm.asarray(a, dtype=xm.float64) * b + c).astype(xm.float32)


def _cubic_taps(opm: type, in_size: int, out_size: int, scale: float | None, align_corners: bool) -> tuple:
    """(i0..i3, w0..w3): torch's bicubic taps for every output position: the source index
    unclamped (cubic), its floor and fraction guarded as for linear, the 4 neighbours clamped to
    the edge, Keys' cubic convolution weights with A = -0.75. In float32 the multiply-adds that
    torch's compiled kernel fuses (the source index's ``scale * (i + 0.5) - 0.5``, the first step
    of the near weight, the first two steps of the far weight) are rounded once, as there."""
    fused = opm is np.float32
    i = np.arange(out_size).astype(opm)
    s = _scale(opm, in_size, out_size, scale, align_corners)
    if align_corners:
        src = s * i
    elif fused:
        src = _fma32(s, i + opm(0.5), opm(-0.5))
    else:
        src = s * (i + opm(0.5)) - opm(0.5)
    base = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), in_size - 1)
    t = np.minimum(np.maximum(src - base.astype(opm), opm(0)), opm(1)).astype(opm)
    a = opm(-0.75)

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1: ((a + 2) * x - (a + 3)) * x * x + 1
        inner = _fma32(a + opm(2), x, -(a + opm(3))) if fused else (a + opm(2)) * x - (a + opm(3))
        return (inner * x * x + opm(1)).astype(opm)

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2: ((a * x - 5a) * x + 8a) * x - 4a
        if fused:
            return (_fma32(_fma32(a, x, -(opm(5) * a)), x, opm(8) * a) * x - opm(4) * a).astype(opm)
        return (((a * x - opm(5) * a) * x + opm(8) * a) * x - opm(4) * a).astype(opm)

    one = opm(1)
    weights = (far(t + one), near(t), near(one - t), far((one - t) + one))
    index = tuple(np.clip(base - 1 + j, 0, in_size - 1) for j in range(4))
    return index + weights


def _shape(w: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-position weight broadcast along ``axis`` of an ndim array."""
    return w.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _forward(x: Any, taps: list) -> Any:
    y = x
    for axis in range(x.ndim - 1, x.ndim - 1 - len(taps), -1):
        t = taps[axis - (x.ndim - len(taps))]
        if len(t) == 1:
            y = y.take(module_of(y).asarray(t[0]), axis=axis)
        elif len(t) == 8 and t[4].dtype == np.float32:  # cubic in float: torch's fused sum, the second
            xm = module_of(y)                               # tap's product first, then the others fused in
            v = [y.take(xm.asarray(t[j]), axis=axis) for j in range(4)]
            w = [xm.asarray(_shape(t[4 + j], axis, y.ndim)) for j in range(4)]
            acc = _fma32(v[0], w[0], v[1] * w[1])
            y = _fma32(v[3], w[3], _fma32(v[2], w[2], acc))
        else:  # n indices then n weights (linear: 2, cubic: 4), added in tap order
            xm = module_of(y)
            n = len(t) // 2
            acc = y.take(xm.asarray(t[0]), axis=axis) * xm.asarray(_shape(t[n], axis, y.ndim))
            for j in range(1, n):
                acc = acc + y.take(xm.asarray(t[j]), axis=axis) * xm.asarray(_shape(t[n + j], axis, y.ndim))
            y = acc
    return y


def _add_along(g: Any, index: np.ndarray, size: int, axis: int) -> Any:
    """The transpose of ``take(index, axis)``: g's slices added into ``size`` positions."""
    xm = module_of(g)
    moved = xm.moveaxis(g, axis, 0)
    out = xm.zeros((size,) + moved.shape[1:], dtype=g.dtype)
    xm.add.at(out, xm.asarray(index), moved)
    return xm.moveaxis(out, 0, axis)


def _backward(n: Any, g: Tensor) -> Tensor:
    taps, in_sizes = n.saved["_taps"], n.saved["self_sym_sizes"]
    gd = g._data
    first = gd.ndim - len(taps)
    for k, t in enumerate(taps):
        axis, size = first + k, in_sizes[first + k]
        if len(t) == 1:
            gd = _add_along(gd, t[0], size, axis)
        else:
            xm = module_of(gd)
            n = len(t) // 2
            acc = _add_along(gd * xm.asarray(_shape(t[n], axis, gd.ndim)), t[0], size, axis)
            for j in range(1, n):
                acc = acc + _add_along(gd * xm.asarray(_shape(t[n + j], axis, gd.ndim)), t[j], size, axis)
            gd = acc
    return _out(gd.astype(g._data.dtype, copy=False), g)


_MODES = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear", "bilinear": "Bilinear",
          "trilinear": "Trilinear", "bicubic": "Bicubic"}
_KERNELS = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,), "bilinear": (2,), "trilinear": (3,),
            "bicubic": (2,)}
_ROWS = {}
for _mode, _dims in _KERNELS.items():
    for _k in _dims:
        key = f"upsample_{_mode}{_k}d"
        _ROWS[key] = _register(key, D(f"Upsample{_MODES[_mode]}{_k}DBackward0", (_backward,), forward=TR))


def upsample(input: Tensor, mode: str, output_size: list[int], scales: list[float | None],  # noqa: A002
             align_corners: bool | None) -> Tensor:
    """One of torch's upsample_<mode><k>d kernels: ``output_size`` per spatial dim, ``scales`` the
    user's scale factors (None where a size was given or they were recomputed)."""
    x = input._data
    k = x.ndim - 2
    in_sizes = x.shape[2:]
    if any(s <= 0 for s in output_size) or any(s <= 0 for s in in_sizes):
        dims = "DHW"[3 - k:] if k > 1 else "W"
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{d}: {s}" for d, s in zip(dims, in_sizes)) + ") output ("
            + ", ".join(f"{d}: {s}" for d, s in zip(dims, output_size)) + ")"
        )
    opm = np.float64 if x.dtype == np.float64 else np.float32
    linear = mode in ("linear", "bilinear", "trilinear", "bicubic")
    tap_fn = _cubic_taps if mode == "bicubic" else _linear_taps
    taps = [tap_fn(opm, i, o, s, bool(align_corners)) if linear else
            (_nearest_index(i, o, s, mode == "nearest-exact"),) for i, o, s in zip(in_sizes, output_size, scales)]
    y = _forward(x, taps).astype(x.dtype, copy=False)  # half/bfloat16 interpolate in float, as torch's opmath
    out = _wrap(np.ascontiguousarray(y) if type(y) is np.ndarray else y, input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        saved: dict[str, Any] = {"output_size": tuple(output_size), "self_sym_sizes": tuple(x.shape), "_taps": taps}
        saved.update(zip(_SCALE_NAMES[k], scales))
        if linear:
            saved["align_corners"] = bool(align_corners)
        record(_ROWS[f"upsample_{mode}{k}d"], (input,), [out], saved)
    return out
