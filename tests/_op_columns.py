"""A program with several ops on one line, recorded on either engine in this process: what the
tests of per-op columns share (issue 35 item 11: lines that point at the op, not at the line)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import gradviz

PROGRAM = '''\
def run(torch):
    F = torch.nn.functional

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(3, 4)
            self.fc2 = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    torch.manual_seed(0)
    h = Net()(torch.randn(5, 3))
    y = (h * 2).sqrt().sum()
    y.backward()
'''
FORWARD_LINE = 11  # return self.fc2(F.relu(self.fc1(x)))
NAN_LINE = 15  # y = (h * 2).sqrt().sum(): sqrt of negatives


def record(engine: str, folder: Path) -> Any:
    """The program (written to ``folder/ops_line.py``, so its lines can be read back) recorded on
    ``engine``: the Trace."""
    path = folder / "ops_line.py"
    path.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location(f"ops_line_{engine}", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    if engine == "torch":
        import torch
    else:
        torch = gradviz
    with gradviz.record(engine=engine) as rec:
        mod.run(torch)
    return rec.trace


def node(trace: Any, name: str) -> Any:
    return next(n for n in trace.nodes.values() if n.name == name)
