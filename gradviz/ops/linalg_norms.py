"""torch.linalg's norms: norm, matrix_norm, vector_norm, composed as torch composes them (so
with its nodes), and the singular-value node (LinalgSvdBackward0) the 'nuc' and 2-norms use.
gradviz/linalg.py is their torch.linalg namespace; gradviz.norm is torch.norm (reductions.norm)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, _out, _saved_data, register
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.tensor import Tensor

# -- matrix norms (torch.linalg.norm / matrix_norm / vector_norm) ------------------------------


def _svdvals(a: Tensor) -> Tensor:
    """The singular values over a's last two dims. With grad this is torch's linalg_svd node
    (outputs U, S, Vh) of which only S is handed out, as torch's svdvals does."""
    u, s, vh = np.linalg.svd(a._data, full_matrices=False)
    outs = [_new(np.ascontiguousarray(x).astype(a._data.dtype), a.device) for x in (u, s, vh)]
    if _grad_state.enabled and a._tracked:
        record(NODES["linalg_svd"], (a,), outs, {"U": save(outs[0], True), "Vh": save(outs[2], True)})
    return outs[1]


def _svd_grad(n, grads):
    # Only S leaves this module, so only gS arrives: dA = U diag(gS) Vh.
    gu, gs, gvh = grads
    if gu is not None or gvh is not None:
        raise NotImplementedError("gradviz's svd backward takes gradients of the singular values only")
    u, vh = _saved_data(n, "U"), _saved_data(n, "Vh")
    return _out((u * gs._data[..., None, :]) @ vh, gs)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: _dtype.dtype | None = None) -> Tensor:
    from gradviz.ops import reductions as _reductions

    return _reductions.norm(x, ord, dim, keepdim, dtype)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,  # noqa: A002, N803
                dtype: _dtype.dtype | None = None) -> Tensor:
    """torch's linalg_matrix_norm, op for op: 'fro' a vector 2-norm; 1/-1/inf/-inf the max/min of
    a vector 1-norm over one dim; 'nuc'/2/-2 the sum/max/min of the singular values of A permuted
    to put dim last."""
    from gradviz.ops import reductions as _reductions

    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(dim, int) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim if isinstance(dim, int) else dim[0]}")
    d0, d1 = (_views._wrap_dim(d, A.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if not A.dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.scalar_type_name(A.dtype)}")
    if ord == "fro":
        return _reductions.norm(A, 2.0, [d0, d1], keepdim, dtype)
    if ord == "nuc" or (not isinstance(ord, str) and abs(ord) == 2):
        if dtype is not None:
            A = _views.to_copy(A, dtype)
        perm = [d for d in range(A.ndim) if d not in (d0, d1)] + [d0, d1]
        s = _svdvals(_views.permute(A, perm))
        if ord == "nuc":
            r = _reductions.sum(s, [-1], keepdim)
        else:
            r = (_reductions.amax if ord > 0 else _reductions.amin)(s, -1, keepdim)
        if keepdim:
            r = _views.permute(_views.unsqueeze(r, -1), [int(i) for i in np.argsort(perm)])
        return r
    if isinstance(ord, str) or abs(ord) not in (1, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    v = _reductions.norm(A, 1.0, [d0], keepdim, dtype)
    return (_reductions.amax if ord > 0 else _reductions.amin)(v, d1, keepdim)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,  # noqa: A002, N803
         dtype: _dtype.dtype | None = None) -> Tensor:
    """torch.linalg.norm: a vector norm over one dim (or all, when neither ord nor dim is given),
    a matrix norm over two."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.ndim}D.")
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


register({"linalg_svd": D("LinalgSvdBackward0", (_svd_grad,), multi_output=True, forward=TR)})
