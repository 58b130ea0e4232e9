"""The trace-reading commands and ``gradviz --version`` start without the engine (issue 32 item 3,
issue 29 item 7): gradviz/__init__.py imports the torch-like namespace (gradviz/_api.py) at the first
use of one of its names, and gradviz.trace its recorder at the first recording. ``import gradviz as
torch`` must behave as it did when the package imported everything eagerly."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import gradviz

REPO = Path(__file__).resolve().parents[2]
# What reading a trace must not import: the engine and what sits on it, and ml_dtypes (bfloat16).
HEAVY = ("gradviz._api", "gradviz.tensor", "gradviz.ops", "gradviz.nn", "gradviz.optim", "gradviz.autograd.engine",
         "gradviz.trace.recorder", "ml_dtypes", "torch")

CHAIN = """
import gradviz as torch
x = torch.ones(3, requires_grad=True)
y = x
for _ in range(110):
    y = y * 1.01
y.sum().backward()
"""


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of about 1,000 events (the size issue 32 times ``info`` on)."""
    where = tmp_path_factory.mktemp("light")
    (where / "chain.py").write_text(CHAIN)
    subprocess.run([sys.executable, "-m", "gradviz", "run", "-o", "t.json", "chain.py"], cwd=where, check=True,
                   capture_output=True, timeout=120)
    return where / "t.json"


def _imported(args: list[str], cwd: Path) -> set[str]:
    """The modules ``python -X importtime -m gradviz ARGS`` imports (its stderr's import-time table)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gradviz", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # diff exits 1 on a divergence
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("args", [["--version"], ["info", "T"], ["render", "T", "--format", "dot", "-o", "g.dot"],
                                  ["replay", "T", "--step", "5"], ["export", "T", "-o", "t.perfetto.json"],
                                  ["diff", "T", "T"]])
def test_trace_reading_commands_import_no_engine(args: list[str], trace_file: Path) -> None:
    args = [str(trace_file) if a == "T" else a for a in args]
    modules = _imported(args, trace_file.parent)
    assert "gradviz.cli" in modules
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    assert heavy == [], heavy


def test_shadowed_names_are_every_submodule_the_namespace_rebinds() -> None:
    """gradviz/__init__.py's _SHADOWED: the submodules whose names torch gives to a function or class."""
    import gradviz._api

    api = vars(gradviz._api)
    submodules = {m.name for m in pkgutil.iter_modules(gradviz.__path__)}
    rebound = {n for n in submodules & set(api) if not isinstance(api[n], types.ModuleType)}
    assert rebound == set(gradviz._SHADOWED)


def test_lazy_namespace_is_the_eager_one() -> None:
    """Every name of gradviz/_api.py is gradviz's, the same object; dir() and ``from gradviz import *``
    see what they saw; ``gradviz.tensor`` is the function even after the module's import."""
    import gradviz._api as api
    import gradviz.tensor  # noqa: F401 - the import system binds the module to the package's name

    for name, value in vars(api).items():
        if not (name.startswith("__") and name.endswith("__")):
            assert getattr(gradviz, name) is value, name
    assert callable(gradviz.tensor) and not isinstance(gradviz.tensor, types.ModuleType)
    assert isinstance(gradviz.device("cpu"), gradviz.device)
    assert "tensor" in dir(gradviz) and "Tensor" in dir(gradviz) and "np" not in dir(gradviz)
    star: dict = {}
    exec("from gradviz import *", star)
    assert star["tensor"] is gradviz.tensor and star["nn"] is gradviz.nn and "_functions" not in star


@pytest.mark.parametrize("first", ["import gradviz.tensor", "from gradviz.nn import Linear", "import gradviz.autograd",
                                   "import gradviz.nn as nn; nn.Linear(3, 2)",  # drawn before any gradviz.X
                                   "from gradviz.trace import record", "import gradviz.cli"])
def test_any_module_imported_first_leaves_the_whole_namespace(first: str) -> None:
    """Whichever of gradviz's modules a program imports first, ``gradviz.X`` then works as before (the
    Tensor methods that gradviz/_api.py installs included)."""
    code = (f"{first}\nimport gradviz as torch\n"
            "t = torch.ones(2, 3).uniform_().requires_grad_()\n"
            "torch.nn.Linear(3, 1)(t).sum().backward()\n"
            "print(type(torch.tensor([1])).__name__, torch.float32)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["Tensor", "torch.float32"]


def test_record_through_the_lazy_trace_package(tmp_path: Path) -> None:
    """gradviz.trace(...) and gradviz.record() import the recorder when first used."""
    x = gradviz.ones(2, requires_grad=True)
    with gradviz.record() as rec:
        (x * 2).sum().backward()
    assert any(e.kind == "node_begin" for e in rec.trace.events)
    with gradviz.trace(tmp_path / "t.json"):
        (x * 3).sum().backward()
    assert gradviz.load(tmp_path / "t.json").events


def test_ml_dtypes_is_imported_at_the_first_bfloat16_use() -> None:
    """ml_dtypes (bfloat16's numpy dtype) takes longer to import than the engine: only bfloat16 loads it,
    and bfloat16 arrays made with ml_dtypes before gradviz used it still convert."""
    code = ("import sys\nimport gradviz as torch\n"
            "x = torch.ones(2, 3) * 2\n(x.requires_grad_() * 3).sum().backward()\ntorch.sqrt(torch.arange(3))\n"
            "print('ml_dtypes' in sys.modules)\n"
            "b = torch.ones(2, dtype=torch.bfloat16)\n"
            "print('ml_dtypes' in sys.modules, (b * 3).dtype, torch.finfo(torch.bfloat16).eps)\n"
            "import ml_dtypes, numpy as np\n"
            "print(torch.from_numpy(np.ones(2, ml_dtypes.bfloat16)).dtype)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["False", "True", "torch.bfloat16", "0.0078125", "torch.bfloat16"]
    code = ("import numpy as np, ml_dtypes\nimport gradviz as torch\n"
            "print(torch.from_numpy(np.ones(2, ml_dtypes.bfloat16)).dtype)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.stdout.split() == ["torch.bfloat16"], proc.stderr[-2000:]
