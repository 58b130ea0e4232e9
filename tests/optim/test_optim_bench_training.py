"""benchmarks/bench_training.py (issue 13's speed benchmark) runs and writes its result. Nothing
here looks at a time: the goals are ratios the benchmark reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, engines: str) -> dict:
    out = tmp_path / "training.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_training.py"), "--quick", "--engines", engines,
         "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| model | engine |" in proc.stdout
    return json.loads(out.read_text())


@pytest.mark.slow
def test_runs_and_reports_both_engines(tmp_path: Path) -> None:
    """torch runs now; gradviz gives a ratio and a conv profile, or (before gradviz.nn has the
    layers) the reason it did not run."""
    result = _run(tmp_path, "torch,gradviz")
    assert result["threads"] == 1 and result["gc"] == "on"
    for model in ("mlp", "conv"):
        e = result["models"][model]["engines"]["torch"]
        assert "error" not in e, e
        assert e["steps"] == 3 and e["total_median_ms"] > 0
        assert 2.0 < e["first_loss"] < 2.6  # cross-entropy of 10 classes near chance
        entry = result["models"][model]
        g = entry["engines"]["gradviz"]
        if "error" in g:
            assert "gradviz.nn" in g["error"] or "has no attribute" in g["error"]
            continue
        assert entry["first_loss_agrees"], entry
        assert entry["ratio"] > 0
        if model == "conv":
            assert g["profile"] and "function" in g["profile"][0]
        else:  # the MLP's matrix products alone, each engine's own, and what the step costs beyond them
            assert 0 < g["gemm_median_ms"] < g["total_median_ms"]
            assert 0 < e["gemm_median_ms"] < e["total_median_ms"]
            assert entry["gemm_ratio"] > 0 and entry["beyond_gemm_ratio"] > 0
