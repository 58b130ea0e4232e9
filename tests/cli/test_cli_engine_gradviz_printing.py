"""Issue 35 item 10: under ``gradviz run --engine gradviz`` an unmodified torch script prints what
it prints under torch: dtypes as torch.float32, sizes as torch.Size([...]), type() names,
return_types, devices."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """\
import torch
x = torch.ones(2, 3)
print(x.dtype, x.shape, x.size(), x.type(), torch.float64, torch.int64)
print(repr(x.dtype), repr(x.shape), x.max(1))
print(x.device, repr(x.device), torch.device("cpu") == "cpu")
print(f"{x.shape} {list(x.shape)} {x.sum().item()}")
"""


def test_an_unmodified_script_prints_the_same_on_gradviz(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.py").write_text(SCRIPT)
    want = subprocess.run([sys.executable, "p.py"], capture_output=True, text=True, timeout=120)
    got = subprocess.run([sys.executable, "-m", "gradviz", "run", "--engine", "gradviz", "-o", "t.json", "p.py"],
                         capture_output=True, text=True, timeout=120)
    assert want.returncode == 0 and got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
