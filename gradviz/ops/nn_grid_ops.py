"""Affine grids and grid sampling with torch's nodes: AffineGridGeneratorBackward0,
GridSampler2DBackward0 and GridSampler3DBackward0; their rows join the derivative table.

The 2-d arithmetic follows torch's CPU kernels (aten/src/ATen/native/AffineGridGenerator.cpp and
cpu/GridSamplerKernel.cpp) step by step in the input's precision, not just their maths: a spatial
transformer starts from the identity transform, so its sample points land exactly on pixel
centres, where the bilinear weights' derivative jumps. Only the same float32 rounding puts a
point on the same side of a pixel as torch, and so gives the grid the same gradient. The 3-d
sampler (torch's scalar kernel) agrees to rounding. A sample's corners are gathered from the
flattened input per batch (take_along_axis); the input's gradient is one bincount over them."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import module_of
from gradviz.ops import functions as F
from gradviz.ops._common import _ascontiguous
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _cached_part, _register, _requires
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
    """torch's affine_grid_generator_backward, composed of ops as there (so under
    create_graph=True it records ViewBackward0, BmmBackward0 and TransposeBackward0):
    (base^T @ grad.view(N, P, k)).transpose(1, 2), base a constant (N, P, k + 1) grid."""
    size, align = node["size"], node["align_corners"]
    n, spatial = size[0], tuple(size[2:])
    k = len(spatial)
    xm = module_of(g._data)
    base = _base_grid(xm, spatial, align, g._data.dtype)
    base = _wrap(_ascontiguous(np.broadcast_to(base[None], (n, *base.shape))), g.dtype, g.device)
    gt = F.bmm(F.transpose(base, 1, 2), F.view(g, n, base.shape[1], k))
    return F.transpose(gt, 1, 2)


_AFFINE = _register("affine_grid_generator", D("AffineGridGeneratorBackward0", (_affine_backward,),
    forward=TR), graph=True)


# -- grid_sampler (2-d, 3-d) ------------------------------------------------------------------------


def _fma(a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once, as the fused multiply-adds torch's float32 kernel compiles to: a
    product of float32s is exact in float64, so the sum there, rounded to float32, differs only
    where two roundings meet a tie. float64 (no wider type to hand) rounds twice."""
    if a.dtype != np.float32:
        return a * b + c
    wide = np.float64
    return ((a.astype(wide) * (b.astype(wide) if getattr(b, "ndim", 0) else wide(b))) + c).astype(a.dtype)


def _source_index(coord: Any, size: int, padding: int, align: bool, vectorised: bool) -> tuple[Any, Any]:
    """A grid coordinate in [-1, 1] as a pixel index, and d index / d coord, with the padding
    mode's clipping or reflection: as torch's ComputeLocation (the vectorised 2-d kernel) or
    grid_sampler_compute_source_index_set_grad (the scalar 3-d one), rounding included."""
    dt = coord.dtype.type
    xm = module_of(coord)
    scale = dt(size - 1) / dt(2) if align else dt(size) / dt(2)
    # unnormalize: [-1, 1] onto [0, size - 1] (align_corners) or [-0.5, size - 0.5]
    if vectorised:
        x = (coord + dt(1)) * scale if align else _fma(coord + dt(1), scale, dt(-0.5))
    else:
        x = ((coord + dt(1)) / dt(2)) * dt(size - 1) if align else ((coord + dt(1)) * dt(size) - dt(1)) / dt(2)
    mult = xm.full(coord.shape, scale, dtype=coord.dtype)
    if padding == ZEROS:
        return x, mult
    top = dt(size - 1)
    if padding == REFLECTION:
        twice_span = dt(2 * (size - 1)) if align else dt(2 * size)
        if twice_span == 0:
            return xm.zeros_like(x), xm.zeros_like(x)
        low = dt(0) if align else dt(-0.5)
        shifted = x - low
        extra = np.abs(shifted)
        extra = extra - np.trunc(extra / twice_span) * twice_span
        flipped = twice_span - extra
        more = extra > flipped
        x = np.where(more, flipped, extra) + low
        # d reflect / d x: -1 where exactly one of (a negative start, one more flip) holds
        mult = np.where(more ^ (shifted < 0), -mult, mult)
    # clip onto [0, size - 1]; torch treats the borders themselves as outside for the gradient
    mult = np.where((x > 0) & (x < top), mult, dt(0))
    return np.minimum(np.maximum(x, dt(0)), top), mult


def _corner(idx: list[Any], spatial: tuple[int, ...]) -> tuple[Any, Any]:
    """The flat index of a pixel (per-axis indices, x first; 0 where outside) and whether it lies
    inside ``spatial`` ((H, W) or (D, H, W))."""
    sizes = spatial[::-1]
    inside = None
    flat = 0
    stride = 1
    for i, size in zip(idx, sizes):
        ok = (i > -1) & (i < size)
        inside = ok if inside is None else inside & ok
        flat = flat + i * stride
        stride *= size
    return np.where(inside, flat, 0), inside


def _gather(x: Any, idx: Any, inside: Any) -> Any:
    """(N, C, P) values of (N, C, pixels) ``x`` at (N, P) flat indices, 0 where outside."""
    vals = np.take_along_axis(x, np.broadcast_to(idx[:, None, :], (*x.shape[:2], idx.shape[1])), axis=2)
    return vals * inside[:, None, :].astype(x.dtype)


def _geometry(n: Any, grid: Any, spatial: tuple[int, ...]) -> dict[str, Any]:
    """Everything a bilinear, trilinear or nearest sample needs from the grid: each corner's
    flat index, whether it is inside, its weight; each axis's distances and gradient factor."""
    k = len(spatial)
    mode, padding, align = n["interpolation_mode"], n["padding_mode"], n["align_corners"]
    g = grid.reshape(grid.shape[0], int(np.prod(grid.shape[1:-1])), k)
    # coordinate a (x, y[, z]) indexes spatial dim k - 1 - a (W, H[, D])
    locs = [_source_index(g[..., a], spatial[k - 1 - a], padding, align, k == 2) for a in range(k)]
    geo: dict[str, Any] = {"mult": [m for _, m in locs]}
    if mode == NEAREST:
        # rint: round half to even, as torch's nearbyint
        geo["corners"] = [(*_corner([_as_index(np.rint(c), spatial[k - 1 - a]) for a, (c, _) in enumerate(locs)],
                                    spatial), None)]
        return geo
    lo = [np.floor(c) for c, _ in locs]
    fr = [c - f for (c, _), f in zip(locs, lo)]  # distance past the low pixel: x - x_west
    om = [f.dtype.type(1) - f for f in fr]
    base = [_as_index(f, spatial[k - 1 - a]) for a, f in enumerate(lo)]
    geo.update(fr=fr, om=om)
    corners = []
    for bits in range(1 << k):  # x's bit fastest: nw, ne, sw, se (then the bottom layer's)
        hi = [(bits >> a) & 1 for a in range(k)]
        terms = [fr[a] if hi[a] else om[a] for a in range(k)]
        # torch's orders: y * x in 2-d, (x * y) * z in 3-d
        w = terms[1] * terms[0] if k == 2 else terms[0] * terms[1] * terms[2]
        corners.append((*_corner([b + h for b, h in zip(base, hi)], spatial), w))
    geo["corners"] = corners
    return geo


def _as_index(v: Any, size: int) -> Any:
    # far-off (or NaN) points only need to stay outside: clamping first keeps the cast defined
    v = np.nan_to_num(v, nan=-2.0)
    return np.clip(v, -2, size + 1).astype(np.int64)


class _Saved:
    """The saved values a formula reads, for the forward (which has no node yet)."""

    def __init__(self, mode: int, padding: int, align: bool) -> None:
        self._d = {"interpolation_mode": mode, "padding_mode": padding, "align_corners": align}

    def __getitem__(self, key: str) -> Any:
        return self._d[key]


def grid_sampler(input: Tensor, grid: Tensor, mode: int, padding: int, align_corners: bool) -> Tensor:
    """torch.grid_sampler: (N, C, H, W) sampled at (N, Ho, Wo, 2) -> (N, C, Ho, Wo), or the 3-d
    (N, C, D, H, W) at (N, Do, Ho, Wo, 3); a GridSampler2DBackward0 or 3D node."""
    if mode == BICUBIC:
        raise NotImplementedError("gradviz: grid_sample with mode='bicubic' is not implemented")
    x, gr = input._data, grid._data
    nb, c = x.shape[:2]
    spatial = tuple(x.shape[2:])
    geo = _geometry(_Saved(mode, padding, align_corners), gr, spatial)
    flat = _ascontiguous(x).reshape(nb, c, int(np.prod(spatial)))
    out = None
    for idx, inside, wt in geo["corners"]:
        v = _gather(flat, idx, inside)
        # in torch's order, each term fused into the sum: ((nw + ne) + sw) + se
        out = (v if wt is None else v * wt[:, None, :]) if out is None else _fma(v, wt[:, None, :], out)
    y = _ascontiguous(out).reshape(nb, c, *gr.shape[1:-1])
    res = _wrap(y, input.dtype, input.device)
    if _grad_state.enabled and (_requires(input) or _requires(grid)):
        record(_GRID_2D if len(spatial) == 2 else _GRID_3D, (input, grid), [res], {
            "input": SavedVariable(input), "grid": SavedVariable(grid), "interpolation_mode": mode,
            "padding_mode": padding, "align_corners": align_corners,
        })
    return res


def _grid_sampler_grads(node: Any, g: Tensor) -> tuple[Any, Any]:
    x, gr = node["input"]._data, node["grid"]._data
    gd = _ascontiguous(g._data)
    xm = module_of(gd)
    nb, c = x.shape[:2]
    spatial = tuple(x.shape[2:])
    k = len(spatial)
    pixels = int(np.prod(spatial))
    geo = _geometry(node, gr, spatial)
    gout = gd.reshape(nb, c, int(np.prod(gr.shape[1:-1])))
    edges = node.next_edges
    dx = dgrid = None
    if edges[0][0] is not None:
        # each output gradient, weighted, back onto the (in-bounds) pixels it sampled
        rows = xm.arange(nb * c).reshape(nb, c, 1) * pixels
        idxs, vals = [], []
        for idx, inside, wt in geo["corners"]:
            contrib = gout if wt is None else gout * wt[:, None, :]
            idxs.append((rows + idx[:, None, :]).ravel())
            vals.append((contrib * inside[:, None, :].astype(gd.dtype)).ravel())
        dx = xm.bincount(np.concatenate(idxs), weights=np.concatenate(vals), minlength=nb * c * pixels)
        dx = dx.astype(gd.dtype).reshape(x.shape)
    if edges[1][0] is not None:
        if node["interpolation_mode"] == NEAREST:
            dgrid = xm.zeros(gr.shape, dtype=gd.dtype)  # piecewise constant: torch returns zeros
        else:
            flat = _ascontiguous(x).reshape(nb, c, pixels)
            vals = [_gather(flat, idx, inside) for idx, inside, _ in geo["corners"]]
            parts = _grid_grad_2d(vals, gout, geo) if k == 2 else _grid_grad_3d(vals, gout, geo)
            parts = [p * m for p, m in zip(parts, geo["mult"])]
            dgrid = xm.stack(parts, axis=-1).astype(gd.dtype, copy=False).reshape(gr.shape)
    return dx, dgrid


def _grid_grad_2d(vals: list[Any], gout: Any, geo: dict[str, Any]) -> list[Any]:
    """d out / d (x, y) summed over channels, before the source-index factor: channel by channel,
    each step fused as in torch's vectorised kernel."""
    nw, ne, sw, se = vals
    (we, nn), (e, s) = geo["fr"], geo["om"]
    gx = gy = module_of(gout).zeros((gout.shape[0], gout.shape[2]), dtype=gout.dtype)
    for ch in range(gout.shape[1]):
        go = gout[:, ch]
        gx = _fma(_fma(se[:, ch] - sw[:, ch], nn, (ne[:, ch] - nw[:, ch]) * s), go, gx)
        gy = _fma(_fma(se[:, ch] - ne[:, ch], we, (sw[:, ch] - nw[:, ch]) * e), go, gy)
    return [gx, gy]


def _grid_grad_3d(vals: list[Any], gout: Any, geo: dict[str, Any]) -> list[Any]:
    """d out / d (x, y, z) summed over channels: each corner's value times its weight's
    derivative along the axis (the other axes' distances, signed by the corner's side)."""
    fr, om = geo["fr"], geo["om"]
    parts = []
    for a in range(3):
        total = None
        for bits, v in enumerate(vals):
            hi = [(bits >> b) & 1 for b in range(3)]
            d = None
            for b in range(3):
                if b != a:
                    t = fr[b] if hi[b] else om[b]
                    d = t if d is None else d * t
            term = v * (d if hi[a] else -d)[:, None, :]
            total = term if total is None else total + term
        parts.append((total * gout).sum(axis=1))
    return parts


# A double backward through these nodes (torch's GridSampler2DBackwardBackward0) is not
# implemented: the formulas compute on arrays, and _register makes them refuse create_graph.
_GRADS = (_cached_part(_grid_sampler_grads, 0), _cached_part(_grid_sampler_grads, 1))
_GRID_2D = _register("grid_sampler_2d", D("GridSampler2DBackward0", _GRADS))
_GRID_3D = _register("grid_sampler_3d", D("GridSampler3DBackward0", _GRADS))
