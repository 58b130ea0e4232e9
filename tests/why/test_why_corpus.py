"""`gradviz why` on real programs (tests/corpus/why: bugs people reported, each file's header names
its source): the expected reason and line (tests/corpus/README.md lists them), on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._why_check import ENGINES, check

PROGRAMS = Path(__file__).resolve().parents[1] / "corpus" / "why"


def test_at_least_eight_programs() -> None:
    assert len(list(PROGRAMS.glob("*.py"))) >= 8


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prog", sorted(PROGRAMS.glob("*.py")), ids=lambda p: p.stem)
def test_real_program(prog: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    check(prog, engine, tmp_path)
