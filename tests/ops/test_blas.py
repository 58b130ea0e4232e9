"""gradviz/_blas.py: matrix products through MKL's cblas gemm where the ``mkl`` extra is installed.

Oracles: float64 numpy products (values), torch 2.13 (addmm's beta/alpha rules, and the values of
Linear, mm and addmm), and numpy's own path, which ``GRADVIZ_BLAS=numpy`` selects.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import numpy as np
import pytest
import torch

import gradviz
from gradviz import _blas

RNG = np.random.default_rng(7)


def test_installed_mkl_is_used() -> None:
    """Where the ``mkl`` extra is installed (``scripts/setup.sh --mkl``, x86_64 Linux), the products are
    MKL's: a broken binding fails here rather than quietly leaving numpy's. The default install has
    no MKL, and numpy's products."""
    if platform.machine() not in ("x86_64", "AMD64") or sys.platform != "linux" or _blas._library() is None:
        pytest.skip("the mkl extra is not installed (opt-in: pip install 'gradviz[mkl]', x86_64 Linux)")
    assert _blas.backend() is not None
    assert gradviz.backends.mkl.is_available() is torch.backends.mkl.is_available() is True


def _layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """The same matrix as cblas sees it in each layout it takes (and two it must refuse)."""
    r, c = a.shape
    padded = np.zeros((r + 2, c + 3), a.dtype)
    padded[1 : r + 1, 2 : c + 2] = a
    padded_t = np.zeros((c + 3, r + 2), a.dtype)
    padded_t[2 : c + 2, 1 : r + 1] = a.T
    return {
        "row-major": np.ascontiguousarray(a),
        "column-major": np.asfortranarray(a),
        "rows of a wider array": padded[1 : r + 1, 2 : c + 2],
        "columns of a taller array": padded_t[2 : c + 2, 1 : r + 1].T,
    }


SHAPES = [(5, 7, 3), (1, 7, 3), (5, 1, 3), (5, 7, 1), (1, 1, 1), (64, 784, 256)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_gemm_every_layout_matches_float64(dtype: type, m: int, k: int, n: int, monkeypatch) -> None:
    if _blas.backend() is None:
        pytest.skip("numpy's products: nothing of _blas's to check")
    monkeypatch.setattr(_blas, "SMALL", 1)  # every size to MKL, the small ones' edge cases included
    x0 = RNG.standard_normal((m, k)).astype(dtype)
    y0 = RNG.standard_normal((k, n)).astype(dtype)
    bias = RNG.standard_normal(n).astype(dtype)
    want = x0.astype(np.float64) @ y0.astype(np.float64)
    tol = 1e-4 if dtype is np.float32 else 1e-12
    for xl, x in _layouts(x0).items():
        for yl, y in _layouts(y0).items():
            got = _blas.gemm(x, y)
            assert got is not None, (xl, yl)
            assert got.dtype == dtype and got.flags.c_contiguous
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{xl} @ {yl}")
            got = _blas.gemm(x, y, bias, alpha=2.0, beta=0.5)
            np.testing.assert_allclose(got, 2 * want + 0.5 * bias, rtol=tol, atol=tol, err_msg=f"{xl} @ {yl}")


def test_gemm_leaves_to_numpy_what_cblas_cannot_take(monkeypatch) -> None:
    x = RNG.standard_normal((64, 10)).astype(np.float32)
    assert _blas.gemm(x, x.T) is None  # 40,960 multiply-adds: numpy's call is the quicker
    np.testing.assert_array_equal(_blas.matmul(x, x.T), np.matmul(x, x.T))
    monkeypatch.setattr(_blas, "SMALL", 1)
    f = np.ones((6, 8), np.float32)
    assert _blas.gemm(np.ones((3, 4), np.int64), np.ones((4, 2), np.int64)) is None  # integers
    assert _blas.gemm(np.ones((0, 4), np.float32), np.ones((4, 2), np.float32)) is None  # an empty size
    assert _blas.gemm(f[::2, ::2], np.ones((4, 2), np.float32)) is None  # no unit stride
    assert _blas.gemm(f, np.ones((8, 2), np.float64)) is None  # two dtypes
    assert _blas.gemm(f, np.ones((8, 2), np.float32), np.ones(2, np.float64)) is None  # a bias of another dtype
    assert _blas.gemm(np.ones((3, 4), np.complex64), np.ones((4, 2), np.complex64)) is None
    np.testing.assert_array_equal(_blas.matmul(f[::2, ::2], np.ones((4, 2), np.float32)), np.full((3, 2), 4.0))


def test_beta_zero_ignores_the_input_as_torch_does() -> None:
    """torch.addmm with beta=0 ignores its input, NaNs included; alpha scales the product."""
    for T in (torch, gradviz):
        inp = T.full((3, 2), float("nan"))
        out = T.addmm(inp, T.ones(3, 4), T.ones(4, 2), beta=0, alpha=3)
        assert np.array_equal(out.detach().numpy(), np.full((3, 2), 12.0, np.float32)), T.__name__


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_mm_addmm_values_and_grads_match_torch(dtype: str) -> None:
    """The products the MLP benchmark makes, forward and backward, against torch's (MKL's)."""
    x = RNG.standard_normal((64, 784)).astype(dtype)
    w = (RNG.standard_normal((256, 784)) * 0.05).astype(dtype)
    b = RNG.standard_normal(256).astype(dtype)
    m = RNG.standard_normal((784, 33)).astype(dtype)
    res = {}
    for T in (torch, gradviz):
        tx, tw, tb, tm = (T.tensor(a, requires_grad=True) for a in (x, w, b, m))
        lin = T.nn.functional.linear(tx, tw, tb)
        prod = T.mm(tx, tm)
        fused = T.addmm(tb[:33], tx, tm, beta=0.5, alpha=2)
        (lin.square().sum() + prod.sum() + fused.sum()).backward()
        res[T.__name__] = [t.detach().numpy() for t in (lin, prod, fused, tx.grad, tw.grad, tb.grad, tm.grad)]
    tol = 2e-5 if dtype == "float32" else 1e-12
    for a, b_ in zip(res["torch"], res["gradviz"]):
        np.testing.assert_allclose(b_, a, rtol=tol, atol=tol * 10)


_PROBE = """
import numpy as np, gradviz
from gradviz import _blas
x = np.random.default_rng(0).standard_normal((64, 784)).astype(np.float32)
w = np.random.default_rng(1).standard_normal((256, 784)).astype(np.float32)
b = np.random.default_rng(2).standard_normal(256).astype(np.float32)
out = gradviz.nn.functional.linear(gradviz.tensor(x), gradviz.tensor(w), gradviz.tensor(b)).numpy()
ref = np.matmul(x, w.T); ref += b
print(gradviz.backends.mkl.is_available(), np.array_equal(out, ref))
"""


def test_gradviz_blas_numpy_turns_mkl_off() -> None:
    """GRADVIZ_BLAS=numpy: every product is numpy's, bit for bit what numpy computes."""
    env = {"GRADVIZ_BLAS": "numpy", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("groups", [1, 3])
def test_stack_matmul_is_numpys_batched_product(groups: int) -> None:
    """A convolution's per-group products: one gemm for one group, numpy's batch for more."""
    a = RNG.standard_normal((groups, 64, 147)).astype(np.float32)
    b = RNG.standard_normal((groups, 147, 200)).astype(np.float32)
    got = _blas.stack_matmul(a, b.transpose(0, 2, 1).copy().transpose(0, 2, 1))
    assert got.shape == (groups, 64, 200)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
