"""Matrix products: numpy's matmul by default; MKL's cblas_?gemm_64 where the ``mkl`` extra is installed.

Why MKL at all: torch's CPU build computes its float products with MKL, numpy's wheels with
OpenBLAS. On the products a Linear layer makes, OpenBLAS took 1.2-1.5x MKL's time here
(benchmarks/PROFILE.md), and it sums in another order, so its last bits can differ from torch's.
MKL makes the call torch makes (an ``addmm`` folds its bias in as torch's does: the bias copied into
the output, then ``beta = 1``). The results are checked against torch's within rounding
(tests/ops/test_blas.py); bit equality with torch is not checked, and holds only where both pick the
same kernel. The ``mkl`` wheel with its OpenMP and TBB runtimes adds about 700 MB to an install, so
it is opt-in: ``pip install 'gradviz[mkl]'`` or ``bash scripts/setup.sh --mkl``.

Loading MKL never costs a user their program (issue 33):
- sizes and strides go to the ``_64`` entry points as 64-bit integers, whatever
  ``MKL_INTERFACE_LAYER`` says, so nothing wraps past 2^31 elements;
- the threading layer: GNU's, pinned, beside torch's GNU OpenMP (Intel's set there gave wrong
  products); ``MKL_THREADING_LAYER`` when its runtime loads; sequential, pinned, when it does not
  (MKL's own loader exits the process there); else MKL's default (``_threading_layer``);
- before the first product, a child process makes one product with these settings: a broken
  install (a missing runtime, a truncated library) that would kill the process in MKL's loader
  leaves numpy's products, with one warning.
``GRADVIZ_BLAS=numpy`` turns MKL off. MKL picks its threads as it always does (``MKL_NUM_THREADS``,
then ``OMP_NUM_THREADS``, then the cores).

Only what cblas takes directly goes to MKL: two 2-d numpy arrays of one dtype, float32 or float64,
each with unit stride along one axis (row- or column-major, sliced rows or columns allowed), with
at least ``SMALL`` multiply-adds. Everything else (smaller products, cupy arrays, integers,
complex, batches, negative or overlapping strides) is numpy's.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
# Multiply-adds below which numpy's product is the quicker call: ctypes converts a gemm's 14
# arguments and MKL checks them (about 5 us in all, where numpy's whole call on a 64x10x256
# product takes 4); from about a million, MKL's faster kernels win it back (benchmarks/PROFILE.md).
SMALL = 1 << 20
_addressof, _char = ctypes.addressof, ctypes.c_char

# MKL_Set_Threading_Layer's codes, and the runtime each layer loads (MKL's documentation).
_LAYERS = {"intel": (0, "libiomp5.so"), "sequential": (1, None), "gnu": (3, "libgomp.so.1"),
           "tbb": (4, "libtbb.so.12")}


class MklUnavailable(Exception):
    """Why the installed MKL is not used (the one warning's text)."""


def gemm_argtypes(scalar: Any) -> list[Any]:
    """cblas_?gemm_64's parameters: layout, two transposes (C ints), then m, n, k, alpha, a, lda, b, ldb,
    beta, c, ldc with every size and leading dimension a 64-bit integer."""
    i, p = ctypes.c_int64, ctypes.c_void_p
    return [ctypes.c_int, ctypes.c_int, ctypes.c_int, i, i, i, scalar, p, i, p, i, scalar, p, i]


class _Mkl:
    """The two gemm entry points of one loaded ``libmkl_rt``, with 64-bit sizes."""

    def __init__(self, lib: ctypes.CDLL, layer: tuple[str, bool]) -> None:
        try:
            self.sgemm = lib.cblas_sgemm_64
            self.dgemm = lib.cblas_dgemm_64
        except AttributeError:
            raise MklUnavailable(f"{lib._name} has no 64-bit cblas interface (cblas_sgemm_64): mkl < 2023?") from None
        for fn, scalar in ((self.sgemm, ctypes.c_float), (self.dgemm, ctypes.c_double)):
            fn.argtypes = gemm_argtypes(scalar)
            fn.restype = None
        name, pinned = layer
        if pinned:  # before MKL's first call, which reads MKL_THREADING_LAYER
            lib.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
            lib.MKL_Set_Threading_Layer(_LAYERS[name][0])
        self.path = lib._name
        self.layer = name


def _library() -> str | None:
    """The path of the installed ``mkl`` distribution's libmkl_rt, or None where it is not installed."""
    from importlib import metadata

    try:
        dist = metadata.distribution("mkl")
    except metadata.PackageNotFoundError:
        return None
    names = [f for f in dist.files or () if f.name.startswith(("libmkl_rt.so", "mkl_rt.")) and
             not f.name.endswith((".a", ".lib"))]
    return str(dist.locate_file(names[0])) if names else None


def _loads(name: str, lib_dir: str) -> bool:
    """Whether the shared library ``name`` loads from MKL's folder or wherever the loader finds it."""
    for candidate in (os.path.join(lib_dir, name), name):
        try:
            ctypes.CDLL(candidate)
            return True
        except OSError:
            continue
    return False


def _gnu_openmp_loaded() -> bool:
    """Whether GNU's OpenMP runtime is in this process already (torch's CPU wheel brings libgomp)."""
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return False


def _threading_layer(lib_dir: str) -> tuple[str, bool]:
    """(MKL's threading layer, whether it must be set explicitly rather than left to MKL).

    - Beside GNU OpenMP (torch imported first), GNU's layer, pinned: a product through Intel's layer
      set beside it came back wrong here, and two OpenMP runtimes oversubscribe the cores.
    - ``MKL_THREADING_LAYER`` when its runtime loads; MKL reads the variable itself.
    - A layer whose runtime does not load (``MKL_THREADING_LAYER=tbb`` without libtbb, where MKL's own
      loader would exit the process), or a name MKL does not know: sequential, pinned.
    - Unset: MKL's default, Intel OpenMP, whose runtime must load (intel-openmp installed)."""
    wanted = os.environ.get("MKL_THREADING_LAYER", "").strip().lower()
    if wanted in ("", "intel", "gnu") and _gnu_openmp_loaded():
        return "gnu", True
    if wanted in _LAYERS:
        runtime = _LAYERS[wanted][1]
        return (wanted, False) if runtime is None or _loads(runtime, lib_dir) else ("sequential", True)
    if wanted:
        return "sequential", True
    if not _loads(_LAYERS["intel"][1], lib_dir):
        raise MklUnavailable(f"MKL's OpenMP runtime ({_LAYERS['intel'][1]}, the intel-openmp package) does not load")
    return "intel", False


# One product through MKL in a child process, with the settings this process will use: MKL's loader
# exits or crashes the process (not an error Python can catch) when a library it loads late is
# missing or damaged, so a damaged install must show there first.
_CHECK = """
import ctypes, os, sys
from gradviz._blas import _Mkl, _threading_layer
layer = _threading_layer(os.path.dirname(sys.argv[1]))  # loads the runtime as the parent did
mkl = _Mkl(ctypes.CDLL(sys.argv[1]), layer)
n = 256
a = (ctypes.c_float * (n * n))(*([1.0] * (n * n)))
c = (ctypes.c_float * (n * n))()
mkl.sgemm(101, 111, 111, n, n, n, 1.0, a, n, a, n, 0.0, c, n)
sys.exit(0 if c[0] == n and c[n * n - 1] == n else 3)
"""


def _check(path: str) -> None:
    try:
        proc = subprocess.run([sys.executable, "-c", _CHECK, path], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise MklUnavailable(f"MKL's check did not run ({e})") from None
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise MklUnavailable(f"a product through {os.path.basename(path)} failed in a child process: {tail[0]}")


def _find_mkl() -> _Mkl | None:
    """The installed MKL, checked, or None: not installed, turned off, or (with one warning) unusable.
    numpy's products, always correct, serve in every None case."""
    if os.environ.get("GRADVIZ_BLAS", "").lower() == "numpy":
        return None
    path = _library()
    if path is None:
        return None
    try:
        layer = _threading_layer(os.path.dirname(path))
        _check(path)
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise MklUnavailable(f"{path} does not load: {e}") from None
        return _Mkl(lib, layer)
    except MklUnavailable as e:
        warnings.warn(f"gradviz: MKL is installed but not usable, numpy computes the matrix products: {e}",
                      RuntimeWarning, stacklevel=2)
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
