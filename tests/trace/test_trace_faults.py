"""Faults while recording (issue 18, items 1 and 3): a full disk, a segfault, os._exit, SIGKILL.

Each run is a real ``gradviz run`` (or ``gradviz.trace()``) in a subprocess. What must hold: the
program runs on with its own exit code; recording stops with one warning line; what was written
loads, and every command works on it; a hard crash keeps every event up to the last completed
engine step.
"""

from __future__ import annotations

import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from faults import ENV, crash_script, load_quietly, write_script

from gradviz.cli import main
from gradviz.trace import events as ev

ROOT = Path(__file__).resolve().parents[2]
CRASH_SCRIPT = crash_script("gradviz")

LONG_SCRIPT = """
import sys
import gradviz as torch

w = [torch.randn(8, 8, requires_grad=True) for _ in range(3)]
x = torch.randn(4, 8)
for step in range(int(sys.argv[1])):
    h = x
    for p in w:
        h = (h @ p).tanh()
    h.sum().backward()
    if step == 5:
        print("running", flush=True)
print("done")
sys.exit(7)
"""


def _gradviz_run(trace: Path, script: Path, *args: str, limit_fsize: int | None = None, timeout: int = 120):
    def cap() -> None:
        if limit_fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_fsize, limit_fsize))

    return subprocess.run(
        [sys.executable, "-m", "gradviz", "run", "-o", str(trace), str(script), *args],
        capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT, preexec_fn=cap,
    )


def every_command_works(path: Path, tmp: Path) -> None:
    """info, render, render --step, replay, replay --step, export: exit 0, no traceback."""
    n = len(load_quietly(path)[0].events)
    step = str(max(1, n // 2))
    for args in (["info"], ["render", "--format", "dot", "-o", str(tmp / "g.dot")],
                 ["render", "--format", "dot", "-o", str(tmp / "s.dot"), "--step", step, "--max-nodes", "60"],
                 ["replay", "--width", "120"], ["replay", "--step", step, "--width", "120"],
                 ["export", "-o", str(tmp / "p.json")]):
        r = CliRunner().invoke(main, [args[0], str(path), *args[1:]])
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exc_info)
        assert r.exit_code == 0, (args, r.output)


# --- a full disk (item 1) -----------------------------------------------------------------------


def _check_stopped_cleanly(r, trace: Path, reason: str, code: int = 7) -> None:
    assert r.returncode == code, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    warned = [ln for ln in lines if "recording stopped" in ln]
    assert len(warned) == 1 and str(trace) in warned[0] and reason in warned[0], r.stderr[-3000:]
    assert len(lines) <= 2, r.stderr[-3000:]  # the warning, and gradviz run's own note at most
    assert r.stdout.strip().endswith("done")


def test_file_size_limit_stops_recording_with_one_line_and_the_program_keeps_its_exit_code(tmp_path):
    """`ulimit -f 64` (EFBIG) mid-recording: the OSError used to escape from backward() and
    end the program (exit 1, 27 tracebacks)."""
    trace = tmp_path / "t.json"
    r = _gradviz_run(trace, write_script(tmp_path, LONG_SCRIPT), "400", limit_fsize=64 * 1024)
    _check_stopped_cleanly(r, trace, "File too large")
    assert trace.stat().st_size <= 64 * 1024
    t, warned = load_quietly(trace)
    assert t.truncated and warned and len(t.events) > 100
    assert sum(isinstance(e, ev.TaskEnd) for e in t.events) > 5
    every_command_works(trace, tmp_path)


def test_library_recording_survives_a_full_file_size_limit(tmp_path):
    """`with gradviz.trace(path)`: backward() does not raise; the with block ends normally."""
    trace = tmp_path / "lib.json"
    prog = write_script(tmp_path, f"""
        import sys
        import gradviz as torch
        w = torch.randn(8, 8, requires_grad=True)
        with torch.trace({str(trace)!r}):
            for _ in range(400):
                (w @ w).tanh().sum().backward()
        print("done")
        sys.exit(7)
    """)
    cap = 32 * 1024
    r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=120, env=ENV,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap)))
    _check_stopped_cleanly(r, trace, "File too large")
    assert load_quietly(trace)[0].truncated


def test_a_full_device_is_refused_before_the_script_starts(tmp_path):
    """ENOSPC from the first write (-o /dev/full): refused in one line before the script runs
    (issue 33 G3), rather than running it all and losing the recording."""
    r = _gradviz_run(Path("/dev/full"), write_script(tmp_path, LONG_SCRIPT), "20")
    assert r.returncode == 1, (r.returncode, r.stderr[-3000:])
    assert r.stdout == ""  # the script never ran
    assert r.stderr.strip().splitlines() == ["Error: cannot write the trace to /dev/full: No space left on device"]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB tmpfs: a disk that fills mid-recording (ENOSPC). Needs root (mount)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip()}); EFBIG covers the path")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_a_disk_that_fills_mid_recording_keeps_what_was_written(tmp_path, small_tmpfs):
    trace = small_tmpfs / "t.json"
    r = _gradviz_run(trace, write_script(tmp_path, LONG_SCRIPT), "1500")
    _check_stopped_cleanly(r, trace, "No space left on device")
    t, _ = load_quietly(trace)
    assert t.truncated and len(t.events) > 100
    every_command_works(trace, tmp_path)


# --- hard crashes (item 3) ----------------------------------------------------------------------


@pytest.mark.parametrize(("crash", "code"), [("segv", -signal.SIGSEGV), ("exit", 3)])
def test_a_hard_crash_inside_a_backward_keeps_every_completed_step(tmp_path, crash, code):
    """30 backward passes, then one whose custom Function crashes after N=25 nodes ran: the
    trace holds the 30 tasks and every one of those nodes (it used to hold only the header)."""
    n, before = 25, 30
    trace = tmp_path / "t.json"
    r = _gradviz_run(trace, write_script(tmp_path, CRASH_SCRIPT), str(n), str(before), crash)
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    t, warned = load_quietly(trace)
    assert t.truncated
    assert sum(isinstance(e, ev.TaskEnd) for e in t.events) == before
    last = [e for e in t.events if isinstance(e, ev.TaskBegin)][-1].task
    ended = [t.nodes[e.node].name for e in t.events if isinstance(e, ev.NodeEnd) and e.task == last]
    assert ended == ["SumBackward0"] + ["MulBackward0"] * n
    began = [t.nodes[e.node].name for e in t.events if isinstance(e, ev.NodeBegin) and e.task == last]
    assert began[-1] == "CrashBackward"  # the step that crashed, announced before it ran
    if crash == "segv":  # the faulthandler marker: the loader says how the program ended
        assert "the program crashed: Segmentation fault" in warned[0], warned
    every_command_works(trace, tmp_path)


@pytest.mark.slow
def test_twenty_sigkills_at_random_moments_leave_traces_every_command_reads(tmp_path):
    script = write_script(tmp_path, LONG_SCRIPT)
    rng = random.Random(18)
    for i in range(20):
        trace = tmp_path / f"k{i}.json"
        p = subprocess.Popen([sys.executable, "-m", "gradviz", "run", "-o", str(trace), str(script), "100000"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
        assert p.stdout is not None
        p.stdout.readline()  # "running": the recording is under way
        time.sleep(rng.uniform(0.0, 0.6))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        t, warned = load_quietly(trace)
        assert t.truncated and warned and any(isinstance(e, ev.TaskEnd) for e in t.events), i
        if i % 4 == 0:  # every command on a fifth of them (each trace is a few thousand events)
            every_command_works(trace, tmp_path)
