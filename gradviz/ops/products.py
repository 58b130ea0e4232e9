"""Products, distances and the matrix builders torch composes from other ops: cross, kron,
inner, tensordot, chain_matmul, addbmm/addmv/addr, cdist/pdist/dist, renorm, block_diag,
diagflat, rot90, vander, trapezoid/trapz/cumulative_trapezoid, cartesian_prod, combinations,
cov, corrcoef, logdet.

Where torch composes an op from others (kron, tensordot, vander, trapezoid, cov, ...) it is
composed here the same way, so the graph has torch's nodes; where torch has its own kernel and
node (LinalgCrossBackward0, CdistBackward0, Rot90Backward0, ...) it has one here too.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import activations as _activations
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import cumulative as _cumulative
from gradviz.ops import diag_ops as _diag_ops
from gradviz.ops import indexing as _indexing
from gradviz.ops import inplace as _inplace
from gradviz.ops import linalg as _linalg
from gradviz.ops import linalg_solvers as _solvers
from gradviz.ops import math_binary as _math_binary
from gradviz.ops import math_more as _math_more
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import reductions as _reductions
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, _wrap_dim, register, result_type
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_variants import inplace_of
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "addbmm", "addmv", "addmv_", "addr", "block_diag", "cartesian_prod", "cdist", "chain_matmul", "combinations",
    "corrcoef", "cov", "cross", "cumulative_trapezoid", "diagflat", "dist", "inner", "kron", "logdet", "pdist",
    "renorm", "rot90", "tensordot", "trapezoid", "trapz", "vander",
]


def _grad_needed(*ts: Any) -> bool:
    return _grad_state.enabled and builtins.any(isinstance(t, Tensor) and t._tracked for t in ts)


# -- cross -----------------------------------------------------------------------------------------
def linalg_cross(a: Tensor, b: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along dim, a and b broadcast (LinalgCrossBackward0)."""
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = np.broadcast_shapes(a.shape, b.shape)
    d = _wrap_dim(dim, len(shape))
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[d]} and "
                           f"{b.shape[d]}")
    dt = result_type(a, b)
    x, y = np.broadcast_to(a._data, shape).astype(dt.np), np.broadcast_to(b._data, shape).astype(dt.np)
    out = _new(np.ascontiguousarray(np.cross(x, y, axis=d)), a.device)
    if _grad_needed(a, b):
        record(NODES["cross"], (a, b), [out], {"self": save(a), "other": save(b), "dim": d})
    return out


def cross(a: Tensor, b: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: linalg.cross, along the first dim of size 3 when dim is not given."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        shape = np.broadcast_shapes(a.shape, b.shape)
        dim = next((i for i, n in enumerate(shape) if n == 3), -1)
    return linalg_cross(a, b, dim=dim)


# -- compositions of mm ----------------------------------------------------------------------------
def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """Sum over dims of a and b: permuted, reshaped to matrices, mm, reshaped back (torch's)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0])), \
                 ([dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    da = [_wrap_dim(d, a.ndim) for d in da]
    db = [_wrap_dim(d, b.ndim) for d in db]
    for i, j in zip(da, db, strict=True):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} and "
                               f"second has size {b.shape[j]} in dim {j}")
    keep_a = [i for i in range(a.ndim) if i not in da]
    keep_b = [i for i in range(b.ndim) if i not in db]
    csize = int(np.prod([a.shape[i] for i in da]))
    size1 = int(np.prod([a.shape[i] for i in keep_a]))
    size2 = int(np.prod([b.shape[i] for i in keep_b]))
    if not keep_a and not keep_b:  # everything contracted: a dot of the flattened tensors (torch's)
        flat_a = _views.reshape(_views.permute(a, *da), (csize,))
        return _views.reshape(_linalg.dot(flat_a, _views.reshape(_views.permute(b, *db), (csize,))), ())
    t1 = _views.reshape(_views.permute(a, *keep_a, *da), (size1, csize))
    t2 = _views.reshape(_views.permute(b, *db, *keep_b), (csize, size2))
    return _views.reshape(_linalg.mm(t1, t2), tuple(a.shape[i] for i in keep_a) + tuple(b.shape[i] for i in keep_b))


def inner(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim == 0 or b.ndim == 0:
        return _arith.mul(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    return tensordot(a, b, ([-1], [-1]))


def kron(a: Tensor, b: Tensor) -> Tensor:
    """Kronecker product: a and b unsafe-viewed with interleaved singleton dims, multiplied, then
    an unsafe view to the product's shape (UnsafeViewBackward0 over MulBackward0 over one
    UnsafeViewBackward0 per input, as torch's kron)."""
    nd = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    ra = [n for s in sa for n in (s, 1)]
    rb = [n for s in sb for n in (1, s)]
    prod = _arith.mul(_views._unsafe_view(a, tuple(ra)), _views._unsafe_view(b, tuple(rb)))
    return _views._unsafe_view(prod, tuple(x * y for x, y in zip(sa, sb, strict=True)))


def chain_matmul(*matrices: Tensor) -> Tensor:
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return _views.clone(matrices[0])
    return _solvers.multi_dot(list(matrices))


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """beta * input + alpha * sum_b batch1[b] @ batch2[b] (AddbmmBackward0)."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    prod = np.matmul(batch1._data, batch2._data).sum(0)
    data = (input._data * beta if beta != 1 else input._data) + (prod * alpha if alpha != 1 else prod)
    if beta == 0:
        data = prod * alpha + np.zeros_like(input._data)
    out = _new(np.ascontiguousarray(np.broadcast_to(data, prod.shape)).astype(input._data.dtype), input.device)
    if _grad_needed(input, batch1, batch2):
        record(NODES["addbmm"], (input, batch1, batch2), [out], {
            "batch1": save(batch1), "batch2": save(batch2), "alpha": alpha, "beta": beta})
    return out


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat @ vec) (AddmvBackward0)."""
    prod = mat._data @ vec._data
    data = (prod * alpha) + (input._data * beta if beta != 0 else 0)
    out = _new(np.ascontiguousarray(np.broadcast_to(data, prod.shape)).astype(mat._data.dtype), mat.device)
    if _grad_needed(input, mat, vec):
        record(NODES["addmv"], (input, mat, vec), [out], {
            "mat": save(mat), "vec": save(vec), "alpha": alpha, "beta": beta})
    return out


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """beta * input + alpha * outer(vec1, vec2) (AddrBackward0)."""
    prod = np.multiply.outer(vec1._data, vec2._data)
    data = (prod * alpha) + (input._data * beta if beta != 0 else 0)
    out = _new(np.ascontiguousarray(np.broadcast_to(data, prod.shape)).astype(vec1._data.dtype), vec1.device)
    if _grad_needed(input, vec1, vec2):
        record(NODES["addr"], (input, vec1, vec2), [out], {
            "vec1": save(vec1), "vec2": save(vec2), "alpha": alpha, "beta": beta})
    return out


addmv_ = inplace_of("addmv_", addmv)


# -- distances -------------------------------------------------------------------------------------
def _pnorm(diff: Any, p: float, axis: int) -> Any:
    a = np.abs(diff)
    if p == 0:
        return (a != 0).sum(axis).astype(diff.dtype)
    if p == math.inf:
        return a.max(axis) if a.shape[axis] else np.zeros(a.shape[:axis] + a.shape[axis + 1:], a.dtype)
    if p == 1:
        return a.sum(axis)
    if p == 2:
        return np.sqrt((a * a).sum(axis))
    return (a ** p).sum(axis) ** (1.0 / p)


def _pnorm_grad(diff: Tensor, dist: Tensor, p: float) -> Tensor:
    """d dist / d diff for dist = ||diff||_p over the last dim (dist broadcast against diff),
    zero where dist is 0, as torch's cdist/pdist/dist backward kernels."""
    if p == 0:
        return _construction.zeros_like(diff)
    if p == 1:
        return _pointwise.sign(diff)
    zero = _pointwise.eq(dist, 0)
    safe = _indexing.masked_fill(dist, zero, 1.0)
    if p == 2:
        term = _arith.div(diff, safe)
    elif p == math.inf:
        hit = _pointwise.eq(_pointwise.abs(diff), dist)
        term = _arith.mul(_pointwise.sign(diff), hit)
    else:
        term = _arith.div(_arith.mul(_pointwise.sign(diff), _arith.pow(_pointwise.abs(diff), p - 1)),
                          _arith.pow(safe, p - 1))
    return _indexing.masked_fill(term, zero, 0.0)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """Pairwise p-norm distances between the rows of x1 and of x2, batched (CdistBackward0)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    mm_mode = compute_mode in (None, "use_mm_for_euclid_dist_if_necessary")
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or mm_mode and builtins.max(x1.shape[-2],
                                                                                       x2.shape[-2]) > 25):
        return _euclidean_dist(x1, x2)
    diff = x1._data[..., :, None, :] - x2._data[..., None, :, :]
    out = _new(np.ascontiguousarray(_pnorm(diff, p, -1)), x1.device)
    if _grad_needed(x1, x2):
        record(NODES["cdist"], (x1, x2), [out], {"x1": save(x1), "x2": save(x2), "p": p, "result": save(out, True)})
    return out


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    """torch's matrix-product form of 2-norm distances (for many rows): |a|^2 - 2ab + |b|^2 by one
    matmul of padded operands, clamped at 0 (EuclideanDistBackward0), on the inputs expanded to
    one batch shape and viewed as 3-dim, the result viewed back."""
    batch = tuple(np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    nb = int(np.prod(batch))
    e1 = _views.reshape(_views.expand(x1, (*batch, *x1.shape[-2:])), (nb, *x1.shape[-2:]))
    e2 = _views.reshape(_views.expand(x2, (*batch, *x2.shape[-2:])), (nb, *x2.shape[-2:]))
    a, b = e1._data, e2._data
    n1, n2 = (a * a).sum(-1, keepdims=True), (b * b).sum(-1, keepdims=True)
    left = np.concatenate([a * -2, n1, np.ones_like(n1)], -1)
    right = np.concatenate([b, np.ones_like(n2), n2], -1)
    out = _new(np.sqrt(np.maximum(left @ np.swapaxes(right, -1, -2), 0)), x1.device)
    if _grad_needed(e1, e2):
        record(NODES["euclidean_dist"], (e1, e2), [out], {"x1": save(e1), "x2": save(e2), "result": save(out, True)})
    return _views.view(out, (*batch, x1.shape[-2], x2.shape[-2]))


def _euclidean_grads(n, g):
    x1, x2, res = n["x1"], n["x2"], n["result"]
    ratio = _indexing.masked_fill(_arith.div(g, res), _pointwise.eq(res, 0), 0.0)
    g1 = _arith.sub(_arith.mul(x1, _reductions.sum(ratio, -1, True)), _linalg.matmul(ratio, x2))
    g2 = _arith.sub(_arith.mul(x2, _views.unsqueeze(_reductions.sum(ratio, -2), -1)),
                    _linalg.matmul(_views.transpose(ratio, -2, -1), x1))
    return [g1, g2]


def _pairs(n: int) -> tuple[Any, Any]:
    return np.triu_indices(n, 1)


def pdist(x: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of x, i < j in row order (PdistBackward0)."""
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    i, j = _pairs(x.shape[0])
    out = _new(np.ascontiguousarray(_pnorm(x._data[i] - x._data[j], p, -1)), x.device)
    if _grad_needed(x):
        record(NODES["pdist"], (x,), [out], {"self": save(x), "p": p, "result": save(out, True)})
    return out


def dist(a: Tensor, b: Tensor, p: float = 2) -> Tensor:
    """The p-norm of a - b (broadcast) (DistBackward0)."""
    diff = (a._data - b._data).reshape(-1)
    out = _new(np.asarray(_pnorm(diff, float(p), 0), dtype=result_type(a, b).np), a.device)
    if _grad_needed(a, b):
        record(NODES["dist"], (a, b), [out], {"self": save(a), "other": save(b), "p": float(p),
                                               "result": save(out, True)})
    return out


def renorm(a: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to it (RenormBackward0)."""
    d = _wrap_dim(dim, a.ndim)
    axes = tuple(i for i in range(a.ndim) if i != d)
    norm = _pnorm_keep(a._data.astype(np.float64), p, axes)
    factor = np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    out = _new((a._data * factor).astype(a._data.dtype), a.device)
    if _grad_needed(a):
        record(NODES["renorm"], (a,), [out], {"self": save(a), "p": p, "dim": d, "maxnorm": maxnorm})
    return out


def _pnorm_keep(x: Any, p: float, axes: tuple[int, ...]) -> Any:
    flat = np.moveaxis(x, [i for i in range(x.ndim) if i not in axes], 0) if axes else x[None]
    n = _pnorm(flat.reshape(flat.shape[0] if axes else 1, -1), p, -1)
    shape = [1] * x.ndim
    for i in range(x.ndim):
        if i not in axes:
            shape[i] = x.shape[i]
    return n.reshape(shape)


# -- builders --------------------------------------------------------------------------------------
def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-dim) on the diagonal of one matrix (BlockDiagBackward0)."""
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    # 0-dim tensors are 1x1 blocks, 1-dim ones rows; the node's edges are the tensors themselves
    blocks = [t._data.reshape(1, -1) if t.ndim < 2 else t._data for t in tensors]
    dt = tensors[0].dtype if tensors else _dtype._default[0]
    for t in tensors[1:]:
        dt = _dtype.promote(dt, t.dtype)
    rows = builtins.sum(b.shape[0] for b in blocks)
    cols = builtins.sum(b.shape[1] for b in blocks)
    data = np.zeros((rows, cols), dtype=dt.np)
    r = c = 0
    spans = []
    for b in blocks:
        data[r:r + b.shape[0], c:c + b.shape[1]] = b
        spans.append((r, r + b.shape[0], c, c + b.shape[1]))
        r, c = r + b.shape[0], c + b.shape[1]
    out = _new(data, tensors[0].device if tensors else None)
    if _grad_needed(*tensors):
        record(NODES["block_diag"], tuple(tensors), [out], {"spans": spans, "shapes": [t.shape for t in tensors]})
    return out


def diagflat(a: Tensor, offset: int = 0) -> Tensor:
    return _diag_ops.diag_embed(_views.view(_views.contiguous(a), (-1,)), offset)


def rot90(a: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """a rotated by 90 degrees k times in the plane of dims (Rot90Backward0)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if a.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {a.ndim}")
    d0, d1 = _wrap_dim(dims[0], a.ndim), _wrap_dim(dims[1], a.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    out = _new(np.ascontiguousarray(np.rot90(a._data, k, (d0, d1))), a.device)
    if _grad_needed(a):
        record(NODES["rot90"], (a,), [out], {"k": k, "dims": (d0, d1)})
    return out


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """torch.vander: powers of x in columns, as torch builds it: fill with 1, copy x into the columns
    past the first, cumprod them in place, then flip unless increasing."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _dtype.promote(x.dtype, _dtype.int64)
    result = _construction.ones(x.shape[0], n, dtype=dt)
    if n > 1:
        _inplace.setitem(result, (slice(None), slice(1, None)), _views.unsqueeze(x, 1))
        _inplace.setitem(result, (slice(None), slice(1, None)),
                         _cumulative.cumprod(_indexing.getitem(result, (slice(None), slice(1, None))), 1))
    return result if increasing else _shape.flip(result, [1])


def linalg_vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803
    """torch.linalg.vander: [1, x, x**2, ...] along a new last dim: ones, then the cumulative
    product of x expanded (CatBackward0)."""
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n < 2:
        if n < 1:
            raise RuntimeError("linalg.vander: N must be greater than 1.")
        return _construction.ones(*x.shape, 1, dtype=x.dtype)
    dt = _dtype.promote(x.dtype, _dtype.int64)
    xs = x if x.dtype is dt else _views.to_copy(x, dt)
    ones = _construction.ones(*x.shape, 1, dtype=dt)
    powers = _cumulative.cumprod(_views.expand(_views.unsqueeze(xs, -1), (*x.shape, n - 1)), -1)
    return _shape.cat([ones, powers], -1)


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoid rule along dim, with spacing dx or sample points x (torch's composition)."""
    d = _wrap_dim(dim, y.ndim)
    n = y.shape[d]
    if isinstance(x, Tensor):
        if n == 0:
            return _reductions.sum(y, d)
        xd = _math_more.diff(x, dim=d if x.ndim == y.ndim else -1)
        if x.ndim == 1 and y.ndim > 1:
            shape = [1] * y.ndim
            shape[d] = xd.shape[0]
            xd = _views.view(xd, shape)
        ys = _arith.add(_shape.narrow(y, d, 1, n - 1), _shape.narrow(y, d, 0, n - 1))
        return _arith.div_scalar(_reductions.sum(_arith.mul(xd, ys), d), 2.0)
    spacing = 1 if x is None and dx is None else (dx if dx is not None else x)
    if n == 0:
        return _arith.mul_scalar(_reductions.sum(y, d), spacing)
    ends = _arith.add(_indexing.select(y, d, 0), _indexing.select(y, d, -1))
    return _arith.mul_scalar(_arith.sub(_reductions.sum(y, d), _arith.mul_scalar(ends, 0.5)), spacing)


def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    d = _wrap_dim(dim, y.ndim)
    n = y.shape[d]
    ys = _arith.add(_shape.narrow(y, d, 1, builtins.max(n - 1, 0)), _shape.narrow(y, d, 0, builtins.max(n - 1, 0)))
    if isinstance(x, Tensor):
        xd = _math_more.diff(x, dim=d if x.ndim == y.ndim else -1)
        if x.ndim == 1 and y.ndim > 1:
            shape = [1] * y.ndim
            shape[d] = xd.shape[0]
            xd = _views.view(xd, shape)
        return _arith.div_scalar(_cumulative.cumsum(_arith.mul(xd, ys), d), 2.0)
    spacing = 1 if dx is None else dx
    return _cumulative.cumsum(_arith.mul_scalar(ys, spacing / 2.0), d)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of the 1-dim tensors' elements, one per row (meshgrid, flatten, stack)."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _construction.meshgrid(*tensors, indexing="ij")
    return _shape.stack([_views.flatten(g) for g in grids], 1)


def combinations(a: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-r combinations of a 1-dim tensor's elements (masked selects of a meshgrid)."""
    if a.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(a.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _construction.empty(0, dtype=a.dtype)
    n = a.shape[0]
    grids = _construction.meshgrid(*([a] * r), indexing="ij")
    idx = np.indices((n,) * r) if n else np.zeros((r,) + (0,) * r, np.int64)
    mask = np.ones((n,) * r, bool)
    for i in range(r - 1):
        mask &= (idx[i] <= idx[i + 1]) if with_replacement else (idx[i] < idx[i + 1])
    m = _new(mask, a.device)
    return _shape.stack([_math_more.masked_select(g, m) for g in grids], 1)


def cov(a: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None) -> Tensor:
    """The covariance of the rows (variables) over the columns (observations), as torch composes it."""
    if a.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {a.ndim} "
                           "dimensions")
    x = _views.view(a, (1, -1)) if a.ndim < 2 else a
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else _arith.mul(w, aweights)
    if w is not None:
        w_sum = _reductions.sum(w)
        avg = _arith.div(_reductions.sum(_arith.mul(x, w), 1), w_sum)
    else:
        w_sum = _new(np.asarray(n_obs, dtype=np.int64), a.device)
        avg = _arith.div(_reductions.sum(x, 1), w_sum)
    if w is not None and correction != 0:
        norm = (_arith.sub(w_sum, _arith.div(_arith.mul(_reductions.sum(_arith.mul(w, aweights)), correction), w_sum))
                if aweights is not None else _arith.sub(w_sum, correction))
    else:
        norm = _arith.sub(w_sum, correction)
    if bool(norm._data <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = _construction.zeros_like(norm)
    centered = _arith.sub(x, _views.unsqueeze(avg, 1))
    c = _linalg.mm(centered, _views.t(_arith.mul(centered, w) if w is not None else centered))
    return _views.squeeze(_arith.div(c, norm))


def corrcoef(a: Tensor) -> Tensor:
    c = cov(a)
    if c.ndim == 0:
        return _arith.div(c, c)
    sd = _pointwise.sqrt(_math_more.diagonal(c))
    c = _arith.div(c, _views.view(sd, (-1, 1)))
    c = _arith.div(c, _views.view(sd, (1, -1)))
    return _activations.clamp(c, -1, 1)


def logdet(a: Tensor) -> Tensor:
    """log det a: NaN for a negative determinant (WhereBackward0 over slogdet's)."""
    sign, logabs = _solvers.slogdet(a)
    nan = _construction.full((), math.nan, dtype=logabs.dtype)
    return _arith.where(_pointwise.eq(sign, -1), nan, logabs)


# -- backward formulas -----------------------------------------------------------------------------
def _cross_grads(n, g):
    d = n["dim"]
    return [linalg_cross(n["other"], g, dim=d), linalg_cross(g, n["self"], dim=d)]


def _addbmm_grads(n, g):
    b1, b2, alpha, beta = n["batch1"], n["batch2"], n["alpha"], n["beta"]
    ge = _views.expand(_views.unsqueeze(g, 0), (b1.shape[0], *g.shape))
    gi = g if beta == 1 else _arith.mul_scalar(g, beta)
    g1 = _linalg.bmm(ge, _views.transpose(b2, 1, 2))
    g2 = _linalg.bmm(_views.transpose(b1, 1, 2), ge)
    if alpha != 1:
        g1, g2 = _arith.mul_scalar(g1, alpha), _arith.mul_scalar(g2, alpha)
    return [gi, g1, g2]


def _scaled(t: Tensor, c: Any) -> Tensor:
    return t if c == 1 else _arith.mul_scalar(t, c)


def _cdist_grads(n, g):
    x1, x2, p = n["x1"], n["x2"], n["p"]
    graph = _grad_state.enabled  # create_graph: torch's _cdist_backward has no derivative of its own
    if graph:
        _grad_state.enabled = False
    try:
        diff = _arith.sub(_views.unsqueeze(x1, -2), _views.unsqueeze(x2, -3))
        term = _arith.mul(_views.unsqueeze(g, -1), _pnorm_grad(diff, _views.unsqueeze(n["result"], -1), p))
        grads = [_reductions.sum(term, -2), _arith.neg(_reductions.sum(term, -3))]
    finally:
        _grad_state.enabled = graph
    if graph:
        for gi, (a, b) in zip(grads, ((x1, x2), (x2, x1)), strict=True):
            if g.requires_grad or a.requires_grad or b.requires_grad:
                record(NODES["cdist_backward"], (g, a, b), [gi], {})
    return grads


def _cdist_backward_not_implemented(n, g):
    raise NotImplementedError("the derivative for '_cdist_backward' is not implemented.")


def _pdist_grad(n, g):
    x, p = n["self"], n["p"]
    i, j = (_new(k.astype(np.int64), x.device) for k in _pairs(x.shape[0]))
    diff = _arith.sub(_indexing.index_select(x, 0, i), _indexing.index_select(x, 0, j))
    term = _arith.mul(_views.unsqueeze(g, -1), _pnorm_grad(diff, _views.unsqueeze(n["result"], -1), p))
    zeros = _construction.zeros_like(x)
    return _arith.sub(_indexing.index_add(zeros, 0, i, term), _indexing.index_add(zeros, 0, j, term))


def _dist_grads(n, g):
    diff = _arith.sub(n["self"], n["other"])
    term = _arith.mul(g, _pnorm_grad(diff, n["result"], n["p"]))
    return [term, _arith.neg(term)]


def _renorm_grad(n, g):
    x, p, d, maxnorm = n["self"], n["p"], n["dim"], n["maxnorm"]
    axes = [i for i in range(x.ndim) if i != d]
    ax = _pointwise.abs(x)
    dot = _reductions.sum(_arith.mul(x, g), axes, True)
    if p == math.inf:
        # torch's norm_backward for the max-norm: the slice's largest entries share the gradient
        norm = _reductions.amax(ax, axes, True)
        hit = _pointwise.eq(ax, norm)
        share = _arith.div(dot, _reductions.sum(hit, axes, True))
        nb = _arith.mul(share, _arith.mul(_pointwise.sign(x), hit))
    else:
        if p == 2:
            norm = _pointwise.sqrt(_reductions.sum(_arith.mul(x, x), axes, True))
        else:
            norm = _arith.pow(_reductions.sum(_arith.pow(ax, p), axes, True), 1.0 / p)
        nb = _arith.mul(dot, _pnorm_grad(x, norm, p))
    invnorm = _arith.reciprocal(_arith.add(norm, 1e-7))
    factor = _arith.mul(invnorm, maxnorm)
    scaled = _arith.sub(_arith.mul(factor, g), _arith.mul(_arith.mul(factor, invnorm), nb))
    return _arith.where(_pointwise.gt(norm, maxnorm), scaled, g)


def _block_diag_grads(n, g):
    out = []
    for (r0, r1, c0, c1), shape in zip(n["spans"], n["shapes"], strict=True):
        piece = _indexing.getitem(g, (slice(r0, r1), slice(c0, c1)))
        out.append(piece if len(shape) == 2 else _views.reshape(piece, shape))
    return out


ROWS: dict[str, D] = {
    "cdist": D("CdistBackward0", (), all_inputs=_cdist_grads, reduce_broadcast=True),
    "cdist_backward": D("CdistBackwardBackward0", (_cdist_backward_not_implemented,) * 3),
    "euclidean_dist": D("EuclideanDistBackward0", (), all_inputs=_euclidean_grads),
    "pdist": D("PdistBackward0", (_pdist_grad,)),
    "dist": D("DistBackward0", (), all_inputs=_dist_grads, reduce_broadcast=True),
    "renorm": D("RenormBackward0", (_renorm_grad,)),
    "block_diag": D("BlockDiagBackward0", (), all_inputs=_block_diag_grads),
    "rot90": D("Rot90Backward0", (lambda n, g: rot90(g, -n["k"], n["dims"]),)),
    "cross": D("LinalgCrossBackward0", (), all_inputs=_cross_grads, reduce_broadcast=True),
    "addbmm": D("AddbmmBackward0", (), all_inputs=_addbmm_grads, reduce_broadcast=True),
    "addmv": D("AddmvBackward0", (
        lambda n, g: _scaled(g, n["beta"]),
        lambda n, g: _scaled(_math_binary.outer(g, n["vec"]), n["alpha"]),
        lambda n, g: _scaled(_linalg.mv(_views.t(n["mat"]), g), n["alpha"]),
    ), reduce_broadcast=True),
    "addr": D("AddrBackward0", (
        lambda n, g: _scaled(g, n["beta"]),
        lambda n, g: _scaled(_linalg.mv(g, n["vec2"]), n["alpha"]),
        lambda n, g: _scaled(_linalg.mv(_views.t(g), n["vec1"]), n["alpha"]),
    ), reduce_broadcast=True),
}
register(ROWS)

# Tensor methods too (torch.Tensor.kron, .inner, ...)
METHOD_NAMES = ["addbmm", "addmv", "addr", "corrcoef", "cov", "cross", "diagflat", "dist", "inner", "kron", "logdet",
                "renorm", "rot90"]
METHODS: dict[str, Any] = {
    **{name: globals()[name] for name in METHOD_NAMES}, "addmv_": addmv_,
    "addbmm_": inplace_of("addbmm_", addbmm), "addr_": inplace_of("addr_", addr),
    "renorm_": inplace_of("renorm_", renorm),
}
