"""Matrix products: MKL's cblas_?gemm when the ``mkl`` package is installed, numpy's matmul otherwise.

Why MKL: torch's CPU build computes its float products with MKL, numpy's wheels with OpenBLAS.
On the products a Linear layer makes, OpenBLAS takes 1.2-1.5x MKL's time (benchmarks/PROFILE.md),
and it sums in another order, so gradviz's products differed from torch's in the last bits. With
MKL, a float32/float64 product of two 2-d arrays is the same call torch makes, and an ``addmm``
folds its bias in as torch's does (the bias copied into the output, then ``beta = 1``): gradviz
gets torch's numbers, bit for bit where MKL picks the same kernel for both.

The ``mkl`` wheel (x86_64) is in the ``fast`` extra that scripts/setup.sh installs; without it,
or with ``GRADVIZ_BLAS=numpy`` in the environment, every product is numpy's. MKL picks its own
threads as it always does (``MKL_NUM_THREADS``, then ``OMP_NUM_THREADS``, then the cores).

Only what cblas takes directly goes to MKL: two 2-d numpy arrays of one dtype, float32 or float64,
each with unit stride along one axis (row- or column-major, sliced rows or columns allowed), with
at least ``SMALL`` multiply-adds. Everything else (smaller products, cupy arrays, integers,
complex, batches, negative or overlapping strides) is numpy's, as before.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
# Multiply-adds below which numpy's product is the quicker call: ctypes converts a gemm's 14
# arguments and MKL checks them (about 5 us in all, where numpy's whole call on a 64x10x256
# product takes 4); from about a million, MKL's faster kernels win it back (benchmarks/PROFILE.md).
SMALL = 1 << 20
_addressof, _char = ctypes.addressof, ctypes.c_char


class _Mkl:
    """The two gemm entry points of one loaded ``libmkl_rt``."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        i, p = ctypes.c_int, ctypes.c_void_p
        self.sgemm = lib.cblas_sgemm
        self.dgemm = lib.cblas_dgemm
        for fn, scalar in ((self.sgemm, ctypes.c_float), (self.dgemm, ctypes.c_double)):
            fn.argtypes = [i, i, i, i, i, i, scalar, p, i, p, i, scalar, p, i]
            fn.restype = None
        self.path = lib._name


def _find_mkl() -> _Mkl | None:
    """libmkl_rt from the installed ``mkl`` distribution, or None (not installed, turned off, or
    unloadable: any of these leaves numpy's products, which are always correct)."""
    if os.environ.get("GRADVIZ_BLAS", "").lower() == "numpy":
        return None
    try:
        from importlib import metadata

        dist = metadata.distribution("mkl")
        names = [f for f in dist.files or () if f.name.startswith(("libmkl_rt.so", "mkl_rt.")) and
                 not f.name.endswith((".a", ".lib"))]
        if not names:
            return None
        return _Mkl(ctypes.CDLL(str(dist.locate_file(names[0]))))
    except (ImportError, OSError, AttributeError, metadata.PackageNotFoundError):
        return None


_UNLOADED = object()
# The loaded library, looked up at the first product (not at import: the lookup reads the
# distribution's file list, and most imports of gradviz never multiply two matrices).
_mkl: Any = _UNLOADED


def backend() -> _Mkl | None:
    """The MKL in use for products, or None when they are numpy's."""
    global _mkl
    if _mkl is _UNLOADED:
        _mkl = _find_mkl()
    return _mkl


def _layout(a: np.ndarray, rows: int, cols: int) -> tuple[int, int]:
    """(transpose flag, leading dimension) that describe ``a`` to row-major cblas, or (0, 0)."""
    item = a.itemsize
    s0, s1 = a.strides
    if (s1 == item or cols == 1) and s0 % item == 0 and (rows == 1 or s0 >= cols * item):
        return _NO_TRANS, (s0 // item if rows > 1 else cols)
    if (s0 == item or rows == 1) and s1 % item == 0 and (cols == 1 or s1 >= rows * item):
        return _TRANS, (s1 // item if cols > 1 else rows)
    return 0, 0


def _address(a: np.ndarray) -> int:
    """The address of ``a``'s first element: a buffer's (0.7 us) where ``a`` or its transpose is
    contiguous and writable, else ``a.ctypes.data`` (2 us)."""
    try:
        return _addressof(_char.from_buffer(a if a.flags.c_contiguous else a.T))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def gemm(x: Any, y: Any, bias: Any = None, alpha: Any = 1, beta: Any = 1, out: Any = None) -> np.ndarray | None:
    """``alpha * (x @ y) + beta * bias`` for 2-d ``x`` and ``y`` computed by MKL, into ``out`` (a
    C-contiguous array of the product's shape and dtype) or a new array; None where MKL is absent or
    cannot take these arrays (the caller computes it with numpy then). ``bias`` (None: no bias)
    broadcasts to the product's shape; ``beta == 0`` ignores it, its NaNs too, as BLAS and torch's
    addmm do."""
    mkl = _mkl if _mkl is not _UNLOADED else backend()
    if mkl is None or type(x) is not np.ndarray or type(y) is not np.ndarray:
        return None
    dt = x.dtype
    m, k = x.shape
    n = y.shape[1]
    if not ((dt == _F32 or dt == _F64) and dt == y.dtype and m * n * k >= SMALL and x.flags.aligned and
            y.flags.aligned):
        return None
    ta, lda = _layout(x, m, k)
    tb, ldb = _layout(y, k, n)
    if not (ta and tb) or (bias is not None and (type(bias) is not np.ndarray or bias.dtype != dt)):
        return None
    if out is None:
        out = np.empty((m, n), dt)
    if bias is not None and beta != 0:
        out[...] = bias
    else:
        beta = 0
    fn = mkl.sgemm if dt == _F32 else mkl.dgemm
    fn(_ROW_MAJOR, ta, tb, m, n, k, alpha, _address(x), lda, _address(y), ldb, beta, _address(out), n)
    return out


def matmul(x: Any, y: Any) -> Any:
    """``x @ y`` for 2-d arrays: MKL's where it can take them, else numpy's."""
    out = gemm(x, y)
    return x @ y if out is None else out


def stack_matmul(a: Any, b: Any) -> Any:
    """``np.matmul`` of two 3-d stacks of matrices (a convolution's groups): one MKL product for a
    stack of one, the usual case; numpy's batched product otherwise."""
    if a.shape[0] == 1 and b.shape[0] == 1:
        out = gemm(a[0], b[0])
        if out is not None:
            return out[None]
    return np.matmul(a, b)
