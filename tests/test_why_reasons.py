"""`gradviz why` answers each reason of issue 28 on a small program of its own (tests/why_programs),
recorded on both engines: the right reason and the right line (the one marked ``# WHERE``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradviz
from gradviz.cli import main

PROGRAMS = Path(__file__).parent / "why_programs"
ENGINES = ["gradviz", "torch"]


def _spec(path: Path) -> tuple[list[str], str, int | None]:
    """(the question's CLI arguments, the reason, the WHERE line or None) from a program's header."""
    lines = path.read_text().splitlines()
    question, reason = lines[0].removeprefix("# why:").split("->")
    where = next((i + 1 for i, line in enumerate(lines) if line.rstrip().endswith("# WHERE")), None)
    return question.split(), reason.split()[0], where


def _record(prog: Path, engine: str, out: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    subprocess.run([sys.executable, "-m", "gradviz", "run", "--engine", engine, "-o", str(out), str(prog)],
                   capture_output=True, env=env, timeout=300, check=False)  # fmt: skip
    assert out.exists(), f"no trace from {prog.name}"


def _ask(trace: gradviz.trace.Trace, question: list[str]) -> gradviz.replay.why.Answer:
    if question[0] == "--grad":
        return trace.why(grad=question[1])
    return trace.why(nan=question[0] == "--nan", error=question[0] == "--error")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prog", sorted(PROGRAMS.glob("*.py")), ids=lambda p: p.stem)
def test_reason_and_line(prog: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    question, reason, line = _spec(prog)
    out = tmp_path / "t.json"
    _record(prog, engine, out)
    a = _ask(gradviz.load(out), question)
    assert a.reason == reason, a
    if line is None:
        assert a.where is None
    else:
        assert a.where is not None and Path(a.where.rsplit(":", 1)[0]).name == prog.name, a
        assert int(a.where.rsplit(":", 1)[1]) == line, a
    assert a.text


def test_cli_json_and_first_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _record(PROGRAMS / "no_grad.py", "gradviz", tmp_path / "t.json")
    r = CliRunner().invoke(main, ["why", "t.json", "--grad", "w", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert set(d) == {"question", "reason", "where", "node", "tensor", "text"}
    assert (d["question"], d["reason"], d["tensor"]) == ("grad", "no_grad", "w")
    # no question: the first problem is the leaf whose .grad is None
    r = CliRunner().invoke(main, ["why", "t.json"])
    assert r.exit_code == 0 and r.output.startswith("no_grad at "), r.output


def test_cli_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _record(PROGRAMS / "no_grad.py", "gradviz", tmp_path / "t.json")
    r = CliRunner().invoke(main, ["why", "t.json", "--grad", "nope"])
    assert r.exit_code == 1 and "no tensor named 'nope'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["why", "t.json", "--nan", "--error"])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["why", "missing.json"])
    assert r.exit_code == 1 and "Traceback" not in r.output
