"""torch.linalg's inverses, determinants, solves and Cholesky, with torch 2.13's nodes
(LinalgInvExBackward0, LinalgDetBackward0, LinalgSlogdetBackward0, LinalgSolveExBackward0,
LinalgCholeskyExBackward0), and the ops torch composes from them and mm (matrix_power, multi_dot,
vecdot). Forward and backward run in numpy's LAPACK; the backward formulas are torch's. Their
gradients have no history of their own: a create_graph backward through them is refused, naming
the node."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import inplace as _inplace
from gradviz.ops import linalg as _linalg
from gradviz.ops import reductions as _reductions
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, register
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

# torch.linalg's names (gradviz/linalg.py); cholesky is linalg_cholesky here, beside torch.cholesky's name
__all__ = ["cholesky_ex", "det", "inv", "inv_ex", "matrix_power", "multi_dot", "slogdet", "solve", "solve_ex",
           "solve_triangular", "vecdot"]


def _square(a: Tensor, name: str) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


def _float(a: Tensor, name: str) -> None:
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                           f"{a.dtype.name.capitalize()}")


def _mT(x: np.ndarray) -> np.ndarray:  # noqa: N802
    return np.swapaxes(x, -1, -2)


def _no_graph(name: str, g: Tensor) -> None:
    # grad mode is on in a backward only under create_graph: the gradient would need a history
    if _grad_state.enabled:
        raise NotImplementedError(f"gradviz: a create_graph backward through {name} (its gradient has no history)")


def _out(data: np.ndarray, like: Tensor) -> Tensor:
    return _new(np.array(data, dtype=like.dtype.np, order="C"), like.device)  # (0-d stays 0-d)


def _out_column_major(data: np.ndarray, like: Tensor) -> Tensor:
    """A LAPACK result as torch returns it: each matrix column-major (strides (..., 1, rows)), so a
    reshape of it records what torch's does (_reshape_alias where torch cannot view it plainly)."""
    cm = _mT(np.ascontiguousarray(_mT(np.asarray(data, dtype=like.dtype.np))))
    return _new(cm, like.device)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> tuple[Tensor, Tensor]:  # noqa: N803
    _square(A, "inv")
    _float(A, "inv")
    a = A._data
    try:
        data, info = np.linalg.inv(a), 0
    except np.linalg.LinAlgError:
        if check_errors:
            raise
        data, info = np.full_like(a, np.nan), 1
    out = _out(data, A)
    if _grad_state.enabled and A._tracked:
        record(NODES["inv"], (A,), [out], {"inverse": save(out, True)})
    return out, _new(np.asarray(info, dtype=np.int32), A.device)


def inv(A: Tensor) -> Tensor:  # noqa: N803
    _square(A, "inv")
    try:
        np.linalg.inv(A._data) if A.dtype.is_floating_point else None
    except np.linalg.LinAlgError:
        raise RuntimeError("linalg.inv: The diagonal element 1 is zero, the inversion could not be completed "
                           "because the input matrix is singular.") from None
    return inv_ex(A)[0]


def det(A: Tensor) -> Tensor:  # noqa: N803
    _square(A, "det")
    _float(A, "det")
    out = _out(np.linalg.det(A._data), A)
    if _grad_state.enabled and A._tracked:
        record(NODES["det"], (A,), [out], {"A": save(A), "result": save(out, True)})
    return out


def slogdet(A: Tensor) -> tuple[Tensor, Tensor]:  # noqa: N803
    _square(A, "slogdet")
    _float(A, "slogdet")
    sign, logabs = np.linalg.slogdet(A._data)
    s, la = _out(sign, A), _out(logabs, A)
    if _grad_state.enabled and A._tracked:
        record(NODES["slogdet"], (A,), [s, la], {"A": save(A)})
    return _linalg_return("linalg_slogdet", ("sign", "logabsdet"), s, la)


def _linalg_return(name: str, fields: tuple[str, str], a: Tensor, b: Tensor) -> Any:
    cls = _RETURN_TYPES.get(name)
    if cls is None:
        cls = _RETURN_TYPES[name] = collections.namedtuple(name, fields)  # noqa: PYI024
        cls.__repr__ = lambda self: (f"torch.return_types.{name}(\n{fields[0]}={self[0]!r},\n"
                                     f"{fields[1]}={self[1]!r})")
    return cls(a, b)


_RETURN_TYPES: dict[str, Any] = {}


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> tuple[Tensor, Tensor]:  # noqa: N803
    _square(A, "solve")
    _float(A, "solve")
    if not left:
        raise NotImplementedError("gradviz has no torch.linalg.solve(left=False)")
    vector = B.ndim == A.ndim - 1
    b = B._data[..., None] if vector else B._data
    x = np.linalg.solve(A._data, b)
    out = _out(x[..., 0] if vector else x, A)
    if _grad_state.enabled and (A._tracked or B._tracked):
        record(NODES["solve"], (A, B), [out], {"A": save(A), "result": save(out, True), "vector": vector})
    return out, _new(np.asarray(0, dtype=np.int32), A.device)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    return solve_ex(A, B, left=left)[0]


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple[Tensor, Tensor]:  # noqa: N803
    _square(A, "cholesky")
    _float(A, "cholesky")
    try:
        L, info = np.linalg.cholesky(A._data), 0
    except np.linalg.LinAlgError:
        if check_errors:
            raise RuntimeError("linalg.cholesky: The factorization could not be completed because the input is not "
                               "positive-definite.") from None
        L, info = np.zeros_like(A._data), 1
    out = _out_column_major(_mT(L) if upper else L, A)
    if _grad_state.enabled and A._tracked:
        record(NODES["cholesky"], (A,), [out], {"L": save(out, True), "upper": upper})
    return out, _new(np.asarray(info, dtype=np.int32), A.device)


def _triangle(a: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    """The triangle torch reads (the other one is ignored), with a unit diagonal if asked."""
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        idx = np.arange(t.shape[-1])
        t[..., idx, idx] = 1
    return t


def _tri_solve(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if left:
        return np.linalg.solve(a, b)
    return _mT(np.linalg.solve(_mT(a), _mT(b)))


def _sum_to(x: np.ndarray, shape: tuple) -> np.ndarray:
    """x summed over the batch dims it was broadcast along, back to shape."""
    lead = x.ndim - len(shape)
    if lead:
        x = x.sum(axis=tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return x.sum(axis=dims, keepdims=True) if dims else x


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Tensor:
    """torch.linalg.solve_triangular: X with A X = B (X A = B when not left), A read as its upper
    or lower triangle."""
    _square(A, "solve_triangular")
    _float(A, "solve_triangular")
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    a = _triangle(A._data, upper, unitriangular)
    out = _out_column_major(_tri_solve(a, B._data, left), A)
    if _grad_state.enabled and (A._tracked or B._tracked):
        record(NODES["solve_triangular"], (A, B), [out],
               {"A": save(A), "result": save(out, True), "upper": upper, "left": left,
                "unitriangular": unitriangular})
    return out


def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803
    L, info = cholesky_ex(A, upper=upper)
    if int(info.item()):
        raise RuntimeError(f"linalg.cholesky: The factorization could not be completed because the input is not "
                           f"positive-definite (the leading minor of order {int(info.item())} is not "
                           "positive-definite).")
    return L


def matrix_power(A: Tensor, n: int) -> Tensor:  # noqa: N803
    """torch's linalg_matrix_power: an identity copied into a clone for 0, the inverse for a
    negative n, then products (n = 2, 3 directly, larger n by binary decomposition)."""
    _square(A, "matrix_power")
    if n == 0:
        out = _views.clone(A, contiguous=True)
        eye = _construction.eye(A.shape[-1], dtype=A.dtype)
        return _inplace.copy_(out, _views.expand(eye, tuple(A.shape)))
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return A if _was_inverted(A) else _views.clone(A, contiguous=True)
    if n == 2:
        return _linalg.matmul(A, A)
    if n == 3:
        return _linalg.matmul(_linalg.matmul(A, A), A)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else _linalg.matmul(z, z)
        if bit:
            result = z if result is None else _linalg.matmul(result, z)
    return result


def _was_inverted(A: Tensor) -> bool:
    fn = A.grad_fn
    return fn is not None and fn.name() == "LinalgInvExBackward0"


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """Products left to right for three or fewer matrices (torch orders longer chains by cost)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_1d:
        ts[0] = _views.unsqueeze(ts[0], 0)
    if last_1d:
        ts[-1] = _views.unsqueeze(ts[-1], 1)
    out = ts[0]
    for t in ts[1:]:
        out = _linalg.mm(out, t)
    shape = [s for i, s in enumerate(out.shape) if not (i == 0 and first_1d) and not (i == 1 and last_1d)]
    return _views.view(out, shape)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """torch's composition for real tensors: (x * y).sum(dim) (SumBackward1 over MulBackward0)."""
    return _reductions.sum(_arith.mul(x, y), dim)


# -- backward formulas (torch's, on the arrays) ----------------------------------------------------


def _inv_grad(n: Any, g: Tensor) -> Tensor:
    _no_graph("LinalgInvExBackward0", g)
    inv_h = _mT(n["inverse"]._data)
    return _out(-(inv_h @ g._data @ inv_h), g)


def _det_grad(n: Any, g: Tensor) -> Tensor:
    _no_graph("LinalgDetBackward0", g)
    a, d = n["A"]._data, n["result"]._data
    return _out((g._data * d)[..., None, None] * _mT(np.linalg.inv(a)), g)


def _slogdet_grad(n: Any, grads: list) -> Tensor | None:
    g = grads[1]  # logabsdet's; the sign's gradient is zero for real matrices
    if g is None:
        return None
    _no_graph("LinalgSlogdetBackward0", g)
    return _out(g._data[..., None, None] * _mT(np.linalg.inv(n["A"]._data)), g)


def _solve_grads(n: Any, g: Tensor) -> tuple[Tensor, Tensor]:
    _no_graph("LinalgSolveExBackward0", g)
    a, x, vector = n["A"]._data, n["result"]._data, n["vector"]
    gd = g._data[..., None] if vector else g._data
    xd = x[..., None] if vector else x
    gb = np.linalg.solve(_mT(a), gd)
    ga = -(gb @ _mT(xd))
    return _out(ga, g), _out(gb[..., 0] if vector else gb, g)


def _cholesky_grad(n: Any, g: Tensor) -> Tensor:
    """torch's cholesky_backward: phi(L^H gL) (lower triangle, diagonal halved), L^{-H} . L^{-1},
    symmetrized."""
    _no_graph("LinalgCholeskyExBackward0", g)
    L, gl = n["L"]._data, g._data
    if n["upper"]:
        L, gl = _mT(L), _mT(gl)
    p = np.tril(_mT(L) @ gl)
    p = p - 0.5 * np.eye(p.shape[-1]) * p  # the diagonal halved
    linv = np.linalg.inv(L)
    s = _mT(linv) @ p @ linv
    return _out(0.5 * (s + _mT(s)), g)


def _solve_a(n: Any, g: Tensor) -> Tensor:
    return _solve_grads(n, g)[0]


def _solve_b(n: Any, g: Tensor) -> Tensor:
    return _solve_grads(n, g)[1]


def _solve_triangular_grads(n: Any, g: Tensor) -> tuple[Tensor, Tensor]:
    """torch's linalg_solve_triangular_backward: G_B solves the transposed system, G_A is
    -G_B X^T (or -X^T G_B), kept to the triangle A was read from."""
    _no_graph("LinalgSolveTriangularBackward0", g)
    upper, left, unit = n["upper"], n["left"], n["unitriangular"]
    a, x = n["A"]._data, n["result"]._data
    gb = _tri_solve(_mT(_triangle(a, upper, unit)), g._data, left)
    ga = -(gb @ _mT(x)) if left else -(_mT(x) @ gb)
    ga = np.triu(ga, 1 if unit else 0) if upper else np.tril(ga, -1 if unit else 0)
    return _out(_sum_to(ga, a.shape), g), _out(gb, g)


def _solve_triangular_a(n: Any, g: Tensor) -> Tensor:
    return _solve_triangular_grads(n, g)[0]


def _solve_triangular_b(n: Any, g: Tensor) -> Tensor:
    gb = _solve_triangular_grads(n, g)[1]
    return gb


ROWS: dict[str, D] = {
    "inv": D("LinalgInvExBackward0", (_inv_grad,), forward=TR),
    "det": D("LinalgDetBackward0", (_det_grad,), forward=TR),
    "slogdet": D("LinalgSlogdetBackward0", (_slogdet_grad,), multi_output=True, forward=TR),
    "solve": D("LinalgSolveExBackward0", (_solve_a, _solve_b), forward=TR),
    "cholesky": D("LinalgCholeskyExBackward0", (_cholesky_grad,), forward=TR),
    "solve_triangular": D("LinalgSolveTriangularBackward0", (_solve_triangular_a, _solve_triangular_b),
                          reduce_broadcast=True, forward=TR),
}
register(ROWS)
