"""gradviz._compiled: a compiled hot-path module is used only when it may be (built, newer than
its source, not turned off by GRADVIZ_PURE_PYTHON); otherwise the .py source runs."""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradviz import _compiled

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _package(tmp_path: Path, built_age: float) -> Path:
    """fakepkg/hot.py with a 'compiled' copy beside it, built_age seconds older than the source."""
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    source = pkg / "hot.py"
    source.write_text("X = 1\n")
    built = pkg / f"hot{SUFFIX}"
    built.write_bytes(b"not a real extension")
    t = source.stat().st_mtime
    os.utime(built, (t - built_age, t - built_age))
    return pkg


def _origin(pkg: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(_compiled, "COMPILED_MODULES", ("fakepkg.hot",))
    spec = _compiled._CompiledOrSource().find_spec("fakepkg.hot", [str(pkg)])
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).name


def test_a_compiled_copy_newer_than_its_source_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_compiled.PURE_ENV, raising=False)
    assert _origin(_package(tmp_path, built_age=-10), monkeypatch) == f"hot{SUFFIX}"


def test_a_stale_compiled_copy_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The source was edited (or checked out) after the build: the source runs until a rebuild.
    monkeypatch.delenv(_compiled.PURE_ENV, raising=False)
    assert _origin(_package(tmp_path, built_age=10), monkeypatch) == "hot.py"


def test_pure_python_env_ignores_a_fresh_compiled_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_compiled.PURE_ENV, "1")
    assert _origin(_package(tmp_path, built_age=-10), monkeypatch) == "hot.py"


def test_other_modules_are_left_to_the_import_system(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _compiled._CompiledOrSource().find_spec("gradviz.autograd.graph", None) is None


def test_pure_python_env_runs_every_hot_module_from_source() -> None:
    env = {**os.environ, _compiled.PURE_ENV: "1"}
    code = (
        "import gradviz, gradviz.autograd.engine; from gradviz import _compiled; "
        "print(set(_compiled.status().values()))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "{'python'}"


def test_engine_frames_in_a_traceback_name_their_source_by_its_absolute_path() -> None:
    # Compiled or not: gradviz/script.py tells gradviz's frames from the user's by that path.
    import traceback

    import gradviz

    class Fails(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x * 1

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            raise ValueError("boom")

    x = gradviz.ones(2, requires_grad=True)
    with pytest.raises(ValueError) as info:
        Fails.apply(x).sum().backward()
    frames = traceback.extract_tb(info.value.__traceback__)
    engine = [f for f in frames if f.name.rpartition(".")[2] == "evaluate_function"]
    assert engine
    source = os.path.join(os.path.dirname(gradviz.__file__), "autograd", "engine.py")
    assert all(f.filename == source for f in engine)
