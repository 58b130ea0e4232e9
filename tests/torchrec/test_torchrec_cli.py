"""`gradviz run` picks torch's engine for a script that imports torch and not gradviz, --engine
chooses explicitly, and a script's error ends the torch trace as it ends a gradviz one."""

from __future__ import annotations

import pytest
import torch  # noqa: F401 - the recorded scripts need it: fail, never skip, without torch
from click.testing import CliRunner

import gradviz
from gradviz.cli import main
from gradviz.torchrec.detect import engine_of
from gradviz.trace import events as ev
from gradviz.trace.provenance import engine

SCRIPT = "import torch\na = torch.ones(3, requires_grad=True)\n(a * a).sum().backward()\n"


def test_detect(tmp_path):
    cases = {
        "import torch\n": "torch",
        "from torch import nn\n": "torch",
        "import torch\nimport gradviz\n": "gradviz",
        "import gradviz as torch\n": "gradviz",
        "import numpy\n": "gradviz",
        "def f(:\n": "gradviz",  # does not parse: the default
    }
    for i, (src, want) in enumerate(cases.items()):
        p = tmp_path / f"s{i}.py"
        p.write_text(src)
        assert engine_of(p) == want, src


def test_run_records_torch_by_default_and_engine_chooses(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    run = CliRunner()
    r = run.invoke(main, ["run", "-o", str(tmp_path / "a.json"), str(script)])
    assert r.exit_code == 0, r.output
    t = gradviz.load(tmp_path / "a.json")
    assert engine(t)[0] == "torch" and t.execution_order(1) == ["SumBackward0", "MulBackward0", "AccumulateGrad"]
    r = run.invoke(main, ["run", "--engine", "gradviz", "-o", str(tmp_path / "b.json"), str(script)])
    assert r.exit_code == 0, r.output
    assert engine(gradviz.load(tmp_path / "b.json"))[0] == "gradviz"
    r = run.invoke(main, ["run", "--engine", "torch", "-o", str(tmp_path / "c.json"), str(script)])
    assert r.exit_code == 0 and engine(gradviz.load(tmp_path / "c.json"))[0] == "torch"


def test_script_error_ends_the_trace(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(SCRIPT + "b = torch.ones(2)\nb.sum().backward()\n")  # b does not require grad
    r = CliRunner().invoke(main, ["run", "-o", str(tmp_path / "t.json"), str(script)])
    assert r.exit_code == 1
    t = gradviz.load(tmp_path / "t.json")
    assert t.status == "error" and engine(t)[0] == "torch"
    task2 = t.tasks[2]
    assert task2.status == "error" and "does not require grad" in task2.end.error
    assert [e.type for e in t.of_kind(ev.Error)] == ["RuntimeError", "RuntimeError"]  # the task's, the program's


@pytest.mark.slow
def test_readme_tour_torch_script(tmp_path):
    """The README's tour, its exact commands in a fresh process each: record a real torch script
    (samples/torch_mlp.py), render it, run it on gradviz's engine, and diff the two: no divergence."""
    import subprocess
    import sys
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "samples" / "torch_mlp.py"

    def gv(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gradviz", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)

    r = gv("run", "-o", "torch_mlp.torch.json", str(sample))
    assert r.returncode == 0, r.stderr
    t = gradviz.load(tmp_path / "torch_mlp.torch.json")
    assert engine(t)[0] == "torch" and len(t.tasks) == 3
    r = gv("render", "-o", "torch_mlp.dot", "torch_mlp.torch.json")
    assert r.returncode == 0, r.stderr
    dot = (tmp_path / "torch_mlp.dot").read_text()
    # the picture names the parameters by module and each node by its forward line
    assert "hidden.weight" in dot and "out.bias" in dot and "torch_mlp.py:22" in dot
    r = gv("run", "--engine", "gradviz", "-o", "torch_mlp.gradviz.json", str(sample))
    assert r.returncode == 0, r.stderr
    r = gv("diff", "torch_mlp.torch.json", "torch_mlp.gradviz.json")
    assert r.returncode == 0 and "no divergence" in r.stdout, r.stdout + r.stderr
