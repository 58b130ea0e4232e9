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
    # Per node name, not a list of spans: runs, total and mean time, the costliest first.
    lines = [ln.strip() for ln in out.splitlines()]
    main_at = next(i for i, ln in enumerate(lines) if ln.startswith("1 MainThread"))
    assert lines[main_at + 1].startswith("caller") and lines[main_at + 1].endswith("3 node run(s), busy 4.0µs")
    assert lines[main_at + 2] == "AccumulateGrad x ×1  2.0µs total, 2.0µs mean"
    assert "MulBackward0 ×1  1.0µs total, 1.0µs mean" in out
    assert " · " not in out
    assert "1 cpu@MainThread" in out and "2 virtual:0" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_accumulation_table(tmp_path: Path) -> None:
    out = run(tmp_path, diamond, "--width", "120")
    # AccumulateGrad(a) slot 0 got two gradients, from both MulBackward0 nodes.
    assert "AccumulateGrad a (1)   0      2               MulBackward0 (3), MulBackward0 (2)" in out


def test_errors_highlighted_and_task_outcome(tmp_path: Path) -> None:
    out = run(tmp_path, failing, "--width", "120")
    assert "error: RuntimeError: LogBackward0 failed" in out
    assert "LogBackward0 (2)   RuntimeError: LogBackward0 failed" in out


def test_fits_narrow_width(tmp_path: Path) -> None:
    out = run(tmp_path, diamond, "--width", "60")
    assert max(len(line) for line in out.splitlines()) <= 60


def test_time_axis_ticks_and_task_boundaries(tmp_path: Path) -> None:
    out = run(tmp_path, two_devices, "--width", "100")
    lines = out.splitlines()
    axis = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("time"))
    assert "├" in lines[axis] and lines[axis].count("┼") == 3 and lines[axis].rstrip().endswith("┤")
    ticks = lines[axis + 1].split()
    assert ticks == ["0", "12.5µs", "25.0µs", "37.5µs", "50.0µs"]  # the run is 50 µs long
    marks = lines[axis + 2]
    assert marks.lstrip().startswith("tasks") and "│1" in marks
    # The task's mark sits where it begins: 15 µs into the 50 µs run.
    bar_start = lines[axis].index("├")
    assert abs((marks.index("│1") - bar_start) / (lines[axis].index("┤") - bar_start) - 15 / 50) < 0.03


def test_task_zooms_to_its_span(tmp_path: Path) -> None:
    from trace_builders import reentrant

    trace = reentrant()
    inner = trace.tasks[2]
    out = run(tmp_path, reentrant, "--width", "100", "--task", "2")
    span_us = (inner.end.ts - inner.begin.ts) / 1000
    assert f"showing task 2: {span_us:.1f}µs" in out
    axis = next(ln for ln in out.splitlines() if ln.strip().startswith("0 "))
    assert axis.split()[-1] == f"{span_us:.1f}µs"  # the axis spans the task, not the whole run
    assert "│2" in out and "│1" not in out
