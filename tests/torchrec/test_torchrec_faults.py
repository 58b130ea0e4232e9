"""Faults while recording real torch (issue 29 must-show 1; issue 33 G2, G3, must-show 4): a
segfault, os._exit or SIGKILL during `gradviz run --engine torch` leaves a readable trace with
every completed pass and every step up to the crash; an output that cannot be written is refused
before the script's work starts."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults import ENV, crash_script, load_quietly, write_script

import gradviz
from gradviz.trace import events as ev
from gradviz.trace.recorder import active

ROOT = Path(__file__).resolve().parents[2]
CRASH_SCRIPT = crash_script("torch")


def _run(trace: Path, script: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gradviz", "run", "--engine", "torch", "-o", str(trace), str(script), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )


def _load(path: Path):
    return load_quietly(path)[0]


@pytest.mark.parametrize("before", [30, 300, pytest.param(3000, marks=pytest.mark.slow)])
@pytest.mark.parametrize(("crash", "code"), [("segv", -signal.SIGSEGV), ("exit", 3), ("kill", -signal.SIGKILL)])
def test_a_hard_crash_keeps_every_completed_pass_and_the_steps_before_it(tmp_path, crash, code, before):
    n = 25
    trace = tmp_path / "t.json"
    p = _run(trace, write_script(tmp_path, CRASH_SCRIPT), str(n), str(before), crash)
    if crash == "kill":
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "crash now"
        p.send_signal(signal.SIGKILL)
    p.wait(timeout=300)
    assert p.returncode == code, p.stderr.read()[-2000:]  # type: ignore[union-attr]
    t = _load(trace)
    assert t.truncated
    ends = [e for e in t.events if isinstance(e, ev.TaskEnd)]
    assert len(ends) == before and all(e.status == "ok" for e in ends)
    last = [e for e in t.events if isinstance(e, ev.TaskBegin)][-1].task
    ended = [t.nodes[e.node].name for e in t.events if isinstance(e, ev.NodeEnd) and e.task == last]
    assert ended == ["SumBackward0"] + ["MulBackward0"] * n
    began = [t.nodes[e.node].name for e in t.events if isinstance(e, ev.NodeBegin) and e.task == last]
    assert began[-1] == "CrashBackward"  # the step that crashed, written before its user code ran


def test_sigkill_while_idle_loses_at_most_the_last_50_ms(tmp_path):
    """Passes, then the program sleeps: whatever was recorded is in the file within ~50 ms."""
    script = write_script(tmp_path, """
        import time, torch
        w = torch.randn(3, requires_grad=True)
        for _ in range(40):
            (w * 2).sum().backward()
        print("idle", flush=True)
        time.sleep(60)
    """)
    trace = tmp_path / "t.json"
    p = _run(trace, script)
    assert p.stdout is not None and p.stdout.readline().strip() == "idle"
    time.sleep(0.2)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    t = _load(trace)
    assert sum(isinstance(e, ev.TaskEnd) for e in t.events) == 40


def test_an_output_that_cannot_be_written_is_refused_before_the_script_runs(tmp_path):
    """-o /dev/full: one line, non-zero exit, and the script's work never started (G3)."""
    marker = tmp_path / "ran"
    script = write_script(tmp_path, f"""
        import pathlib, torch
        pathlib.Path({str(marker)!r}).write_text("ran")
        w = torch.randn(3, requires_grad=True)
        (w * 2).sum().backward()
    """)
    p = _run(Path("/dev/full"), script)
    _, err = p.communicate(timeout=120)
    assert p.returncode != 0
    assert not marker.exists()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "/dev/full" in lines[0] and "No space left" in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("engine", ["torch", "gradviz"])
def test_library_start_raises_oserror_at_once(engine):
    rec = gradviz.trace("/dev/full", engine=engine)
    with pytest.raises(OSError):
        rec.start()
    assert active() is None  # nothing left half-started: another recording can begin
    with gradviz.record(engine=engine):
        pass
