"""gradviz/_blas.py's MKL binding under hostile conditions (issue 33, G5-G7): sizes past 2^31, the
interface and threading layers chosen by environment variables, and a broken install. Each must
leave correct products (MKL's or numpy's), never a wrong number, a crash or an exit."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

from gradviz import _blas

HAVE_MKL = _blas._library() is not None
needs_mkl = pytest.mark.skipif(not HAVE_MKL, reason="the mkl extra is not installed (pip install 'gradviz[mkl]')")


def test_sizes_past_2_31_reach_mkl_unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """G5: m, k and the leading dimensions cross the C boundary as 64-bit integers. The arrays are views
    of one element (nothing of their 2^31-plus size is allocated); the gemm is a Python stand-in
    behind the real parameter types, so what it receives is what MKL would."""
    seen: list[tuple[int, ...]] = []

    def fake(layout, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):  # noqa: ANN001
        seen.append((m, n, k, lda, ldb, ldc))

    keep = [ctypes.CFUNCTYPE(None, *_blas.gemm_argtypes(s))(fake) for s in (ctypes.c_float, ctypes.c_double)]
    monkeypatch.setattr(_blas, "_mkl", types.SimpleNamespace(sgemm=keep[0], dgemm=keep[1]))
    huge = 2**31 + 5
    one = np.zeros(1, np.float32)
    tall = np.lib.stride_tricks.as_strided(one, shape=(huge, 1), strides=(4, 0))  # m past 2^31
    wide = np.lib.stride_tricks.as_strided(one, shape=(1, 3), strides=(0, 4))
    out = np.lib.stride_tricks.as_strided(one, shape=(huge, 3), strides=(0, 0))
    assert _blas.gemm(tall, wide, out=out) is out
    long_k = np.lib.stride_tricks.as_strided(one, shape=(1, huge), strides=(0, 4))  # k past 2^31
    column = np.lib.stride_tricks.as_strided(one, shape=(huge, 1), strides=(4, 0))
    _blas.gemm(long_k, column, out=np.zeros((1, 1), np.float32))
    assert seen[0][0] == huge and seen[1][2] == huge and seen[1][3] == huge


def test_threading_layer_without_its_runtime_falls_back_to_mkls_default(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path) -> None:
    """G6: MKL_THREADING_LAYER=tbb with no libtbb to load: the sequential layer, where MKL's own loader
    would exit the process; GNU's layer pinned beside GNU OpenMP (torch's)."""
    monkeypatch.setitem(_blas._LAYERS, "tbb", (4, "libtbb_not_installed.so.12"))
    monkeypatch.setattr(_blas, "_loads", lambda name, lib_dir: name != "libtbb_not_installed.so.12")
    monkeypatch.setattr(_blas, "_gnu_openmp_loaded", lambda: False)
    monkeypatch.setenv("MKL_THREADING_LAYER", "tbb")
    assert _blas._threading_layer(str(tmp_path)) == ("sequential", True)
    monkeypatch.setenv("MKL_THREADING_LAYER", "no-such-layer")
    assert _blas._threading_layer(str(tmp_path)) == ("sequential", True)
    monkeypatch.setenv("MKL_THREADING_LAYER", "intel")
    assert _blas._threading_layer(str(tmp_path)) == ("intel", False)  # MKL reads the variable itself
    monkeypatch.setattr(_blas, "_gnu_openmp_loaded", lambda: True)
    assert _blas._threading_layer(str(tmp_path)) == ("gnu", True)  # pinned beside torch's OpenMP


_PRODUCT = """
import sys
if sys.argv[1:] == ["torch"]:
    import torch  # noqa: F401 - GNU OpenMP in the process first
import numpy as np
from gradviz import _blas
x = np.random.default_rng(0).standard_normal((300, 500)).astype(np.float32)
y = np.random.default_rng(1).standard_normal((500, 400)).astype(np.float32)
got = _blas.gemm(x, y)
mkl = _blas.backend()
print(mkl.layer if mkl else None, got is not None and np.allclose(got, x.astype(float) @ y, rtol=1e-4, atol=1e-3))
"""


@needs_mkl
@pytest.mark.slow
@pytest.mark.parametrize("env,layer", [({"MKL_INTERFACE_LAYER": "ILP64"}, "intel"),
                                       ({"MKL_INTERFACE_LAYER": "LP64"}, "intel"),
                                       ({"MKL_THREADING_LAYER": "tbb"}, "tbb"),
                                       ({"MKL_THREADING_LAYER": "sequential", "MKL_INTERFACE_LAYER": "ILP64"},
                                        "sequential"),
                                       ({"MKL_INTERFACE_LAYER": "ILP64", "torch first": "1"}, "gnu"),
                                       ({"MKL_THREADING_LAYER": "intel", "torch first": "1"}, "gnu")])
def test_mkl_environment_variables_leave_correct_products(env: dict[str, str], layer: str) -> None:
    """G6: ILP64 once made the first large product segfault, and tbb exited the process (code 2);
    Intel's layer set beside torch's OpenMP gave wrong products."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("MKL_")} | env
    args = ["torch"] if full.pop("torch first", None) else []
    proc = subprocess.run([sys.executable, "-c", _PRODUCT, *args], env=full, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [layer, "True"]


def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_blas, "_mkl", _blas._UNLOADED)
    monkeypatch.delenv("GRADVIZ_BLAS", raising=False)


def _one_warning_then_numpy(monkeypatch: pytest.MonkeyPatch) -> str:
    x = np.random.default_rng(2).standard_normal((128, 128)).astype(np.float32)
    monkeypatch.setattr(_blas, "SMALL", 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            np.testing.assert_array_equal(_blas.matmul(x, x), x @ x)  # numpy's, bit for bit
    assert _blas.backend() is None
    assert len(caught) == 1 and caught[0].category is RuntimeWarning, [str(w.message) for w in caught]
    return str(caught[0].message)


def test_truncated_library_falls_back_to_numpy_with_one_warning(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """G7: a damaged libmkl_rt (here the first 64 KiB of one, or of any file) leaves numpy's products."""
    source = _blas._library() or sys.executable
    damaged = tmp_path / "libmkl_rt.so.2"
    with open(source, "rb") as f:
        damaged.write_bytes(f.read(65536))
    _fresh(monkeypatch)
    monkeypatch.setattr(_blas, "_library", lambda: str(damaged))
    monkeypatch.setattr(_blas, "_loads", lambda name, lib_dir: True)
    message = _one_warning_then_numpy(monkeypatch)
    assert "MKL is installed but not usable" in message and "\n" not in message


def test_missing_openmp_runtime_falls_back_to_numpy_with_one_warning(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path) -> None:
    """G7: intel-openmp missing (MKL's default layer cannot load libiomp5)."""
    _fresh(monkeypatch)
    monkeypatch.setattr(_blas, "_library", lambda: str(tmp_path / "libmkl_rt.so.2"))
    monkeypatch.setattr(_blas, "_loads", lambda name, lib_dir: False)
    monkeypatch.setattr(_blas, "_gnu_openmp_loaded", lambda: False)
    monkeypatch.delenv("MKL_THREADING_LAYER", raising=False)
    assert "intel-openmp" in _one_warning_then_numpy(monkeypatch)


def test_mkl_that_kills_its_process_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """G7: MKL's loader exits (or crashes) the process where a late-loaded library is missing: the
    check runs in a child, so here the child's death is a warning, not the user's."""
    _fresh(monkeypatch)
    monkeypatch.setattr(_blas, "_library", lambda: str(tmp_path / "libmkl_rt.so.2"))
    monkeypatch.setattr(_blas, "_loads", lambda name, lib_dir: True)
    monkeypatch.setattr(_blas, "_CHECK", "import os; os._exit(2)")
    assert "exit status 2" in _one_warning_then_numpy(monkeypatch)
