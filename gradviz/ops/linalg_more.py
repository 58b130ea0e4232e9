"""More of torch.linalg, with torch 2.13's nodes: svd/svdvals, qr, eigh/eigvalsh, pinv, lstsq,
matrix_exp, matrix_rank, cond, tensorinv/tensorsolve, lu_factor(_ex)/lu/
lu_solve/lu_unpack, householder_product, and torch's older names (torch.svd, qr, pinverse,
cholesky, cholesky_inverse, cholesky_solve, triangular_solve, orgqr, nuclear_norm,
frobenius_norm).

As in gradviz/ops/linalg_solvers.py, forward and backward run on the arrays (numpy's LAPACK where
it has the routine; LU and triangular solves here) with torch's backward formulas; their gradients
have no history, so a create_graph backward through them is refused naming the node.
"""

from __future__ import annotations

import collections
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import indexing as _indexing
from gradviz.ops import linalg_norms as _norms
from gradviz.ops import linalg_solvers as _solvers
from gradviz.ops import math_ops as _math_ops
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.linalg_solvers import _mT, _no_graph, _out
from gradviz.tensor import Tensor

__all__ = [  # torch's top-level names (torch.svd, torch.qr, ...); torch.linalg's are in gradviz/linalg.py
    "cholesky", "cholesky_inverse", "cholesky_solve", "frobenius_norm", "lu_solve", "lu_unpack", "matrix_exp",
    "nuclear_norm", "orgqr", "pinverse", "qr", "svd", "triangular_solve",
]


def _grad_needed(*ts: Any) -> bool:
    return _grad_state.enabled and any(isinstance(t, Tensor) and t._tracked for t in ts)


def _t(data: Any, like: Tensor) -> Tensor:
    return _new(np.array(data, dtype=like.dtype.np, order="C"), like.device)


def _matrix(a: Tensor, name: str) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.scalar_type_name(a.dtype)}")


def _named(name: str, fields: Sequence[str], values: Sequence[Any]) -> Any:
    """torch.return_types.<name>: a named tuple (one class per name and fields: torch.svd's V, linalg.svd's Vh)."""
    key = (name, tuple(fields))
    cls = _NAMED.get(key)
    if cls is None:
        cls = _NAMED[key] = collections.namedtuple(name, fields)  # type: ignore[misc]
    return cls(*values)


_NAMED: dict[tuple[str, tuple[str, ...]], Any] = {}


def _eye_like(x: np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(np.eye(n, dtype=x.dtype), (*x.shape[:-2], n, n))


# -- svd -----------------------------------------------------------------------------------------------
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> Any:  # noqa: N803
    """(U, S, Vh), A = U diag(S) Vh (LinalgSvdBackward0)."""
    _matrix(A, "svd")
    u, s, vh = np.linalg.svd(A._data, full_matrices=full_matrices)
    outs = [_t(x, A) for x in (u, s, vh)]
    if _grad_needed(A):
        record(NODES["svd"], (A,), outs, {"U": save(outs[0], True), "S": save(outs[1], True),
                                          "Vh": save(outs[2], True), "full_matrices": full_matrices})
    return _named("svd", ("U", "S", "Vh"), outs)


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:  # noqa: N803
    _matrix(A, "svdvals")
    return _norms._svdvals(A)


def svd(a: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """torch.svd: (U, S, V) with V = Vh's adjoint (a transposed view, as torch's)."""
    if not compute_uv:
        s = _norms._svdvals(a)
        m, n = a.shape[-2:]
        z = np.zeros((*a.shape[:-2], m, m if not some else min(m, n)), a._data.dtype)
        zv = np.zeros((*a.shape[:-2], n, n if not some else min(m, n)), a._data.dtype)
        return _named("svd", ("U", "S", "V"), (_t(z, a), s, _t(zv, a)))
    u, s, vh = linalg_svd(a, full_matrices=not some)
    return _named("svd", ("U", "S", "V"), (u, s, _views.transpose(vh, -2, -1)))


def _svd_grad(n, grads):
    """torch's svd_backward (real): gA = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] V^T
    + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T), E_jk = S_k^2 - S_j^2 (1 on the diagonal)."""
    gu, gs, gvh = grads
    g0 = next(x for x in grads if x is not None)
    _no_graph("LinalgSvdBackward0", g0)
    u, s, vh = n["U"]._data, n["S"]._data, n["Vh"]._data
    k = s.shape[-1]
    if n["full_matrices"] and (gu is not None or gvh is not None):
        raise RuntimeError("linalg_svd_backward: Setting full_matrices=True in forward prevents computing "
                           "gradients with respect to U or Vh, as they are not uniquely determined. Use "
                           "full_matrices=False.")
    u, vh = u[..., :, :k], vh[..., :k, :]
    v = _mT(vh)
    inner = np.zeros((*s.shape, k), s.dtype)
    if gs is not None:
        inner = inner + np.eye(k) * gs._data[..., None, :]
    if gu is None and gvh is None:
        return _out(u @ inner @ vh, g0)
    s2 = s * s
    e = s2[..., None, :] - s2[..., :, None]
    e = e + np.eye(k)  # (the diagonal is 0 otherwise)
    m, nn = u.shape[-2], v.shape[-2]
    ga = 0
    if gu is not None:
        gud = gu._data[..., :, :k]
        uhgu = _mT(u) @ gud
        inner = inner + (uhgu - _mT(uhgu)) / e * s[..., None, :]
        if m > k:
            ga = ga + (gud - u @ (_mT(u) @ gud)) / s[..., None, :] @ vh
    if gvh is not None:
        gv = _mT(gvh._data[..., :k, :])
        vhgv = vh @ gv
        inner = inner + s[..., :, None] * ((vhgv - _mT(vhgv)) / e)
        if nn > k:
            ga = ga + (u / s[..., None, :]) @ _mT(gv - v @ (vh @ gv))
    return _out(u @ inner @ vh + ga, g0)


# -- qr ------------------------------------------------------------------------------------------------
def linalg_qr(A: Tensor, mode: str = "reduced") -> Any:  # noqa: N803
    """(Q, R), A = QR (LinalgQrBackward0); mode 'reduced', 'complete' or 'r'."""
    _matrix(A, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    q, r = np.linalg.qr(A._data, mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = np.zeros((*A.shape[:-2], 0), A._data.dtype)
    outs = [_t(q, A), _t(r, A)]
    if _grad_needed(A):
        record(NODES["qr"], (A,), outs, {"Q": save(outs[0], True), "R": save(outs[1], True), "mode": mode})
    return _named("qr", ("Q", "R"), outs)


def qr(a: Tensor, some: bool = True) -> Any:
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = "
                  "torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else "
                  "'complete')", UserWarning, stacklevel=2)
    return linalg_qr(a, "reduced" if some else "complete")


def _copyltu(m: np.ndarray) -> np.ndarray:
    low = np.tril(m, -1)
    return low + _mT(low) + np.eye(m.shape[-1]) * np.diagonal(m, 0, -2, -1)[..., None, :]


def _qr_grad(n, grads):
    """gA = [gQ + Q copyltu(M)] R^-T with M = R gR^T - gQ^T Q (m >= n, reduced)."""
    gq, gr = grads
    g0 = gq if gq is not None else gr
    _no_graph("LinalgQrBackward0", g0)
    if n["mode"] == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    q, r = n["Q"]._data, n["R"]._data
    m, cols = q.shape[-2], r.shape[-1]
    gqd = np.zeros_like(q) if gq is None else gq._data
    grd = np.zeros_like(r) if gr is None else gr._data
    if n["mode"] == "complete" and m > cols:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    gy = None
    if m < cols:
        # wide, as torch's: A = [X Y], R = [U V] with X = QU square; Y = QV adds Y gV^T to gQ
        v, gv = r[..., :, m:], grd[..., :, m:]
        gqd = gqd + (q @ v) @ _mT(gv)
        gy = q @ gv
        r, grd = r[..., :, :m], grd[..., :, :m]
    mm = r @ _mT(grd) - _mT(gqd) @ q
    b = gqd + q @ _copyltu(mm)
    ga = _mT(np.linalg.solve(r, _mT(b)))
    if gy is not None:
        ga = np.concatenate([ga, gy], -1)
    return _out(ga, g0)


# -- eigh ----------------------------------------------------------------------------------------------
def eigh(A: Tensor, UPLO: str = "L") -> Any:  # noqa: N803
    """(eigenvalues, eigenvectors) of a symmetric matrix, from its lower (or upper) triangle
    (LinalgEighBackward0)."""
    _matrix(A, "eigh")
    w, v = np.linalg.eigh(A._data, UPLO=UPLO)
    outs = [_t(w, A), _t(v, A)]
    if _grad_needed(A):
        record(NODES["eigh"], (A,), outs, {"L": save(outs[0], True), "V": save(outs[1], True)})
    return _named("eigh", ("eigenvalues", "eigenvectors"), outs)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    return eigh(A, UPLO)[0]


def _eigh_grad(n, grads):
    """torch's linalg_eig_backward for Hermitian input: V [(skew part of V^T gV) / E + diag(gL)] V^T."""
    gl, gv = grads
    g0 = gl if gl is not None else gv
    _no_graph("LinalgEighBackward0", g0)
    w, v = n["L"]._data, n["V"]._data
    k = w.shape[-1]
    inner = np.zeros((*w.shape, k), w.dtype)
    if gv is not None:
        vhgv = _mT(v) @ gv._data
        vhgv = 0.5 * (vhgv - _mT(vhgv))
        e = w[..., None, :] - w[..., :, None]
        e = e + np.eye(k)
        inner = vhgv / e
        inner = inner * (1 - np.eye(k))
    if gl is not None:
        inner = inner + np.eye(k) * gl._data[..., None, :]
    return _out(v @ inner @ _mT(v), g0)


# -- pinv, lstsq ---------------------------------------------------------------------------------------
def _pinv_data(a: np.ndarray, atol: Any, rtol: Any, hermitian: bool) -> np.ndarray:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros((*s.shape[:-1], 1))
    if atol is None and rtol is None:
        rtol = np.finfo(a.dtype).eps * max(a.shape[-2:])
    tol = np.maximum(0 if atol is None else atol, (0 if rtol is None else rtol) * smax)
    with np.errstate(all="ignore"):
        sinv = np.where(s > tol, 1 / s, 0)
    return _mT(vh) * sinv[..., None, :] @ _mT(u)


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The Moore-Penrose pseudo-inverse (LinalgPinvBackward0)."""
    _matrix(A, "pinv")
    out = _t(_pinv_data(A._data, atol, rtol, hermitian), A)
    if _grad_needed(A):
        record(NODES["pinv"], (A,), [out], {"A": save(A), "result": save(out, True)})
    return out


def pinverse(a: Tensor, rcond: float = 1e-15) -> Tensor:
    return pinv(a, rtol=rcond)


def _pinv_backward(g: np.ndarray, p: np.ndarray, a: np.ndarray) -> np.ndarray:
    """torch's pinv_backward, in the smaller of the two products' shapes."""
    m, n = a.shape[-2:]
    ph, gh = _mT(p), _mT(g)
    if m <= n:
        k = gh @ p
        kph = k @ ph
        return -_mT(p @ k) + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
    k = p @ gh
    phk = ph @ k
    return -_mT(k @ p) + (gh - a @ k) @ p @ ph + phk - phk @ p @ a


def _pinv_grad(n, g):
    _no_graph("LinalgPinvBackward0", g)
    return _out(_pinv_backward(g._data, n["result"]._data, n["A"]._data), g)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> Any:  # noqa: N803
    """(solution, residuals, rank, singular_values) of min ||A X - B|| (LinalgLstsqBackward0); torch's
    default CPU driver 'gelsy' gives empty residuals (and singular values)."""
    _matrix(A, "lstsq")
    vector = B.ndim == A.ndim - 1
    b = B._data[..., None] if vector else B._data
    x = _pinv_data(A._data, None, rcond, False) @ b
    sol = _t(x[..., 0] if vector else x, A)
    rank = np.linalg.matrix_rank(A._data)
    empty = _t(np.zeros(0), A)
    if _grad_needed(A, B):
        record(NODES["lstsq"], (A, B), [sol], {"A": save(A), "B": save(B), "vector": vector})
    return _named("lstsq", ("solution", "residuals", "rank", "singular_values"),
                  (sol, empty, _new(np.asarray(rank, dtype=np.int64), A.device), _t(np.zeros(0), A)))


def _lstsq_grads(n, g):
    _no_graph("LinalgLstsqBackward0", g)
    a, b, vector = n["A"]._data, n["B"]._data, n["vector"]
    gd = g._data[..., None] if vector else g._data
    bd = b[..., None] if vector else b
    p = _pinv_data(a, None, None, False)
    ga = _pinv_backward(gd @ _mT(bd), p, a)
    gb = _mT(p) @ gd
    return [_out(ga, g), _out(gb[..., 0] if vector else gb, g)]


# -- matrix_exp, matrix_rank, cond ---------------------------------------------------------------------
def _expm(a: np.ndarray) -> np.ndarray:
    """e^A by scaling and squaring: Taylor to degree 18 of A / 2^s, ||A / 2^s||_1 <= 1/2, squared s times."""
    norm = np.abs(a).sum(-2).max(-1) if a.size else np.zeros(a.shape[:-2])
    s = int(max(0, math.ceil(math.log2(max(float(np.max(norm, initial=0)), 1e-300) / 0.5)))) if a.size else 0
    x = a / (2.0 ** s)
    n = a.shape[-1]
    eye = _eye_like(a, n)
    total = eye.copy()
    term = eye.copy()
    for k in range(1, 19):
        term = term @ x / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803
    """e^A (LinalgMatrixExpBackward0)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices")
    out = _t(_expm(A._data.astype(np.float64)), A)
    if _grad_needed(A):
        record(NODES["matrix_exp"], (A,), [out], {"A": save(A)})
    return out


def _matrix_exp_grad(n, g):
    """The upper right block of exp([[A^T, G], [0, A^T]]) (the Frechet derivative at A^T)."""
    _no_graph("LinalgMatrixExpBackward0", g)
    a = _mT(n["A"]._data.astype(np.float64))
    k = a.shape[-1]
    big = np.zeros((*a.shape[:-2], 2 * k, 2 * k))
    big[..., :k, :k] = a
    big[..., k:, k:] = a
    big[..., :k, k:] = g._data
    return _out(_expm(big)[..., :k, k:], g)


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,  # noqa: N803
                tol: Any = None) -> Tensor:
    _matrix(A, "matrix_rank")
    s = np.linalg.svd(A._data, compute_uv=False)
    smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros((*s.shape[:-1], 1))
    if tol is not None:
        atol = tol
    if atol is None and rtol is None:
        rtol = np.finfo(A._data.dtype).eps * max(A.shape[-2:])
    atol_v = atol._data if isinstance(atol, Tensor) else (0 if atol is None else atol)
    rtol_v = rtol._data if isinstance(rtol, Tensor) else (0 if rtol is None else rtol)
    thr = np.maximum(np.asarray(atol_v)[..., None] if np.ndim(atol_v) else atol_v,
                     (np.asarray(rtol_v)[..., None] if np.ndim(rtol_v) else rtol_v) * smax)
    return _new(np.asarray((s > thr).sum(-1), dtype=np.int64), A.device)


def linalg_cond(A: Tensor, p: Any = None) -> Tensor:  # noqa: N803
    """The condition number: a ratio of singular values for p in (None, 2, -2), else
    norm(A, p) * norm(inv(A), p) with NaN (singular) made inf, as torch composes it."""
    _matrix(A, "cond")
    if p is None or p in (2, -2):
        s = svdvals(A)
        hi, lo = _shape.narrow(s, -1, 0, 1), _shape.narrow(s, -1, s.shape[-1] - 1, 1)
        r = _arith.div(hi, lo) if p != -2 else _arith.div(lo, hi)
        return _views.squeeze(r, -1)
    inv = _solvers.inv_ex(A)[0]
    res = _arith.mul(_norms.matrix_norm(A, p), _norms.matrix_norm(inv, p))
    return _math_ops.nan_to_num(res, math.inf)


# -- triangular solves ---------------------------------------------------------------------------------
def _trsolve(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """Solve a x = b for triangular a by substitution (batched; b's columns at once)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = np.broadcast_to(a, (*batch, *a.shape[-2:])), np.broadcast_to(b, (*batch, *b.shape[-2:]))
    n = a.shape[-1]
    x = np.zeros(b.shape, dtype=np.result_type(a, b))
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(all="ignore"):
        for i in order:
            rest = (a[..., i, i + 1:, None] * x[..., i + 1:, :]).sum(-2) if upper else \
                (a[..., i, :i, None] * x[..., :i, :]).sum(-2)
            xi = b[..., i, :] - rest
            x[..., i, :] = xi if unit else xi / a[..., i, i, None]
    return x


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> Any:
    """torch.triangular_solve (deprecated): (solution, cloned_coefficient) (TriangularSolveBackward0)."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
                  "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does "
                  "not return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be "
                  "replaced with\nX = torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=2)
    a = _mT(A._data) if transpose else A._data
    x = _t(_trsolve(a, b._data, upper != transpose, unitriangular), b)
    clone = _t(A._data, A)
    if _grad_needed(A, b):
        record(NODES["triangular_solve"], (b, A), [x], {
            "A": save(A), "result": save(x, True), "upper": upper, "transpose": transpose, "unit": unitriangular})
    return _named("triangular_solve", ("solution", "cloned_coefficient"), (x, clone))


def _triangular_solve_grads(n, g):
    _no_graph("TriangularSolveBackward0", g)
    a, x = n["A"]._data, n["result"]._data
    upper, tr, unit = n["upper"], n["transpose"], n["unit"]
    op = _mT(a) if tr else a
    gb = _trsolve(_mT(op), g._data, not (upper != tr), unit)
    gop = -gb @ _mT(x)
    ga = _mT(gop) if tr else gop
    ga = np.triu(ga, 1 if unit else 0) if upper else np.tril(ga, -1 if unit else 0)
    return [_out(gb, g), _out(ga, g)]


# -- tensorinv, tensorsolve ----------------------------------------------------------------------------
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:  # noqa: N803
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(A.shape[ind:]) + tuple(A.shape[:ind])
    rows = int(np.prod(A.shape[:ind]))
    inv = _solvers.inv(_views.reshape(A, (rows, -1)))
    return _views._view_of(inv, inv._data.reshape(out_shape), "reshape_alias", {"shape": inv.shape}) \
        if _grad_needed(inv) else _views.reshape(inv, out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:  # noqa: N803
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        A = _views.permute(A, *[i for i in range(nd) if i not in dims], *dims)
    rshape = tuple(A.shape[B.ndim:])
    n = int(np.prod(rshape))
    x = _solvers.solve(_views.reshape(A, (-1, n)), _views.reshape(B, (-1,)))
    return _views.view(x, rshape)


# -- LU ------------------------------------------------------------------------------------------------
def _lu(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Doolittle LU with partial pivoting (LAPACK getrf's choices: the first largest pivot):
    (LU packed, 1-based pivots as getrf's, info)."""
    lu = np.array(a, dtype=np.float64 if a.dtype != np.float32 else np.float32, copy=True)
    m, n = lu.shape[-2:]
    k = min(m, n)
    batch = lu.shape[:-2]
    lu = lu.reshape(-1, m, n)
    piv = np.zeros((lu.shape[0], k), dtype=np.int32)
    info = np.zeros(lu.shape[0], dtype=np.int32)
    rows = np.arange(lu.shape[0])
    for j in range(k):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
        piv[:, j] = p + 1
        swap = lu[rows, p].copy()
        lu[rows, p] = lu[:, j]
        lu[:, j] = swap
        d = lu[:, j, j]
        zero = d == 0
        info = np.where(zero & (info == 0), j + 1, info)
        with np.errstate(all="ignore"):
            lu[:, j + 1:, j] = np.where(zero[:, None], lu[:, j + 1:, j], lu[:, j + 1:, j] / d[:, None])
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(*batch, m, n), piv.reshape(*batch, k), info.reshape(batch)


def _perm(piv: np.ndarray, m: int) -> np.ndarray:
    """The permutation matrix P with A = P L U from getrf's pivots."""
    batch = piv.shape[:-1]
    flat = piv.reshape(-1, piv.shape[-1])
    out = np.empty((flat.shape[0], m, m))
    for b in range(flat.shape[0]):
        order = np.arange(m)
        for j, p in enumerate(flat[b] - 1):
            order[[j, p]] = order[[p, j]]
        pm = np.zeros((m, m))
        pm[order, np.arange(m)] = 1
        out[b] = pm
    return out.reshape(*batch, m, m)


def _unpack(lu: np.ndarray, piv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    up = np.triu(lu[..., :k, :])
    return _perm(piv, m).astype(lu.dtype), low, up


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> Any:  # noqa: N803
    _matrix(A, "lu_factor_ex")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _lu(A._data)
    out = _t(lu, A)
    pv = _new(piv.astype(np.int32), A.device)
    inf = _new(info.astype(np.int32), A.device)
    if _grad_needed(A):
        record(NODES["lu_factor_ex"], (A,), [out], {"LU": save(out, True), "pivots": pv})
        fn = out.grad_fn
        fn.input_metadata = (fn.input_metadata[0], (pv.shape, _dtype.int32, A.device),
                             (inf.shape, _dtype.int32, A.device))
    return _named("lu_factor_ex", ("LU", "pivots", "info"), (out, pv, inf))


def lu_factor(A: Tensor, *, pivot: bool = True) -> Any:  # noqa: N803
    lu, piv, info = lu_factor_ex(A, pivot=pivot)
    if bool((info._data > 0).any()):
        raise RuntimeError(f"torch.linalg.lu_factor: U[{int(info._data.reshape(-1).max())},"
                           f"{int(info._data.reshape(-1).max())}] is zero and using it on lu_solve would result in a "
                           "division by zero. If you still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return _named("lu_factor", ("LU", "pivots"), (lu, piv))


def linalg_lu(A: Tensor, *, pivot: bool = True) -> Any:  # noqa: N803
    """(P, L, U) with A = P L U (LinalgLuBackward0)."""
    _matrix(A, "lu")
    lu, piv, _ = _lu(A._data)
    p, low, up = _unpack(lu, piv)
    outs = [_t(p, A), _t(low, A), _t(up, A)]
    if _grad_needed(A):
        record(NODES["lu"], (A,), outs[1:], {"P": outs[0], "L": save(outs[1], True), "U": save(outs[2], True)})
    return _named("lu", ("P", "L", "U"), outs)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> Any:
    p, low, up = _unpack(LU_data._data, LU_pivots._data)
    outs = [_t(p, LU_data), _t(low, LU_data), _t(up, LU_data)]
    if _grad_needed(LU_data):
        record(NODES["lu_unpack"], (LU_data,), outs[1:], {"shape": LU_data.shape})
    return _named("lu_unpack", ("P", "L", "U"), outs)


def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
                    adjoint: bool = False) -> Tensor:
    p, low, up = _unpack(LU._data, pivots._data)
    a = p @ low @ up
    op = _mT(a) if adjoint else a
    x = np.linalg.solve(op, B._data) if left else _mT(np.linalg.solve(_mT(op), _mT(B._data)))
    out = _t(x, B)
    if _grad_needed(LU, B):
        record(NODES["lu_solve"], (LU, B), [out], {"P": p, "L": low, "U": up, "result": save(out, True),
                                                   "left": left, "adjoint": adjoint})
    return out


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    return linalg_lu_solve(LU_data, LU_pivots, b)


def _lu_backward(gl: np.ndarray, gu: np.ndarray, p: np.ndarray, low: np.ndarray, up: np.ndarray) -> np.ndarray:
    """torch's linalg_lu_backward. Square: gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T.
    Wide (U = [U1 U2]) and tall (L = [L1; L2]): the square formula on the square blocks, the rest
    of U's (L's) gradient passed through L^-T (U^-1) alone."""
    m, n = low.shape[-2], up.shape[-1]
    gl, gu = np.tril(gl, -1), np.triu(gu)
    if m == n:
        gr = np.tril(_mT(low) @ gl, -1) + np.triu(gu @ _mT(up))
        left = np.linalg.solve(_mT(low), gr)
        return p @ _mT(np.linalg.solve(up, _mT(left)))
    if m < n:
        u1 = up[..., :, :m]
        x = np.tril(_mT(low) @ gl - gu @ _mT(up), -1)
        x = _mT(np.linalg.solve(u1, _mT(x))) + gu[..., :, :m]
        return p @ np.linalg.solve(_mT(low), np.concatenate([x, gu[..., :, m:]], -1))
    l1 = low[..., :n, :]
    y = np.triu(gu @ _mT(up) - _mT(low) @ gl)
    y = np.linalg.solve(_mT(l1), y) + gl[..., :n, :]
    y = np.concatenate([y, gl[..., n:, :]], -2)
    return p @ _mT(np.linalg.solve(up, _mT(y)))


def _lu_factor_grad(n, grads):
    g = grads[0]
    if g is None:
        return None
    _no_graph("LinalgLuFactorExBackward0", g)
    lu = n["LU"]._data
    p, low, up = _unpack(lu, n["pivots"]._data)
    k = min(lu.shape[-2:])
    return _out(_lu_backward(g._data[..., :, :k], g._data[..., :k, :], p, low, up), g)


def _lu_grad(n, grads):
    gl, gu = grads
    g0 = gl if gl is not None else gu
    _no_graph("LinalgLuBackward0", g0)
    low, up, p = n["L"]._data, n["U"]._data, n["P"]._data
    return _out(_lu_backward(np.zeros_like(low) if gl is None else gl._data,
                             np.zeros_like(up) if gu is None else gu._data, p, low, up), g0)


def _lu_unpack_grad(n, grads):
    gl, gu = grads
    g0 = gl if gl is not None else gu
    shape = n["shape"]
    out = np.zeros(shape)
    if gl is not None:
        out[..., :, :gl.shape[-1]] += np.tril(gl._data, -1)
    if gu is not None:
        out[..., :gu.shape[-2], :] += np.triu(gu._data)
    return _out(out, g0)


def _lu_solve_grads(n, g):
    _no_graph("LinalgLuSolveBackward0", g)
    p, low, up, x = n["P"], n["L"], n["U"], n["result"]._data
    a = p @ low @ up
    op = _mT(a) if n["adjoint"] else a
    if n["left"]:
        gb = np.linalg.solve(_mT(op), g._data)
        gop = -gb @ _mT(x)
    else:
        gb = _mT(np.linalg.solve(op, _mT(g._data)))
        gop = -_mT(x) @ gb
    ga = _mT(gop) if n["adjoint"] else gop
    # A = P L U: gL = tril(P^T gA U^T, -1), gU = triu(L^T P^T gA), packed into one LU gradient
    pga = _mT(p) @ ga
    glu = np.tril(pga @ _mT(up), -1) + np.triu(_mT(low) @ pga)
    return [_out(glu, g), _out(gb, g)]


# -- LDL^T with Bunch-Kaufman pivoting -----------------------------------------------------------------
_BK_ALPHA = (1 + np.sqrt(17.0)) / 8


def _sytf2_lower(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """LAPACK's unblocked symmetric indefinite factorization (lower triangle, Bunch-Kaufman pivots:
    1x1 and 2x2 blocks): (LD with the upper triangle zero, 1-based pivots, negative for 2x2 blocks,
    info)."""
    a = np.tril(np.array(a, dtype=np.float64 if a.dtype != np.float32 else np.float32))  # (the lower triangle)
    n = a.shape[0]
    piv = np.zeros(n, dtype=np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0:
            info = info or k + 1
            kp = k
        else:
            if absakk >= _BK_ALPHA * colmax:
                kp = k
            else:
                rowmax = abs(a[imax, k + int(np.argmax(np.abs(a[imax, k:imax])))])
                if imax < n - 1:
                    rowmax = max(rowmax, abs(a[imax + 1 + int(np.argmax(np.abs(a[imax + 1:, imax]))), imax]))
                if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _BK_ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:  # rows and columns kk and kp of the trailing lower triangle swapped
                if kp < n - 1:
                    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                seg = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                a[kp, kk + 1:kp] = seg
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k, k]
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= np.tril(d11 * np.outer(x, x))
                    a[k + 1:, k] *= d11
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                for j in range(k + 2, n):
                    wk = d21 * (d11 * a[j, k] - a[j, k + 1])
                    wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
                    a[j:, j] -= a[j:, k] * wk + a[j:, k + 1] * wkp1
                    a[j, k], a[j, k + 1] = wk, wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return a, piv, info


def _sytrs_lower(ld: np.ndarray, piv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve A X = B from _sytf2_lower's factors (LAPACK's sytrs, lower)."""
    x = np.array(b, dtype=np.result_type(ld, b))
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = B
        if piv[k] > 0:
            kp = piv[k] - 1
            if kp != k:
                x[[k, kp]] = x[[kp, k]]
            x[k + 1:] -= np.outer(ld[k + 1:, k], x[k])
            x[k] /= ld[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            if kp != k + 1:
                x[[k + 1, kp]] = x[[kp, k + 1]]
            x[k + 2:] -= np.outer(ld[k + 2:, k], x[k]) + np.outer(ld[k + 2:, k + 1], x[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = x[k] / akm1k, x[k + 1] / akm1k
            x[k], x[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y
        if piv[k] > 0:
            x[k] -= ld[k + 1:, k] @ x[k + 1:]
            kp = piv[k] - 1
            if kp != k:
                x[[k, kp]] = x[[kp, k]]
            k -= 1
        else:
            x[k] -= ld[k + 1:, k] @ x[k + 1:]
            x[k - 1] -= ld[k + 1:, k - 1] @ x[k + 1:]
            kp = -piv[k] - 1
            if kp != k:
                x[[k, kp]] = x[[kp, k]]
            k -= 2
    return x


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> Any:  # noqa: N803
    """(LD, pivots, info): A = L D L^T with Bunch-Kaufman pivoting, as LAPACK's sytrf packs it."""
    _matrix(A, "ldl_factor_ex")
    flat = A._data.reshape(-1, *A.shape[-2:])
    parts = [_sytf2_lower(m) for m in flat]
    ld = np.stack([p[0] for p in parts]).reshape(A.shape)
    piv = np.stack([p[1] for p in parts]).reshape(*A.shape[:-1])
    info = np.asarray([p[2] for p in parts], dtype=np.int32).reshape(A.shape[:-2])
    out = _t(ld, A)
    if _grad_needed(A):
        record(NODES["not_implemented"], (A,), [out], {"op": "linalg_ldl_factor_ex"})
    return _named("linalg_ldl_factor_ex", ("LD", "pivots", "info"),
                  (out, _new(piv.astype(np.int32), A.device), _new(info, A.device)))


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> Any:  # noqa: N803
    ld, piv, _ = ldl_factor_ex(A, hermitian=hermitian)
    return _named("linalg_ldl_factor", ("LD", "pivots"), (ld, piv))


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """X with A X = B, A given by ldl_factor's LD and pivots."""
    lds = LD._data.reshape(-1, *LD.shape[-2:])
    pv = pivots._data.reshape(-1, pivots.shape[-1])
    bs = np.broadcast_to(B._data, (*LD.shape[:-2], *B.shape[-2:])).reshape(-1, *B.shape[-2:])
    x = np.stack([_sytrs_lower(l_, p_, b_) for l_, p_, b_ in zip(lds, pv, bs, strict=True)])
    out = _t(x.reshape(*LD.shape[:-2], *B.shape[-2:]), B)
    if _grad_needed(LD, B):
        record(NODES["not_implemented"], (LD, B), [out], {"op": "linalg_ldl_solve"})
    return out


# -- Householder products ------------------------------------------------------------------------------
def _householder(a: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    m, n = a.shape[-2:]
    q = np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape).copy()
    vs = []
    for i in range(tau.shape[-1]):
        v = np.array(a[..., :, i])
        v[..., :i] = 0
        v[..., i] = 1
        vs.append(v)
    for i in range(tau.shape[-1] - 1, -1, -1):
        v = vs[i]
        q = q - tau[..., i, None, None] * v[..., :, None] * (v[..., None, :] @ q)
    return q, vs


def householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T (LinalgHouseholderProductBackward0)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > A.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    q, _ = _householder(A._data, tau._data)
    out = _t(q, A)
    if _grad_needed(A, tau):
        record(NODES["householder_product"], (A, tau), [out], {"A": save(A), "tau": save(tau)})
    return out


def orgqr(a: Tensor, tau: Tensor) -> Tensor:
    return householder_product(a, tau)


def _householder_grads(n, g):
    """Q = H_1 ... H_k E: for each factor, gH_i = P_i^T gQ S_i^T (P_i the product before, S_i after);
    H_i = I - tau v v^T gives g_tau = -v^T gH v and g_v = -tau (gH + gH^T) v, whose entries below
    the diagonal are A's column i's."""
    _no_graph("LinalgHouseholderProductBackward0", g)
    a, tau = n["A"]._data, n["tau"]._data
    m, ncol = a.shape[-2:]
    k = tau.shape[-1]
    _, vs = _householder(a, tau)
    eye = np.broadcast_to(np.eye(m), (*a.shape[:-2], m, m))
    hs = [eye - tau[..., i, None, None] * vs[i][..., :, None] * vs[i][..., None, :] for i in range(k)]
    suffix = [None] * (k + 1)
    suffix[k] = np.broadcast_to(np.eye(m, ncol), a.shape)
    for i in range(k - 1, -1, -1):
        suffix[i] = hs[i] @ suffix[i + 1]
    ga = np.zeros_like(a)
    gtau = np.zeros_like(tau)
    prefix = eye
    for i in range(k):
        gh = _mT(prefix) @ g._data @ _mT(suffix[i + 1])
        v = vs[i]
        gtau[..., i] = -(v[..., None, :] @ gh @ v[..., :, None])[..., 0, 0]
        gv = -tau[..., i, None] * ((gh + _mT(gh)) @ v[..., :, None])[..., 0]
        ga[..., i + 1:, i] = gv[..., i + 1:]
        prefix = prefix @ hs[i]
    return [_out(ga, g), _out(gtau, g)]


# -- Cholesky family (torch's older names) -------------------------------------------------------------
def cholesky(a: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated): CholeskyBackward0."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                  "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                  "This transform will produce equivalent results for all valid (symmetric positive definite) "
                  "inputs.", UserWarning, stacklevel=2)
    with _NoGrad():
        low = _solvers.linalg_cholesky(a, upper=upper)
    out = _t(low._data, a)
    if _grad_needed(a):
        record(NODES["torch_cholesky"], (a,), [out], {"L": save(out, True), "upper": upper})
    return out


class _NoGrad:
    def __enter__(self) -> None:
        self.prev = _grad_state.enabled
        _grad_state.enabled = False

    def __exit__(self, *exc: object) -> None:
        _grad_state.enabled = self.prev


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """(L L^T)^-1 from its Cholesky factor (CholeskyInverseBackward0)."""
    low = _mT(L._data) if upper else L._data
    inv = np.linalg.inv(low @ _mT(low))
    out = _t(inv, L)
    if _grad_needed(L):
        record(NODES["cholesky_inverse"], (L,), [out], {"L": save(L), "result": save(out, True), "upper": upper})
    return out


def _cholesky_inverse_grad(n, g):
    """A^-1 = (L L^T)^-1: gL = -(X (g + g^T) X) L, X = A^-1 (for upper, its transpose)."""
    _no_graph("CholeskyInverseBackward0", g)
    x, low = n["result"]._data, n["L"]._data
    gs = g._data + _mT(g._data)
    if n["upper"]:
        return _out(-low @ x @ gs @ x, g)
    return _out(-x @ gs @ x @ low, g)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """X with (L L^T) X = B (CholeskySolveBackward0)."""
    low = _mT(L._data) if upper else L._data
    x = np.linalg.solve(low @ _mT(low), B._data)
    out = _t(x, B)
    if _grad_needed(B, L):
        record(NODES["cholesky_solve"], (B, L), [out], {"L": save(L), "result": save(out, True), "upper": upper})
    return out


def _cholesky_solve_grads(n, g):
    _no_graph("CholeskySolveBackward0", g)
    ld, x, upper = n["L"]._data, n["result"]._data, n["upper"]
    low = _mT(ld) if upper else ld
    a = low @ _mT(low)
    gb = np.linalg.solve(a, g._data)
    ga = -(gb @ _mT(x))
    ga = 0.5 * (ga + _mT(ga))
    gl = _mT(2 * ga @ low) if upper else 2 * ga @ low
    return [_out(gb, g), _out(gl, g)]


def nuclear_norm(a: Tensor, dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    if isinstance(dim, bool):
        dim, keepdim = (-2, -1), dim
    return _norms.matrix_norm(a, "nuc", dim, keepdim)


def frobenius_norm(a: Tensor, dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    data = np.sqrt((a._data.astype(np.float64) ** 2).sum(tuple(dim), keepdims=keepdim)).astype(a._data.dtype)
    out = _new(np.asarray(data), a.device)
    if _grad_needed(a):
        record(NODES["frobenius_norm"], (a,), [out], {"self": save(a), "result": save(out, True),
                                                      "dim": tuple(d % a.ndim for d in dim), "keepdim": keepdim})
    return out


def _frobenius_grad(n, g):
    x, r, dims = n["self"], n["result"], n["dim"]
    if not n["keepdim"]:
        g = _views.unsqueeze_dims(g, dims, x.ndim)
        r = _views.unsqueeze_dims(r, dims, x.ndim)
    safe = _indexing.masked_fill(r, _pointwise.eq(r, 0), 1.0)
    return _arith.mul(g, _arith.div(x, safe))


ROWS: dict[str, D] = {
    "svd": D("LinalgSvdBackward0", (_svd_grad,), multi_output=True),
    "qr": D("LinalgQrBackward0", (_qr_grad,), multi_output=True),
    "eigh": D("LinalgEighBackward0", (_eigh_grad,), multi_output=True),
    "pinv": D("LinalgPinvBackward0", (_pinv_grad,)),
    "lstsq": D("LinalgLstsqBackward0", (), all_inputs=_lstsq_grads),
    "matrix_exp": D("LinalgMatrixExpBackward0", (_matrix_exp_grad,)),
    "triangular_solve": D("TriangularSolveBackward0", (), all_inputs=_triangular_solve_grads, reduce_broadcast=True),
    "lu_factor_ex": D("LinalgLuFactorExBackward0", (_lu_factor_grad,), multi_output=True),
    "lu": D("LinalgLuBackward0", (_lu_grad,), multi_output=True),
    "lu_unpack": D("LuUnpackBackward0", (_lu_unpack_grad,), multi_output=True),
    "lu_solve": D("LinalgLuSolveBackward0", (), all_inputs=_lu_solve_grads),
    "householder_product": D("LinalgHouseholderProductBackward0", (), all_inputs=_householder_grads),
    "torch_cholesky": D("CholeskyBackward0", _solvers.ROWS["cholesky"].grads),
    "cholesky_inverse": D("CholeskyInverseBackward0", (_cholesky_inverse_grad,)),
    "cholesky_solve": D("CholeskySolveBackward0", (), all_inputs=_cholesky_solve_grads),
    "frobenius_norm": D("NormBackward1", (_frobenius_grad,)),
}
register(ROWS)

# torch.linalg's names (gradviz/linalg.py)
LINALG = {
    "svd": linalg_svd, "svdvals": svdvals, "qr": linalg_qr, "eigh": eigh, "eigvalsh": eigvalsh, "pinv": pinv,
    "lstsq": lstsq, "matrix_exp": matrix_exp, "matrix_rank": matrix_rank, "cond": linalg_cond,
    "tensorinv": tensorinv, "tensorsolve": tensorsolve,
    "lu_factor": lu_factor, "lu_factor_ex": lu_factor_ex, "lu": linalg_lu, "lu_solve": linalg_lu_solve,
    "householder_product": householder_product,
    "ldl_factor": ldl_factor, "ldl_factor_ex": ldl_factor_ex, "ldl_solve": ldl_solve,
}
# Tensor methods
METHODS = {
    "svd": svd, "qr": qr, "pinverse": pinverse, "matrix_exp": matrix_exp, "cholesky": cholesky,
    "cholesky_inverse": cholesky_inverse, "cholesky_solve": cholesky_solve, "triangular_solve": triangular_solve,
    "lu_solve": lu_solve, "orgqr": orgqr, "slogdet": _solvers.slogdet,
}
