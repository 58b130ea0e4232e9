"""Leaf names (issue 29 item 3; issue 33 G14): the same on both engines for a Module-based
program (module paths, as the model's named_parameters() gives them, and plain variables by
their name); naming never breaks the user's program."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch

import gradviz
from gradviz.trace import load

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import torch

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x).relu()

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.head(self.block(x))

torch.manual_seed(0)
model = Net()
scale = torch.ones(4, requires_grad=True)
x = torch.randn(2, 4)
loss = model(x * scale).sum()
loss.backward()
"""


def _names(engine: str, tmp_path: Path) -> set[str]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / f"{engine}.json"
    r = subprocess.run([sys.executable, "-m", "gradviz", "run", "--engine", engine, "-o", str(out), str(script)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    return {t.name for t in load(out).tensors.values()}


def test_leaf_names_are_the_same_on_both_engines(tmp_path):
    torch_names = _names("torch", tmp_path)
    gradviz_names = _names("gradviz", tmp_path)
    want = {"block.fc.weight", "block.fc.bias", "head.weight", "head.bias", "scale"}
    assert torch_names == gradviz_names == want


class _Hostile:
    """A lazy proxy: any attribute access raises (G14)."""

    def __getattr__(self, name):
        raise RuntimeError(f"proxy: no {name}")

    def __eq__(self, other):
        raise RuntimeError("proxy: no ==")

    __hash__ = object.__hash__


class _HostileModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.lin(x)

    def named_parameters(self, *args, **kwargs):
        raise RuntimeError("named_parameters refuses")


def test_naming_never_breaks_the_program():
    proxy = _Hostile()  # noqa: F841 - a variable of the frame the recorder reads names from
    torch.manual_seed(0)
    m = _HostileModule()
    w = torch.ones(2, requires_grad=True)
    with gradviz.record(engine="torch") as rec:
        loss = m(torch.randn(3, 2) * w).sum()
        loss.backward()
    assert w.grad is not None and m.lin.weight.grad is not None
    names = {t.name for t in rec.trace.tensors.values()}
    assert "w" in names
