"""`gradviz why` answers each reason of issue 28 on a small program of its own (tests/why_programs),
recorded on both engines: the right reason and the right line (the one marked ``# WHERE``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradviz.cli import main
from tests._why_check import ENGINES, check, record

PROGRAMS = Path(__file__).resolve().parents[1] / "why_programs"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prog", sorted(PROGRAMS.glob("*.py")), ids=lambda p: p.stem)
def test_reason_and_line(prog: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    check(prog, engine, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("prog", sorted((PROGRAMS / "torch_only").glob("*.py")), ids=lambda p: p.stem)
def test_reason_and_line_on_torch(prog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs of a behaviour gradviz's core does not have yet (inference tensors): torch only."""
    monkeypatch.chdir(tmp_path)
    check(prog, "torch", tmp_path)


def test_cli_json_and_first_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    record(PROGRAMS / "no_grad.py", "gradviz", tmp_path / "t.json")
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
    record(PROGRAMS / "no_grad.py", "gradviz", tmp_path / "t.json")
    r = CliRunner().invoke(main, ["why", "t.json", "--grad", "nope"])
    assert r.exit_code == 1 and "no tensor named 'nope'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["why", "t.json", "--nan", "--error"])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["why", "missing.json"])
    assert r.exit_code == 2 and "Traceback" not in r.output  # a missing input: a usage mistake, as in every command
