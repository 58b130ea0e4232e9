"""gradviz standing in for torch: `gradviz.install_as_torch()` / `gradviz.as_torch()` make `import torch`
and every `torch.X` resolve to gradviz, and `gradviz run --engine gradviz` runs an unmodified torch
script on gradviz's engine. What gradviz lacks fails with one line naming the API and the user's line."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch as real_torch  # the oracle, imported first: the stand-in must set it aside and bring it back

import gradviz
from gradviz._as_torch import MissingTorchAPI, missing_api
from gradviz.trace import load

TUTORIAL = Path(__file__).resolve().parents[1] / "corpus" / "programs" / "tutorial_polynomial_custom_function.py"


def test_import_torch_resolves_to_gradviz_and_real_torch_comes_back():
    with gradviz.as_torch() as torch:
        import torch as t2
        import torch.nn.functional as F
        from torch import autograd, nn

        assert t2 is torch
        assert torch.tensor is gradviz.tensor and torch.Tensor is gradviz.Tensor
        assert F.relu is gradviz.nn.functional.relu
        assert nn.functional is F
        assert autograd.Function is gradviz.autograd.Function
        assert torch.autograd.grad is gradviz.autograd.grad
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        F.relu(x * 3).sum().backward()
        assert type(x) is gradviz.Tensor and x.grad.tolist() == [3.0, 0.0]
    import torch

    assert torch is real_torch
    assert sys.modules["torch.nn"] is real_torch.nn


def test_install_and_uninstall():
    gradviz.install_as_torch()
    try:
        import torch

        assert torch.ones is gradviz.ones
        gradviz.install_as_torch()  # twice is once
    finally:
        gradviz.uninstall_as_torch()
    import torch

    assert torch is real_torch


def _run_as(code: str, filename: str) -> BaseException:
    """Run code compiled as FILENAME with gradviz as torch; the exception it raised."""
    with gradviz.as_torch():
        try:
            exec(compile(textwrap.dedent(code), filename, "exec"), {})
        except BaseException as e:  # noqa: BLE001
            return e
    raise AssertionError("no exception")


def test_missing_submodule_is_one_line_naming_the_api_and_the_users_line():
    e = _run_as("import torch\n\n\nimport torch.nested\n", "train.py")
    assert isinstance(e, ModuleNotFoundError) and isinstance(e, MissingTorchAPI)
    assert str(e) == "gradviz has no torch.nested (used at train.py:4); see README: what runs on gradviz"
    e = _run_as("from torch.fx import symbolic_trace\n", "rl.py")
    assert str(e) == "gradviz has no torch.fx (used at rl.py:1); see README: what runs on gradviz"
    # `from torch import X` of a name gradviz lacks: the same line, not importlib's "cannot import name"
    e = _run_as("import math\nfrom torch import nested\n", "a.py")
    assert str(e) == "gradviz has no torch.nested (used at a.py:2); see README: what runs on gradviz"


def test_missing_attribute_is_an_attribute_error_with_the_line():
    e = _run_as("import torch\nx = 1\ny = torch.nested.nested_tensor(x)\n", "train.py")
    assert isinstance(e, AttributeError) and isinstance(e, MissingTorchAPI)
    assert str(e) == "gradviz has no torch.nested (used at train.py:3); see README: what runs on gradviz"
    e = _run_as("import torch.nn.functional as F\nF.no_such_function(1)\n", "m.py")
    assert str(e) == (
        "gradviz has no torch.nn.functional.no_such_function (used at m.py:2); see README: what runs on gradviz"
    )


def test_feature_tests_work_as_on_an_older_torch():
    with gradviz.as_torch() as torch:
        assert not hasattr(torch, "no_such_api")
        assert getattr(torch, "no_such_api", None) is None
        try:
            import torch.no_such_module  # noqa: F401
        except ImportError:
            pass
        else:
            raise AssertionError("no ImportError")


def test_missing_method_on_a_gradviz_tensor_is_named_too():
    e = _run_as("import torch\nt = torch.ones(2)\nt.to_sparse_csr()\n", "p.py")
    assert missing_api(e) == (
        "torch.Tensor.to_sparse_csr",
        "gradviz has no torch.Tensor.to_sparse_csr (used at p.py:3); see README: what runs on gradviz",
    )


def _gradviz_run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradviz", "run", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_cli_runs_an_unmodified_tutorial_script_records_and_renders(tmp_path):
    script = tmp_path / "tutorial.py"
    shutil.copy(TUTORIAL, script)
    assert "import torch\n" in script.read_text() and "gradviz" not in script.read_text().split("\n", 3)[-1]
    r = _gradviz_run("--engine", "gradviz", "-o", "t.json", str(script), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Result: y = " in r.stdout
    t = load(tmp_path / "t.json")
    assert t.status == "ok"
    assert len(t.tasks) == 30  # one graph task per loss.backward()
    order = t.execution_order(min(t.tasks))
    assert order[0] == "SumBackward0" and "LegendrePolynomial3Backward" in order
    r = subprocess.run(
        [sys.executable, "-m", "gradviz", "render", "t.json", "--task", "1", "-o", "t.svg"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "t.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_cli_unsupported_api_is_one_line_nonzero_and_no_gradviz_traceback(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nx = torch.ones(3, requires_grad=True)\n(x * 2).sum().backward()\n"
        "y = torch.nested.nested_tensor([x])\n"
    )
    r = _gradviz_run("--engine", "gradviz", "-o", "t.json", str(script), cwd=tmp_path)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "gradviz/" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0] == "gradviz has no torch.nested (used at train.py:4); see README: what runs on gradviz"
    assert len(lines) == 2 and lines[1].startswith("gradviz: ") and "(error)" in lines[1]  # the trace's closing line
    assert load(tmp_path / "t.json").status == "error"


@pytest.mark.parametrize("engine", ["gradviz"])
def test_cli_a_real_error_keeps_its_traceback(tmp_path, engine):
    script = tmp_path / "s.py"
    script.write_text("import torch\nraise ValueError('mine')\n")
    r = _gradviz_run("--engine", engine, str(script), cwd=tmp_path)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "ValueError: mine" in r.stderr
