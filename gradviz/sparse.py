"""torch.sparse: mm (SparseAddmmBackward0: a sparse first operand gets a sparse gradient, masked
to its entries), sum (full: coalesce().values().sum(), as torch composes it; over dims:
SparseSumBackward0) and check_sparse_tensor_invariants. The tensors themselves live in
gradviz/ops/sparse_ops.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops._common import _new, _wrap_dim
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.ops.sparse_ops import _invariants, _is_sparse, _sparse, coalesce, sparse_mm, values
from gradviz.tensor import Tensor

__all__ = ["check_sparse_tensor_invariants", "mm", "sum"]


class check_sparse_tensor_invariants:  # noqa: N801 - torch's name
    """Check sparse tensors' invariants in the constructor (indices within the size, none
    negative): globally (enable/disable) or inside a ``with`` block."""

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved_state: bool | None = None

    @staticmethod
    def is_enabled() -> bool:
        return _invariants[0]

    @staticmethod
    def enable() -> None:
        _invariants[0] = True

    @staticmethod
    def disable() -> None:
        _invariants[0] = False

    def __enter__(self) -> check_sparse_tensor_invariants:
        self.saved_state = _invariants[0]
        _invariants[0] = self.state
        return self

    def __exit__(self, *exc: Any) -> None:
        _invariants[0] = bool(self.saved_state)


def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """sparse @ dense as torch.sparse.mm records it (torch._sparse_addmm into zeros)."""
    if reduce is not None:
        raise NotImplementedError("gradviz: torch.sparse.mm's reduce= (a CSR-only feature) is not implemented")
    if not _is_sparse(mat1) or _is_sparse(mat2):
        return sparse_mm(mat1, mat2)
    with _no_grad():
        out = sparse_mm(mat1, mat2)
    if _grad_state.enabled and (_requires(mat1) or _requires(mat2)):
        saved = {"mat1": SavedVariable(mat1), "mat2": SavedVariable(mat2)}
        record(_ADDMM_NODE, (None, mat1, mat2), [out], saved)
    return out


class _no_grad:  # noqa: N801 - grad mode off for the inner product (its own node is recorded after)
    def __enter__(self) -> None:
        self.prev = _grad_state.enabled
        _grad_state.enabled = False

    def __exit__(self, *exc: Any) -> None:
        _grad_state.enabled = self.prev


def sum(input: Tensor, dim: Any = None, dtype: _dtype.dtype | None = None) -> Tensor:  # noqa: A001, A002
    if not _is_sparse(input):
        raise RuntimeError("_sparse_sum: expected sparse coordinate tensor layout but got Strided")
    if dim is None:
        v = values(coalesce(input))
        return v.sum(dtype=dtype) if dtype is not None else v.sum()
    coo = input._data
    dims = sorted({_wrap_dim(d, coo.ndim) for d in ((dim,) if isinstance(dim, int) else dim)})
    if any(d >= coo.sparse_dim for d in dims):
        raise NotImplementedError("gradviz: torch.sparse.sum over a dense dim is not implemented")
    keep = [d for d in range(coo.sparse_dim) if d not in dims]
    vals = coo.values if dtype is None else coo.values.astype(dtype.np)
    if keep:
        shape = tuple(coo.shape[d] for d in keep) + coo.shape[coo.sparse_dim:]
        out = _sparse(SparseCOO(coo.indices[keep], vals, shape, False).coalesce(), input.device)
    else:  # every sparse dim summed: a dense tensor of the dense dims
        out = _new(np.asarray(vals.sum(0)), input.device)
    if _grad_state.enabled and _requires(input):
        record(_SUM_NODE, (input,), [out], {"self": SavedVariable(input), "keep": keep})
    return out


def _addmm_mat1_grad(n: Any, g: Tensor) -> Tensor:
    # (g @ mat2.T) at mat1's entries: a sparse gradient with mat1's (coalesced) pattern
    m1 = n["mat1"]._data.coalesce()
    full = g._data @ n["mat2"]._data.T
    return _sparse(SparseCOO(m1.indices, m1.gather(full), m1.shape, True), g.device)


def _addmm_mat2_grad(n: Any, g: Tensor) -> Tensor:
    return _new(n["mat1"]._data.T @ g._data, g.device)


def _sum_grad(n: Any, g: Tensor) -> Tensor:
    """The summed gradient back at each of self's entries (its pattern, coalesced)."""
    coo = n["self"]._data.coalesce()
    keep = n["keep"]
    if keep:
        kept = SparseCOO(coo.indices[keep], coo.values, g.shape, False)
        vals = kept.mask_of(g._data) if _is_sparse(g) else kept.gather(g._data)
    else:
        vals = np.broadcast_to(g._data, coo.values.shape).copy()
    return _sparse(SparseCOO(coo.indices, vals.astype(coo.values.dtype, copy=False), coo.shape, True), g.device)


_ADDMM_NODE = _register("sparse_addmm", D("SparseAddmmBackward0", (None, _addmm_mat1_grad, _addmm_mat2_grad),
                                          order=(1, 2, 0)))
_SUM_NODE = _register("sparse_sum", D("SparseSumBackward0", (_sum_grad,)))
