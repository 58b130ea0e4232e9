"""The real-program corpus (tests/corpus/programs/): each program runs under torch 2.13 and under
gradviz standing in for torch (gradviz.install_as_torch), and gradviz must match torch: node names,
next_functions structure and execution order exactly; losses and leaf gradients within float
tolerance. Programs that gradviz cannot run yet are xfail(strict=True) with the first missing API
(tests/corpus/expected.py; `python tests/corpus/status.py` prints the table and updates it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch  # the oracle: without it this module fails to import, and the corpus fails (never skips)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
import expected  # noqa: E402
import harness  # noqa: E402

assert torch.__version__.startswith("2.13"), f"the corpus was checked against torch 2.13, not {torch.__version__}"

_results: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def _both(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if name not in _results:
        _results[name] = harness.run_both(name)
    return _results[name]


def test_corpus_size() -> None:
    assert len(harness.programs()) >= 91
    assert set(expected.XFAIL) <= set(harness.programs()), "expected.py names a program that is not in the corpus"


@pytest.mark.slow
@pytest.mark.parametrize("name", harness.programs())
def test_runs_under_torch(name: str) -> None:
    """The program itself is sound: it runs under real torch and calls backward at least once."""
    t, _ = _both(name)
    assert t["status"] == "ok", t.get("message") + "\n" + t.get("traceback", "")
    assert t["records"], "the program ran no backward under torch"


def _params() -> list[Any]:
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=expected.XFAIL[n])) if n in expected.XFAIL else n
        for n in harness.programs()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", _params())
def test_gradviz_matches_torch(name: str) -> None:
    t, g = _both(name)
    status, detail = harness.outcome(t, g)
    assert status == "match", f"{status}: {detail}"
