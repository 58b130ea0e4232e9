"""`gradviz replay --step N` / `--at`: golden text (fixed width, no colour) and one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_builders import diamond, failing, reentrant, two_devices

from gradviz.cli import main
from gradviz.trace.file import save

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("GRADVIZ_UPDATE_GOLDEN") == "1"


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE or not path.exists():
        path.write_text(_norm(text))
        if not UPDATE:
            pytest.fail(f"golden file {name} was missing and has been written: check it and rerun")
    assert _norm(text) == path.read_text()


def invoke(*args: str):
    return CliRunner().invoke(main, ["replay", *args], catch_exceptions=False)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name, build in {"diamond": diamond, "reentrant": reentrant, "devices": two_devices,
                        "failing": failing}.items():
        p = tmp_path / f"{name}.json"
        save(build().events, p)
        out[name] = str(p)
    return out


def test_step_reentrant_golden(files: dict[str, str]) -> None:
    r = invoke(files["reentrant"], "--step", "36", "--width", "100")
    assert r.exit_code == 0, r.output
    # The inner task's node runs on the same thread, nested in the outer node, at depth 1.
    assert "running SumBackward0 (node 7), task 2 inside" in r.output
    check_golden("replay_reentrant_step36.txt", r.output)


def test_step_reentrant_inner_queue_golden(files: dict[str, str]) -> None:
    r = invoke(files["reentrant"], "--step", "40", "--width", "100")
    assert "1. MulBackward0 (seq 3) task 2, priority (1, 3)" in r.output
    check_golden("replay_reentrant_step40.txt", r.output)


def test_step_multi_device_golden(files: dict[str, str]) -> None:
    r = invoke(files["devices"], "--step", "28", "--width", "100")
    assert r.exit_code == 0, r.output
    assert "gradviz-virtual:0" in r.output and "running ToCopyBackward0 (node 4)" in r.output
    check_golden("replay_multi_device_step28.txt", r.output)


def test_step_multi_device_push_back_to_cpu_golden(files: dict[str, str]) -> None:
    r = invoke(files["devices"], "--step", "39", "--width", "100")
    assert "ToCopyBackward0 (seq 0) pushed to cpu queue of task 1, priority (0, 0)" in r.output
    check_golden("replay_multi_device_step39.txt", r.output)


def test_no_colour_when_not_a_terminal(files: dict[str, str]) -> None:
    r = invoke(files["diamond"], "--step", "42")
    assert "\x1b[" not in r.output
    assert max(len(line) for line in r.output.splitlines()) <= 100


def test_at_jumps_to_node_start(files: dict[str, str]) -> None:
    r = invoke(files["diamond"], "--at", "AccumulateGrad")
    assert r.output.startswith("step 52 of 56")
    assert "MainThread runs AccumulateGrad a (node 1) for task 1 at depth 0" in r.output
    r = invoke(files["diamond"], "--at", "MulBackward0#2")
    assert r.output.startswith("step 37 of 56")
    r = invoke(files["diamond"], "--at", "4")
    assert r.output.startswith("step 28 of 56")


def test_task_filter(files: dict[str, str]) -> None:
    r = invoke(files["reentrant"], "--step", "40", "--task", "1")
    assert "task 2:" not in r.output and "task 1:" in r.output


def test_error_state(files: dict[str, str]) -> None:
    r = invoke(files["failing"], "--step", "24")
    assert "ERROR in event #22 (step 23) in LogBackward0 (node 2)" in r.output
    assert "task 1: error (RuntimeError: LogBackward0 failed)" in r.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--step", "999"], "999 is out of range: the trace has 56 events (0..56)"),
        (["--step", "-1"], "-1 is out of range: the trace has 56 events (0..56)"),
        (["--step", "3", "--at", "MulBackward0"], "--at and --step N both pick a step"),
        (["--at", "NoSuchBackward"], "no node named 'NoSuchBackward'"),
        (["--task", "7", "--step", "3"], "no graph task 7 in the trace (tasks: 1)"),
    ],
)
def test_user_mistakes_are_one_line_errors(files: dict[str, str], args: list[str], message: str) -> None:
    r = CliRunner().invoke(main, ["replay", files["diamond"], *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_missing_file_is_one_line_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["replay", str(tmp_path / "nope.json"), "--step", "1"])
    assert r.exit_code == 2 and "nope.json" in r.output and "Traceback" not in r.output  # usage: exit 2
    bad = tmp_path / "bad.json"
    bad.write_text("not json at all")
    r = CliRunner().invoke(main, ["replay", str(bad), "--step", "1"])
    assert r.exit_code == 1 and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_bare_step_without_terminal_prints_state(files: dict[str, str]) -> None:
    r = invoke(files["diamond"], "--step")
    assert r.exit_code == 0 and r.stdout.startswith("step 56 of 56")
    # and says so on stderr (issue 35 item 8): a pipe's reader sees one state, not the stepper
    assert r.stderr == "gradviz: the stepper needs a terminal (stdin and stdout): printing the last step (56) instead\n"
