"""The benchmark harness runs and writes well-formed results. Nothing here looks at a time:
speed goals live in benchmarks/ as ratios, never as timed tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
# Quick mode takes seconds (a dozen worker processes, each importing its engine); the bound only
# stops a hung run from holding the suite.
TIMEOUT_S = 300

STAT_KEYS = {"median_ms", "min_ms", "max_ms", "runs"}


def run_quick(script: str, out: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    # The markdown table went to stdout too.
    assert "| workload |" in proc.stdout
    return result


def check_shape(result: dict, bench: str, keys: list[str]) -> None:
    assert result["schema"] == 1 and result["bench"] == bench and result["quick"] is True
    assert {"python", "versions", "cpus"} <= result["environment"].keys()
    assert [w["key"] for w in result["workloads"]] == keys
    for w in result["workloads"]:
        subject = w["subject"]
        assert subject in w["results"]
        for name, stats in w["results"].items():
            assert STAT_KEYS <= stats.keys(), (w["key"], name)
            assert stats["runs"] >= 1
            assert 0 < stats["min_ms"] <= stats["median_ms"] <= stats["max_ms"]
            assert len(w["times_ms"][name]) == stats["runs"]
        # One ratio per peer that ran, none for the subject itself.
        assert set(w["ratios"]) == set(w["results"]) - {subject}
        for r in w["ratios"].values():
            assert r["ratio"] > 0 and r["ratio_min"] > 0
    for claim in result["claims"]:
        assert {"text", "workload", "peer", "limit", "ratio", "holds"} <= claim.keys()


@pytest.mark.slow
def test_engine_bench_quick(tmp_path: Path) -> None:
    result = run_quick("bench_engine.py", tmp_path / "engine.json")
    check_shape(result, "engine", ["w1_forward", "w1_backward", "w2_backward", "w3_mlp"])
    by_key = {w["key"]: w for w in result["workloads"]}
    # The floor and hand-written numpy need nothing installed: they always run.
    for key in ("w1_forward", "w1_backward", "w2_backward", "w3_mlp"):
        assert "minimal" in by_key[key]["results"]
    assert "numpy" in by_key["w3_mlp"]["results"]
    assert "us_per_node" in by_key["w1_backward"]["results"]["gradviz"]
    # A peer either ran or says why not.
    for peer in ("torch", "autograd", "mygrad", "micrograd"):
        assert peer in by_key["w1_backward"]["results"] or peer in result["skipped"]
    assert {c["workload"] for c in result["claims"]} == {"w1_forward", "w1_backward", "w2_backward", "w3_mlp"}
    # W3's claim is against the hand-written numpy step (issue 32: the engine's cost over numpy's).
    (w3,) = [c for c in result["claims"] if c["workload"] == "w3_mlp"]
    w3r = by_key["w3_mlp"]["results"]
    assert w3["peer"] == "numpy"
    assert w3["ratio"] == pytest.approx(w3r["gradviz"]["median_ms"] / w3r["numpy"]["median_ms"])
    # gradviz's check says which path its engine ran (compiled by setup.sh, or the Python source).
    assert by_key["w1_backward"]["facts"]["gradviz"]["path"] in ("compiled", "python", "mixed")


@pytest.mark.slow
def test_recording_bench_quick(tmp_path: Path) -> None:
    result = run_quick("bench_recording.py", tmp_path / "recording.json")
    check_shape(result, "recording", ["rec_w1", "rec_w3", "rec_w1_live", "rec_w3_live"])
    for w in result["workloads"]:
        subject = "live" if w["key"].endswith("_live") else "trace"
        assert w["subject"] == subject
        assert set(w["results"]) == ({"untraced", "live"} if subject == "live" else {"untraced", "trace", "record"})
        assert w["facts"][subject]["events"] > 0


def test_run_all_splices_between_markers(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{run_all.BEGIN}\nold table\n{run_all.END}\noutro\n")
    assert run_all.splice(readme, "new table\n")
    assert readme.read_text() == f"intro\n{run_all.BEGIN}\nnew table\n{run_all.END}\noutro\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not run_all.splice(plain, "x")
    assert plain.read_text() == "no markers\n"


@pytest.mark.slow
@pytest.mark.parametrize("script", ["bench_engine.py", "bench_recording.py"])
def test_bench_lists_workloads(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--list"], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gradviz" in proc.stdout or "trace" in proc.stdout
