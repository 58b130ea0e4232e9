"""Sparse COO tensors: torch.sparse_coo_tensor, Tensor.to_sparse / to_dense / coalesce and the
accessors (indices, values, _nnz, ...), layouts (strided, sparse_coo), and the sparse cases of
mm / spmm / matmul and of dense + sparse, with torch 2.13's backward nodes.

The data is a real COO representation (gradviz/_sparse_coo.py); products are computed from
the stored entries (np.add.at over the rows they hit), never from a dense copy of the matrix.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.device import CPU, as_device
from gradviz.ops._common import _check_devices, _new, result_type
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.tensor import Tensor

__all__ = [  # its public ops: torch's names (gradviz.ops.functions builds the namespace)
    "layout", "sparse_coo", "sparse_coo_tensor", "spmm", "strided",
]


class layout:  # noqa: N801 - torch.layout
    """A tensor's memory layout; prints as its name, as torch's do."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickled by name: the module attribute, so identity survives


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _is_sparse(t: Any) -> bool:
    return type(getattr(t, "_data", None)) is SparseCOO


def _sparse(coo: SparseCOO, device: Any) -> Tensor:
    return Tensor._wrap(coo, _dtype._BY_NP_DTYPE[coo.values.dtype], device)


_INVARIANTS_WARNED = [False]
# torch.sparse.check_sparse_tensor_invariants' global switch (gradviz/sparse)
_invariants = [False]


def _warn_invariants() -> None:
    # torch's TORCH_WARN_ONCE from the constructor when check_invariants is left unset
    if not _INVARIANTS_WARNED[0]:
        _INVARIANTS_WARNED[0] = True
        warnings.warn(
            "Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur when "
            "operating on a sparse tensor which violates the invariants, but checks incur performance overhead. "
            "To silence this warning, explicitly opt in or out. See "
            "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.",
            UserWarning, stacklevel=3,
        )


def _as_array_arg(x: Any, dtype: Any = None) -> tuple[np.ndarray, Any]:
    if isinstance(x, Tensor):
        if _is_sparse(x):
            raise TypeError("sparse_coo_tensor(): indices and values must be dense tensors")
        return x._data, x.device
    arr = np.asarray(x)
    if arr.dtype == np.float64 and dtype is None and not isinstance(x, np.ndarray):
        arr = arr.astype(_dtype._default[0].np)  # Python floats take the default dtype, as torch.tensor
    return arr, None


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: _dtype.dtype | None = None,
                      device: Any = None, requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> Tensor:
    """torch.sparse_coo_tensor: entries at ``indices`` (sparse_dim x nnz, any integer type or
    array-like) with ``values`` (nnz x dense dims); the size, when not given, the smallest that
    holds them. The values tensor is the result's history (SparseCooTensorWithDimsAndTensorsBackward0)."""
    idx, _ = _as_array_arg(indices)
    vals_t = values if isinstance(values, Tensor) else None
    vals, vdev = _as_array_arg(values, dtype)
    if idx.dtype.kind not in "biuf":
        raise RuntimeError(f"indices must be a numeric tensor, but got {idx.dtype}")
    idx = idx.astype(np.int64)  # any numeric indices become int64, as torch converts them
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.ndim == 0:
        vals = vals.reshape(1)
    sparse_dim, dense_shape = idx.shape[0], tuple(vals.shape[1:])
    if size is not None:
        shape = tuple(int(s) for s in size)
        if len(shape) != sparse_dim + len(dense_shape):
            raise RuntimeError(
                f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(shape)}, sparse_dim = "
                f"{sparse_dim}, dense_dim = {len(dense_shape)}"
            )
    if idx.shape[1] != vals.shape[0]:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {idx.shape[1]}, nnz from values: "
            f"{vals.shape[0]}"
        )
    if size is None:
        sparse_size = tuple(int(m) + 1 for m in idx.max(1)) if idx.shape[1] else (0,) * sparse_dim
        shape = sparse_size + dense_shape
    if check_invariants is None and not _invariants[0]:
        _warn_invariants()
    if (check_invariants if check_invariants is not None else _invariants[0]) and idx.shape[1]:
        for d in range(sparse_dim):
            if idx[d].min() < 0:
                raise RuntimeError(f"found negative index {int(idx[d].min())} for dim {d}")
            if idx[d].max() >= shape[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {shape[d]} but found "
                                   f"index {int(idx[d].max())}")
    dt = dtype if dtype is not None else (vals_t.dtype if vals_t is not None else _dtype.from_numpy_dtype(vals.dtype))
    data = vals.astype(dt.np)
    if data is vals:
        data = vals.copy()  # the result owns its values: an in-place change to ``values`` does not reach it
    dev = as_device(device) if device is not None else (vdev or CPU)
    out = _sparse(SparseCOO(idx, data, shape, bool(is_coalesced) or idx.shape[1] <= 1), dev)
    if requires_grad:
        out.requires_grad_(True)
    elif vals_t is not None and _grad_state.enabled and _requires(vals_t) and dt.is_floating_point:
        # saved as a tensor, as torch saves it: a second backward through the node is refused
        record(_COO_NODE, (vals_t,), [out], {"indices": SavedVariable(_new(idx, dev))})
    return out


def to_sparse(a: Tensor, sparse_dim: int | None = None, *, layout: Any = None) -> Tensor:
    """A dense tensor's nonzero entries as a coalesced COO tensor (ToSparseBackward1)."""
    if layout not in (None, sparse_coo):
        raise RuntimeError(f"to_sparse: layout {layout} is not supported by gradviz")
    if _is_sparse(a):
        if sparse_dim is not None and sparse_dim != a._data.sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return a
    if sparse_dim is not None and not 0 < sparse_dim <= a.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [1,{a.ndim}] range, but {sparse_dim} is given")
    out = _sparse(SparseCOO.from_dense(a._data, sparse_dim), a.device)
    if _grad_state.enabled and _requires(a):
        record(_TO_SPARSE_NODE, (a,), [out], {})
    return out


def to_dense(a: Tensor, dtype: _dtype.dtype | None = None, *, masked_grad: bool | None = None) -> Tensor:
    if not _is_sparse(a):
        return a
    out = _new(a._data.to_dense(), a.device)
    if dtype is not None and dtype is not out.dtype:
        out = _new(out._data.astype(dtype.np), a.device)
    if _grad_state.enabled and _requires(a):
        record(_TO_DENSE_NODE, (a,), [out], {"self": SavedVariable(a)})
    return out


def _check_sparse(a: Tensor, what: str) -> SparseCOO:
    if not _is_sparse(a):
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got Strided")
    return a._data


def coalesce(a: Tensor) -> Tensor:
    coo = _check_sparse(a, "coalesce:")
    if coo.coalesced:
        return a
    out = _sparse(coo.coalesce(), a.device)
    if _grad_state.enabled and _requires(a):
        record(_COALESCE_NODE, (a,), [out], {})
    return out


def is_coalesced(a: Tensor) -> bool:
    return _check_sparse(a, "is_coalesced:").coalesced


def _indices(a: Tensor) -> Tensor:
    return _new(_check_sparse(a, "_indices:").indices, a.device)


def _values(a: Tensor) -> Tensor:
    # torch's _values() is the stored values without history (shared, not copied)
    return _new(_check_sparse(a, "_values:").values, a.device)


def indices(a: Tensor) -> Tensor:
    coo = _check_sparse(a, "indices:")
    if not coo.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return _new(coo.indices, a.device)


def values(a: Tensor) -> Tensor:
    coo = _check_sparse(a, "values:")
    if not coo.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    out = _new(coo.values, a.device)
    if _grad_state.enabled and _requires(a):
        record(_VALUES_NODE, (a,), [out], {"self": SavedVariable(a)})
    return out


def _nnz(a: Tensor) -> int:
    return _check_sparse(a, "_nnz:").nnz


def sparse_dim(a: Tensor) -> int:
    return a._data.sparse_dim if _is_sparse(a) else 0


def dense_dim(a: Tensor) -> int:
    return a._data.dense_dim if _is_sparse(a) else a.ndim


def sparse_mask(a: Tensor, mask: Tensor) -> Tensor:
    """a's values at mask's entries, as a sparse tensor with mask's indices (SparseMaskBackward0)."""
    if not _is_sparse(mask):
        raise NotImplementedError(
            f"Could not run 'aten::sparse_mask' with arguments from the '{'SparseCPU' if _is_sparse(a) else 'CPU'}' "
            "backend."
        )
    if tuple(a.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(a.shape)} but "
                           f"mask has size {list(mask.shape)}")
    coo = mask._data
    vals = coo.mask_of(a._data) if _is_sparse(a) else coo.gather(a._data)
    out = _sparse(SparseCOO(coo.indices, vals.astype(a.dtype.np, copy=False), coo.shape, coo.coalesced), a.device)
    if _grad_state.enabled and _requires(a):
        record(_MASK_NODE, (a,), [out], {"mask": SavedVariable(mask)})
    return out


# -- products and sums ---------------------------------------------------------------------------


def sparse_mm(a: Tensor, b: Tensor) -> Tensor:
    """mm where either operand is sparse (MmBackward0, as torch records it): sparse @ dense and
    dense @ sparse are dense; sparse @ sparse is sparse. Gradients are dense."""
    _check_devices(a, b)
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError("self must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
    for t in (a, b):
        if _is_sparse(t) and t._data.dense_dim:  # a hybrid tensor: torch's kernel sees its sparse part
            raise RuntimeError(f"addmm: matrices expected, got {t._data.sparse_dim}D tensor")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(a.dtype)} but found "
                           f"{_dtype.scalar_type_name(b.dtype)}")
    if a.shape[1] != b.shape[0]:
        if _is_sparse(a) and not _is_sparse(b):
            raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {a.shape[1]}, got {b.shape[0]}")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    data = a._data @ b._data
    if isinstance(data, SparseCOO):
        out = _sparse(data, a.device)
    else:
        out = _new(data.astype(a.dtype.np, copy=False), a.device)
    ra, rb = _requires(a), _requires(b)
    if _grad_state.enabled and (ra or rb):
        saved = {}
        if ra:
            saved["mat2"] = SavedVariable(b)
        if rb:
            saved["self"] = SavedVariable(a)
        record(_MM_NODE, (a, b), [out], saved)
    return out


def spmm(a: Tensor, b: Tensor) -> Tensor:
    """torch.spmm: mm that takes a sparse first operand (a dense one too)."""
    from gradviz.ops.linalg import mm

    return mm(a, b)



def sparse_add(a: Tensor, b: Tensor, alpha: Any = 1) -> Tensor:
    """add where an operand is sparse: dense + sparse is dense, sparse + sparse sparse (entries
    concatenated, uncoalesced), sparse + dense torch's error. AddBackward0 with both edges."""
    if _is_sparse(a) and not _is_sparse(b):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    _check_devices(a, b)
    dt = result_type(a, b)
    y = b._data.astype(dt.np)
    if alpha != 1:
        y = SparseCOO(y.indices, (y.values * alpha).astype(dt.np), y.shape, y.coalesced)
    data = a._data.astype(dt.np) + y
    out = _sparse(data, a.device) if isinstance(data, SparseCOO) else _new(data, a.device)
    if _grad_state.enabled and (_requires(a) or _requires(b)):
        from gradviz.ops._common import NODES

        record(NODES["add"], (a, b), [out], {"alpha": alpha})
    return out


# -- backward formulas -----------------------------------------------------------------------


def _mm_self_grad(n: Any, g: Tensor) -> Tensor:
    m2 = n["mat2"]._data
    return _new(g._data @ m2.T, g.device)  # g @ mat2.T (a sparse mat2's product reflected)


def _mm_mat2_grad(n: Any, g: Tensor) -> Tensor:
    m1 = n["self"]._data
    return _new(m1.T @ g._data, g.device)


def _values_at(coo: SparseCOO, g: Tensor) -> np.ndarray:
    """g's values at coo's stored positions: g gathered when dense, masked when sparse."""
    return coo.mask_of(g._data) if _is_sparse(g) else coo.gather(g._data)


def _coo_values_grad(n: Any, g: Tensor) -> Tensor:
    idx = n["indices"]._data
    shape = g.shape
    coo = SparseCOO(idx, np.zeros((idx.shape[1],) + tuple(shape[idx.shape[0]:]), g._data.dtype), shape, False)
    return _new(_values_at(coo, g), g.device)


def _to_dense_grad(n: Any, g: Tensor) -> Tensor:
    # grad.sparse_mask(self): the gradient at self's stored positions, as a sparse tensor
    coo = n["self"]._data.coalesce()
    return _sparse(SparseCOO(coo.indices, _values_at(coo, g), coo.shape, True), g.device)


def _to_sparse_grad(n: Any, g: Tensor) -> Tensor:
    return _new(g._data.to_dense(), g.device) if _is_sparse(g) else g


def _values_grad(n: Any, g: Tensor) -> Tensor:
    coo = n["self"]._data
    return _sparse(SparseCOO(coo.indices, g._data, coo.shape, coo.coalesced), g.device)


def _sparse_mask_grad(n: Any, g: Tensor) -> Tensor:
    # the gradient at each of the mask's entries, summed into a dense one (self is dense): an
    # uncoalesced mask's repeated entry copied self's value twice, and takes the gradient twice
    m = n["mask"]._data
    data = np.zeros(m.shape, g._data.dtype)
    if m.nnz:
        np.add.at(data, tuple(m.indices), _values_at(m, g))
    return _new(data, g.device)


_MASK_NODE = _register("sparse_mask", D("SparseMaskBackward0", (_sparse_mask_grad,)))
_MM_NODE = _register("mm_sparse", D("MmBackward0", (_mm_self_grad, _mm_mat2_grad), order=(1, 0)))
# one edge, to the values (the indices are not differentiable, and torch gives them no edge)
_COO_NODE = _register("sparse_coo_tensor", D("SparseCooTensorWithDimsAndTensorsBackward0", (_coo_values_grad,)))
_TO_SPARSE_NODE = _register("to_sparse", D("ToSparseBackward1", (_to_sparse_grad,)))
_TO_DENSE_NODE = _register("to_dense", D("ToDenseBackward0", (_to_dense_grad,)))
_COALESCE_NODE = _register("coalesce", D("CoalesceBackward0", (lambda n, g: g,)))
_VALUES_NODE = _register("values", D("ValuesBackward0", (_values_grad,)))


# -- Tensor's sparse surface -------------------------------------------------------------------


def _install() -> None:
    methods = {
        "to_sparse": to_sparse, "to_sparse_coo": lambda s: to_sparse(s), "to_dense": to_dense,
        "coalesce": coalesce, "is_coalesced": is_coalesced, "sparse_mask": sparse_mask, "indices": indices,
        "values": values,
        "_indices": _indices, "_values": _values, "_nnz": _nnz, "sparse_dim": sparse_dim, "dense_dim": dense_dim,
        "is_sparse": property(_is_sparse), "layout": property(lambda s: sparse_coo if _is_sparse(s) else strided),
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)


_install()
