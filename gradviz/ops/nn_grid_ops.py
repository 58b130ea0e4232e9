"""Affine grids and grid sampling with torch's nodes: AffineGridGeneratorBackward0 and
GridSampler2DBackward0; their rows join the derivative table.

The arithmetic follows torch's CPU kernels (aten/src/ATen/native/AffineGridGenerator.cpp and
cpu/GridSamplerKernel.cpp) step by step in the input's precision, not just their maths: a spatial
transformer starts from the identity transform, so its sample points land exactly on pixel
centres, where the bilinear weights' derivative jumps. Only the same float32 rounding puts a
point on the same side of a pixel as torch, and so gives the grid the same gradient."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import module_of
from gradviz.ops._common import _ascontiguous
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

_wrap = Tensor._wrap

# torch's enums, as grid_sampler takes and its node saves them
BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2


# -- affine_grid_generator ---------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _linspace_from_neg_one(steps: int, align_corners: bool, dtype: Any) -> np.ndarray:
    """torch's linspace_from_neg_one: linspace(-1, 1) (the first half stepped up from -1, the
    second down from 1), scaled by (steps - 1) / steps without align_corners, all in ``dtype``.
    A host array, read-only: cached, since every forward and backward needs it."""
    if steps <= 1:
        r = np.zeros(1, dtype=dtype)
    else:
        step = (dtype.type(1) - dtype.type(-1)) / dtype.type(steps - 1)
        # torch's kernel computes start + step * i in one fused multiply-add (one rounding):
        # exact rationals, rounded once by float(), then to float32 (exact: a float32 step
        # times a small integer plus 1 is a double already)
        q = Fraction(float(step))
        half = steps // 2
        r = np.array([float(-1 + q * i) if i < half else float(1 - q * (steps - 1 - i)) for i in range(steps)])
        r = r.astype(dtype)
        if not align_corners:
            # two roundings, as torch's range * (num_steps - 1) / num_steps
            r = (r * dtype.type(steps - 1)) / dtype.type(steps)
    r.flags.writeable = False
    return r


def _base_grid(xm: Any, spatial: tuple[int, ...], align_corners: bool, dtype: Any) -> Any:
    """(prod(spatial), k + 1): each output position's coordinates, x first, then a 1."""
    k = len(spatial)
    axes = [xm.asarray(_linspace_from_neg_one(s, align_corners, np.dtype(dtype))) for s in spatial]
    base = xm.empty((*spatial, k + 1), dtype=dtype)
    for j in range(k):
        # coordinate j (x, y[, z]) varies along spatial dim k - 1 - j (W, H[, D])
        shape = [1] * k
        shape[k - 1 - j] = spatial[k - 1 - j]
        base[..., j] = axes[k - 1 - j].reshape(shape)
    base[..., k] = 1
    return base.reshape(-1, k + 1)


def affine_grid_generator(theta: Tensor, size: tuple[int, ...], align_corners: bool) -> Tensor:
    """torch.affine_grid_generator: (N, *spatial, k) = base grid @ theta^T, one node."""
    t = theta._data
    xm = module_of(t)
    n, spatial = size[0], tuple(size[2:])
    base = _base_grid(xm, spatial, align_corners, t.dtype)
    grid = np.matmul(base[None], t.transpose(0, 2, 1)).reshape(n, *spatial, len(spatial))
    out = _wrap(_ascontiguous(grid), theta.dtype, theta.device)
    if _grad_state.enabled and _requires(theta):
        record(_AFFINE, (theta,), [out], {"size": tuple(size), "align_corners": align_corners})
    return out


def _affine_backward(node: Any, g: Tensor) -> Tensor:
    # torch's affine_grid_generator_backward: base^T @ grad, transposed to (N, k, k + 1)
    size, align = node["size"], node["align_corners"]
    gd = g._data
    spatial = tuple(size[2:])
    base = _base_grid(module_of(gd), spatial, align, gd.dtype)
    gt = np.matmul(base.T[None], gd.reshape(size[0], -1, len(spatial)))
    return _out(_ascontiguous(gt.transpose(0, 2, 1)), g)


_AFFINE = _register("affine_grid_generator", D("AffineGridGeneratorBackward0", (_affine_backward,)))


# -- grid_sampler_2d ---------------------------------------------------------------------------


def _fma(a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once, as the fused multiply-adds torch's float32 kernel compiles to: a
    product of float32s is exact in float64, so the sum there, rounded to float32, differs only
    where two roundings meet a tie. float64 (no wider type to hand) rounds twice."""
    if a.dtype != np.float32:
        return a * b + c
    wide = np.float64
    return ((a.astype(wide) * (b.astype(wide) if getattr(b, "ndim", 0) else wide(b))) + c).astype(a.dtype)


def _source_index(coord: Any, size: int, padding: int, align: bool, with_grad: bool) -> tuple[Any, Any]:
    """A grid coordinate in [-1, 1] as a pixel index (and, when asked, d index / d coord), with
    the padding mode's clipping or reflection, as torch's ComputeLocation."""
    dt = coord.dtype.type
    xm = module_of(coord)
    scale = dt(size - 1) / dt(2) if align else dt(size) / dt(2)
    # unnormalize: [-1, 1] onto [0, size - 1] (align_corners) or [-0.5, size - 0.5]
    x = (coord + dt(1)) * scale if align else _fma(coord + dt(1), scale, dt(-0.5))
    mult = xm.full(coord.shape, scale, dtype=coord.dtype) if with_grad else None
    if padding == ZEROS:
        return x, mult
    top = dt(size - 1)
    if padding == REFLECTION:
        twice_span = dt(2 * (size - 1)) if align else dt(2 * size)
        if twice_span == 0:
            return xm.zeros_like(x), (xm.zeros_like(x) if with_grad else None)
        low = dt(0) if align else dt(-0.5)
        shifted = x - low
        extra = xm.abs(shifted)
        extra = extra - xm.trunc(extra / twice_span) * twice_span
        flipped = twice_span - extra
        more = extra > flipped
        x = xm.where(more, flipped, extra) + low
        if with_grad:
            # d reflect / d x: -1 where exactly one of (a negative start, one more flip) holds
            mult = xm.where(more ^ (shifted < 0), -mult, mult)
    # clip onto [0, size - 1]; torch treats the borders themselves as outside for the gradient
    if with_grad:
        mult = xm.where((x > 0) & (x < top), mult, dt(0))
    return xm.minimum(xm.maximum(x, dt(0)), top), mult


def _corner(ix: Any, iy: Any, h: int, w: int) -> tuple[Any, Any]:
    """The flat index of pixel (iy, ix) (0 where outside) and whether it lies inside."""
    inside = (ix > -1) & (ix < w) & (iy > -1) & (iy < h)
    return module_of(ix).where(inside, iy * w + ix, 0), inside


def _gather(x: Any, idx: Any, inside: Any) -> Any:
    """(N, C, P) values of (N, C, H * W) ``x`` at (N, P) flat indices, 0 where outside."""
    xm = module_of(x)
    vals = xm.take_along_axis(x, xm.broadcast_to(idx[:, None, :], (*x.shape[:2], idx.shape[1])), axis=2)
    return vals * inside[:, None, :].astype(x.dtype)


def _geometry(n: Any, grid: Any, hw: tuple[int, int]) -> dict[str, Any]:
    """Everything a bilinear or nearest sample needs from the grid, with the gradient factors."""
    h, w = hw
    mode, padding, align = n["interpolation_mode"], n["padding_mode"], n["align_corners"]
    g = grid.reshape(grid.shape[0], grid.shape[1] * grid.shape[2], 2)
    x, gx_mult = _source_index(g[..., 0], w, padding, align, True)
    y, gy_mult = _source_index(g[..., 1], h, padding, align, True)
    xm = module_of(grid)
    geo: dict[str, Any] = {"x": x, "y": y, "gx_mult": gx_mult, "gy_mult": gy_mult}
    if mode == NEAREST:
        # rint: round half to even, as torch's nearbyint
        geo["corners"] = [(*_corner(_as_index(xm, xm.rint(x), w), _as_index(xm, xm.rint(y), h), h, w), None)]
        return geo
    x_w, y_n = xm.floor(x), xm.floor(y)
    we = x - x_w  # distance to the west column
    e = x.dtype.type(1) - we
    nn = y - y_n
    s = y.dtype.type(1) - nn
    ix, iy = _as_index(xm, x_w, w), _as_index(xm, y_n, h)
    geo.update(we=we, e=e, n=nn, s=s)
    geo["corners"] = [
        (*_corner(ix, iy, h, w), s * e),
        (*_corner(ix + 1, iy, h, w), s * we),
        (*_corner(ix, iy + 1, h, w), nn * e),
        (*_corner(ix + 1, iy + 1, h, w), nn * we),
    ]
    return geo


def _as_index(xm: Any, v: Any, size: int) -> Any:
    # far-off (or NaN) points only need to stay outside: clamping first keeps the cast defined
    v = xm.nan_to_num(v, nan=-2.0)
    return xm.clip(v, -2, size + 1).astype(np.int64)


class _Saved:
    """The saved values a formula reads, for the forward (which has no node yet)."""

    def __init__(self, mode: int, padding: int, align: bool) -> None:
        self._d = {"interpolation_mode": mode, "padding_mode": padding, "align_corners": align}

    def __getitem__(self, key: str) -> Any:
        return self._d[key]


def grid_sampler_2d(input: Tensor, grid: Tensor, mode: int, padding: int, align_corners: bool) -> Tensor:
    """torch.grid_sampler on 4-d input: (N, C, H, W) sampled at (N, Ho, Wo, 2) -> (N, C, Ho, Wo)."""
    if mode == BICUBIC:
        raise NotImplementedError("gradviz: grid_sample with mode='bicubic' is not implemented")
    x, gr = input._data, grid._data
    nb, c, h, w = x.shape
    ho, wo = grid.shape[1], grid.shape[2]
    geo = _geometry(_Saved(mode, padding, align_corners), gr, (h, w))
    flat = _ascontiguous(x).reshape(nb, c, h * w)
    out = None
    for idx, inside, wt in geo["corners"]:
        v = _gather(flat, idx, inside)
        # in torch's order, each term fused into the sum: ((nw + ne) + sw) + se
        out = (v if wt is None else v * wt[:, None, :]) if out is None else _fma(v, wt[:, None, :], out)
    y = _ascontiguous(out).reshape(nb, c, ho, wo)
    res = _wrap(y, input.dtype, input.device)
    if _grad_state.enabled and (_requires(input) or _requires(grid)):
        record(_GRID_2D, (input, grid), [res], {
            "input": SavedVariable(input), "grid": SavedVariable(grid), "interpolation_mode": mode,
            "padding_mode": padding, "align_corners": align_corners,
        })  # fmt: skip
    return res


def _grid_sampler_grads(node: Any, g: Tensor) -> tuple[Any, Any]:
    x, gr = node["input"]._data, node["grid"]._data
    gd = _ascontiguous(g._data)
    xm = module_of(gd)
    nb, c, h, w = x.shape
    geo = _geometry(node, gr, (h, w))
    gout = gd.reshape(nb, c, gd.shape[2] * gd.shape[3])
    edges = node.next_edges
    dx = dgrid = None
    if edges[0][0] is not None:
        # each output gradient, weighted, back onto the (in-bounds) pixels it sampled
        rows = (xm.arange(nb * c).reshape(nb, c, 1) * (h * w))
        idxs, vals = [], []
        for idx, inside, wt in geo["corners"]:
            contrib = gout if wt is None else gout * wt[:, None, :]
            idxs.append((rows + idx[:, None, :]).ravel())
            vals.append((contrib * inside[:, None, :].astype(gd.dtype)).ravel())
        dx = xm.bincount(xm.concatenate(idxs), weights=xm.concatenate(vals), minlength=nb * c * h * w)
        dx = dx.astype(gd.dtype).reshape(x.shape)
    if edges[1][0] is not None:
        if node["interpolation_mode"] == NEAREST:
            dgrid = xm.zeros(gr.shape, dtype=gd.dtype)  # piecewise constant: torch returns zeros
        else:
            flat = _ascontiguous(x).reshape(nb, c, h * w)
            nw, ne, sw, se = (_gather(flat, idx, inside) for idx, inside, _ in geo["corners"])
            s, nn, e, we = (geo[k] for k in ("s", "n", "e", "we"))
            gx = gy = xm.zeros((nb, gout.shape[2]), dtype=gd.dtype)
            # channel by channel, each step fused as in torch's kernel
            for ch in range(c):
                go = gout[:, ch]
                gx = _fma(_fma(se[:, ch] - sw[:, ch], nn, (ne[:, ch] - nw[:, ch]) * s), go, gx)
                gy = _fma(_fma(se[:, ch] - ne[:, ch], we, (sw[:, ch] - nw[:, ch]) * e), go, gy)
            gx, gy = gx * geo["gx_mult"], gy * geo["gy_mult"]
            dgrid = xm.stack([gx, gy], axis=-1).astype(gd.dtype, copy=False).reshape(gr.shape)
    return dx, dgrid


def _grid_from_cache(i: int) -> Any:
    def grad(node: Any, g: Tensor) -> Tensor | None:
        # both gradients come from one pass over the samples, kept for the other formula
        cache = node.saved.get("_parts")
        if cache is None or cache[0] is not g:
            cache = (g, _grid_sampler_grads(node, g))
            node.saved["_parts"] = cache
        part = cache[1][i]
        return None if part is None else _out(_ascontiguous(part), g)

    return grad


# torch's grid_sampler_2d_backward has no derivative of its own either: a double backward
# through this node is refused there too.
_GRID_2D = _register("grid_sampler_2d", D("GridSampler2DBackward0", (_grid_from_cache(0), _grid_from_cache(1))))
