"""What the `gradviz why` tests share: a program's expected answer from its header (a ``# why:
QUESTION -> REASON`` line and the line marked ``# WHERE``), recording it, asking the trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gradviz

# torch's engine: a process that imports torch, about ten seconds a program
ENGINES = ["gradviz", pytest.param("torch", marks=pytest.mark.slow)]


def spec(path: Path) -> tuple[list[str], str, int | None]:
    """(the question's CLI arguments, the reason, the WHERE line or None) from a program's header."""
    lines = path.read_text().splitlines()
    head = next(line for line in lines if line.startswith("# why:"))
    question, reason = head.removeprefix("# why:").split("->")
    where = next((i + 1 for i, line in enumerate(lines) if line.rstrip().endswith("# WHERE")), None)
    return question.split(), reason.split()[0], where


def record(prog: Path, engine: str, out: Path) -> None:
    """`gradviz run --engine ENGINE -o OUT PROG`, in its own process, as a user runs it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}  # warnings shown as to a user: evidence
    subprocess.run([sys.executable, "-m", "gradviz", "run", "--engine", engine, "-o", str(out), str(prog)],
                   capture_output=True, env=env, timeout=300, check=False)
    assert out.exists(), f"no trace from {prog.name}"


def ask(trace: Any, question: list[str]) -> Any:
    if not question:  # no question: the first problem
        return trace.why()
    if question[0] == "--grad":
        return trace.why(grad=question[1])
    return trace.why(nan=question[0] == "--nan", error=question[0] == "--error")


def check(prog: Path, engine: str, tmp_path: Path) -> Any:
    """Record ``prog`` on ``engine`` and check the answer's reason and line against its header."""
    question, reason, line = spec(prog)
    out = tmp_path / f"{prog.stem}.{engine}.json"
    record(prog, engine, out)
    a = ask(gradviz.load(out), question)
    assert a.reason == reason, a
    if line is None:
        assert a.where is None, a
    else:
        assert a.where is not None and Path(a.where.rsplit(":", 1)[0]).name == prog.name, a
        assert int(a.where.rsplit(":", 1)[1]) == line, a
    assert a.text
    return a
