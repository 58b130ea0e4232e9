"""A sparse COO tensor's data: torch's representation (int64 indices of shape (sparse_dim, nnz),
values of shape (nnz, *dense_shape), the full shape, and whether the entries are coalesced:
sorted by position with no duplicates), and the numpy kernels sparse ops run on it.

A Tensor whose ``_data`` is a SparseCOO is a sparse tensor (``layout == sparse_coo``), as torch
keeps one Tensor class for every layout. The class answers the array attributes the layout-blind
parts of gradviz read (shape, ndim, dtype, size, astype), and numpy defers to it (``__array_ufunc__
= None``), so ``dense_array @ coo`` and ``dense_array + coo`` reach its reflected operators instead
of turning it into an object array. An op that needs the dense values and has no sparse kernel
fails in ``__array__`` with torch's kind of error, rather than computing on a wrong array.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class SparseNotImplementedError(NotImplementedError, AttributeError):
    """An op gradviz has no sparse kernel for: torch's NotImplementedError. Also an
    AttributeError, so that ``hasattr(data, name)`` probes in layout-blind code still answer False."""


def _no_kernel(what: str) -> SparseNotImplementedError:
    return SparseNotImplementedError(
        f"Could not run '{what}' with arguments from the 'SparseCPU' backend: gradviz has no sparse kernel for "
        "this operator (gradviz's sparse COO tensors support construction, to_dense/to_sparse, coalesce, "
        "mm/spmm/matmul, add, mul/div by a number, neg, t/transpose, sum() and clone; call .to_dense() first)"
    )


class SparseCOO:
    __slots__ = ("indices", "values", "shape", "coalesced")

    def __init__(self, indices: np.ndarray, values: np.ndarray, shape: tuple[int, ...], coalesced: bool) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = coalesced

    # -- what array-reading code asks of a tensor's data
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def itemsize(self) -> int:
        return self.values.itemsize

    @property
    def size(self) -> int:  # numel, as torch's numel() of a sparse tensor: the dense element count
        return _prod(self.shape)

    @property
    def sparse_dim(self) -> int:
        return self.indices.shape[0]

    @property
    def dense_dim(self) -> int:
        return self.values.ndim - 1

    @property
    def nnz(self) -> int:
        return self.indices.shape[1]

    def astype(self, dtype: Any) -> SparseCOO:
        return SparseCOO(self.indices, self.values.astype(dtype), self.shape, self.coalesced)

    def copy(self, order: str = "K") -> SparseCOO:
        return SparseCOO(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise _no_kernel("a dense kernel")

    def __getitem__(self, index: Any) -> Any:
        raise _no_kernel("aten::index (indexing a sparse tensor)")

    def __getattr__(self, name: str) -> Any:
        # only for attributes the class lacks: an array method some op reads (strides, reshape, ...)
        raise _no_kernel(f"ndarray.{name}")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs with a COO operand: the few with sparse kernels, else torch's error."""
        if method == "__call__" and not kwargs:
            if ufunc is np.matmul and len(inputs) == 2:
                x, y = inputs
                return x.__matmul__(y) if isinstance(x, SparseCOO) else y.__rmatmul__(x)
            if ufunc is np.add and len(inputs) == 2:
                x, y = inputs
                return x.__add__(y) if isinstance(x, SparseCOO) else y.__radd__(x)
            if ufunc is np.subtract and len(inputs) == 2:
                x, y = inputs
                return x.__add__(-y) if isinstance(x, SparseCOO) else (-y).__radd__(x)
            if ufunc is np.multiply and len(inputs) == 2:
                x, y = inputs
                return x._scaled(y) if isinstance(x, SparseCOO) else y._scaled(x)
            if ufunc is np.true_divide and len(inputs) == 2 and isinstance(inputs[0], SparseCOO):
                return inputs[0]._map(lambda v: v / inputs[1])
            if ufunc is np.negative and len(inputs) == 1:
                return self._map(np.negative)
        raise _no_kernel(f"aten::{ufunc.__name__}")

    def _map(self, fn: Any) -> SparseCOO:
        """fn applied to the stored values (a zero-preserving fn: the entries stay where they are)."""
        return SparseCOO(self.indices, np.asarray(fn(self.values)), self.shape, self.coalesced)

    def _scaled(self, other: Any) -> SparseCOO:
        if isinstance(other, SparseCOO):
            raise _no_kernel("aten::mul (sparse * sparse)")
        if np.ndim(other) == 0:
            return self._map(lambda v: v * other)
        # sparse * dense: sparse, the dense factor read at the stored positions
        dense = np.broadcast_to(other, self.shape)
        return self._map(lambda v: v * self.gather(dense))

    __mul__ = __rmul__ = _scaled

    def __neg__(self) -> SparseCOO:
        return self._map(np.negative)

    def __truediv__(self, other: Any) -> SparseCOO:
        if np.ndim(other) != 0:
            raise _no_kernel("aten::div (by a tensor)")
        return self._map(lambda v: v / other)

    def __sub__(self, other: Any) -> Any:
        return self.__add__(-other)

    def __rsub__(self, other: Any) -> Any:
        return (-self).__radd__(other)

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        if axis is not None or keepdims:
            raise _no_kernel("aten::sum.dim_IntList")
        return np.asarray(self.values.sum(dtype=dtype))

    def swapaxes(self, d0: int, d1: int) -> SparseCOO:
        if max(d0, d1) >= self.sparse_dim:
            raise _no_kernel("aten::transpose (of a dense dim)")
        order = list(range(self.sparse_dim))
        order[d0], order[d1] = d1, d0
        shape = list(self.shape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        return SparseCOO(self.indices[order], self.values, tuple(shape), self.nnz <= 1)

    # -- conversions
    def to_dense(self) -> np.ndarray:
        out = np.zeros(self.shape, self.values.dtype)
        if self.nnz:
            # duplicates add up, as an uncoalesced tensor's entries do
            np.add.at(out, tuple(self.indices), self.values)
        return out

    @classmethod
    def from_dense(cls, x: np.ndarray, sparse_dim: int | None = None) -> SparseCOO:
        """The nonzero entries in row-major order (coalesced), as torch's to_sparse: with
        sparse_dim < ndim, a slice over the trailing dims is kept when any of it is nonzero."""
        sd = x.ndim if sparse_dim is None else sparse_dim
        if x.ndim == 0:  # a scalar: no sparse dims, one entry when it is nonzero, as torch's
            n = int(x != 0)
            return cls(np.zeros((0, n), np.int64), x.reshape(1)[:n].copy(), (), True)
        nz = x != 0 if sd == x.ndim else (x != 0).reshape(x.shape[:sd] + (-1,)).any(-1)
        idx = np.nonzero(nz)
        indices = np.array(idx, dtype=np.int64).reshape(sd, -1)
        return cls(indices, x[idx].copy(), x.shape, True)

    def _linear(self) -> np.ndarray:
        """Each entry's position as one row-major number over the sparse dims."""
        if self.sparse_dim == 0:
            return np.zeros(self.nnz, np.int64)
        return np.ravel_multi_index(tuple(self.indices), self.shape[: self.sparse_dim])

    def coalesce(self) -> SparseCOO:
        """Entries sorted by position, duplicates summed (in their order of appearance)."""
        if self.coalesced:
            return self
        lin = self._linear()
        order = np.argsort(lin, kind="stable")
        lin_sorted = lin[order]
        if lin_sorted.size:
            starts = np.flatnonzero(np.r_[True, lin_sorted[1:] != lin_sorted[:-1]])
            values = np.add.reduceat(self.values[order], starts, axis=0).astype(self.values.dtype, copy=False)
            indices = self.indices[:, order[starts]]
        else:
            values, indices = self.values.copy(), self.indices.copy()
        return SparseCOO(np.ascontiguousarray(indices), values, self.shape, True)

    def gather(self, dense: np.ndarray) -> np.ndarray:
        """``dense``'s entries at this tensor's positions (one per stored entry, duplicates too)."""
        return dense[tuple(self.indices)]

    def mask_of(self, other: SparseCOO) -> np.ndarray:
        """``other``'s (summed) values at each of this tensor's stored positions, zero where
        ``other`` has none: the values of other.sparse_mask(self), entry for entry."""
        c = other.coalesce()
        mine, theirs = self._linear(), c._linear()
        out = np.zeros((self.nnz,) + c.values.shape[1:], c.values.dtype)
        if theirs.size and mine.size:
            pos = np.clip(np.searchsorted(theirs, mine), 0, theirs.size - 1)
            hit = theirs[pos] == mine
            out[hit] = c.values[pos[hit]]
        return out

    # -- products and sums (2-d, no dense dims: torch's mm kernels' case)
    @property
    def T(self) -> SparseCOO:  # noqa: N802 - numpy's name, which t() and mm's backward formulas read
        if self.ndim != 2 or self.dense_dim:
            raise _no_kernel("aten::t (of a tensor with dense dims)")
        return self.swapaxes(0, 1)

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, SparseCOO):
            return SparseCOO.from_dense(self @ other.to_dense())
        rows, cols = self.indices
        out = np.zeros((self.shape[0], other.shape[1]), np.result_type(self.values, other))
        # each stored entry adds its row of the product, in stored order (torch's CPU kernel's)
        np.add.at(out, rows, self.values[:, None] * other[cols])
        return out

    def __rmatmul__(self, other: Any) -> Any:
        rows, cols = self.indices
        out = np.zeros((other.shape[0], self.shape[1]), np.result_type(self.values, other))
        np.add.at(out.T, cols, (other[:, rows] * self.values).T)
        return out

    def __add__(self, other: Any) -> Any:
        if not isinstance(other, SparseCOO):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if self.shape != other.shape:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but {list(self.shape)} != "
                               f"{list(other.shape)}")
        both = SparseCOO(np.concatenate([self.indices, other.indices], 1),
                         np.concatenate([self.values, other.values]), self.shape, False)
        # two coalesced operands merge into a coalesced sum (entries that cancel are kept), as
        # torch's kernel does; otherwise the entries are concatenated
        return both.coalesce() if self.coalesced and other.coalesced else both

    def __radd__(self, other: Any) -> Any:
        if tuple(other.shape) != self.shape:
            raise RuntimeError(
                f"add: expected 'self' and 'other' to have same size, but self has size {list(other.shape)} while "
                f"other has size {list(self.shape)} (FYI: dense-sparse addition does not currently support "
                "broadcasting)"
            )
        out = np.array(other, dtype=np.result_type(other, self.values), copy=True)
        if self.nnz:
            np.add.at(out, tuple(self.indices), self.values)
        return out
