"""The program's warnings in the trace: each warning shown is a ``warning`` event with the
user's line, on both engines, and the program sees its warnings exactly as without recording
(same text, file and line on stderr; catch_warnings still catches; nothing left installed)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import gradviz
from gradviz.trace import events as ev

PROGRAM = '''
import warnings
import torch

def helper():
    warnings.warn("from a helper", UserWarning)

w = torch.randn(3, requires_grad=True)
y = (w * 2)
y.sum().backward()
helper()
y.grad
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    warnings.warn("caught, not shown")
print(len(caught), "caught")
'''


def _stderr(args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    r = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 caught" in r.stdout
    return "\n".join(line for line in r.stderr.splitlines() if not line.startswith("gradviz:"))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["gradviz", "torch"])
def test_warnings_recorded_and_unchanged(engine: str, tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM if engine == "torch" else PROGRAM.replace("import torch", "import gradviz as torch"))
    plain = _stderr([str(prog)], tmp_path)
    recorded = _stderr(["-m", "gradviz", "run", "--engine", engine, "-o", "t.json", str(prog)], tmp_path)
    assert recorded == plain  # the same warnings, at the same file and line
    got = gradviz.load(tmp_path / "t.json").of_kind(ev.WarningShown)
    assert [(w.category, w.message[:13], w.source.rsplit(":", 1)[1], w.shown) for w in got] == [
        ("UserWarning", "from a helper", "6", True),  # the innermost line of the user's code
        ("UserWarning", "The .grad att", "12", True),  # torch's, from the user's line
        ("UserWarning", "caught, not s", "15", False),  # caught by catch_warnings(record=True)
    ]
    assert got[0].at.endswith("prog.py:6") and got[2].at.endswith("prog.py:15")


def test_tap_removed_after_stop() -> None:
    before = warnings._showwarnmsg  # type: ignore[attr-defined]
    with gradviz.record() as rec:
        assert warnings._showwarnmsg is not before  # type: ignore[attr-defined]
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("seen", UserWarning, stacklevel=1)
    assert warnings._showwarnmsg is before  # type: ignore[attr-defined]
    (w,) = rec.trace.of_kind(ev.WarningShown)
    assert w.message == "seen" and w.source is not None and w.source.startswith(__file__)
