"""`gradviz replay TRACE`: the timeline of the whole run."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from trace_builders import diamond, failing, two_devices

from gradviz.cli import main
from gradviz.trace.file import save


def run(tmp_path: Path, build, *args: str) -> str:
    p = tmp_path / "t.json"
    save(build().events, p)
    r = CliRunner().invoke(main, ["replay", str(p), *args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def test_lanes_per_thread_and_queue_depth(tmp_path: Path) -> None:
    out = run(tmp_path, two_devices, "--width", "100")
    assert "1 MainThread" in out and "2 gradviz-virtual:0" in out
    assert "SumBackward0 1.0µs · ToCopyBackward0 1.0µs · AccumulateGrad 2.0µs" in out
    assert "ToCopyBackward0 1.0µs · MulBackward0 1.0µs" in out
    assert "1 cpu@MainThread" in out and "2 virtual:0" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_accumulation_table(tmp_path: Path) -> None:
    out = run(tmp_path, diamond, "--width", "120")
    # AccumulateGrad(a) slot 0 got two gradients, from both MulBackward0 nodes.
    assert "AccumulateGrad (1)   0      2               MulBackward0 (3), MulBackward0 (2)" in out


def test_errors_highlighted_and_task_outcome(tmp_path: Path) -> None:
    out = run(tmp_path, failing, "--width", "120")
    assert "error: RuntimeError: LogBackward0 failed" in out
    assert "LogBackward0 (2)   RuntimeError: LogBackward0 failed" in out


def test_fits_narrow_width(tmp_path: Path) -> None:
    out = run(tmp_path, diamond, "--width", "60")
    assert max(len(line) for line in out.splitlines()) <= 60
