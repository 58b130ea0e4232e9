"""`gradviz run`: the script runs as python would run it, recorded, and its exit status is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradviz.cli import main
from gradviz.trace import TraceWarning, load
from gradviz.trace import events as ev
from gradviz.trace.check import invariants

BACKWARD = """
import sys
import gradviz as torch
a = torch.tensor([1.0, 2.0], requires_grad=True)
(a * a + a).sum().backward()
"""


def script(tmp_path: Path, body: str, name: str = "prog.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def gradviz_run(*args: str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradviz", "run", *args], cwd=cwd, capture_output=True, text=True, timeout=60, **kw
    )


def test_records_the_script_with_its_argv_path_and_main(tmp_path):
    s = script(tmp_path, BACKWARD + "print(__name__, sys.argv[1:], sys.path[0])\n")
    r = CliRunner().invoke(main, ["run", "-o", str(tmp_path / "out.json"), str(s), "--flag", "-x", "pos"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"__main__ ['--flag', '-x', 'pos'] {tmp_path}"
    t = load(tmp_path / "out.json")
    assert invariants(t) == []
    assert t.status == "ok"
    assert t.header.argv == (str(s), "--flag", "-x", "pos")
    assert t.execution_order() == ["SumBackward0", "AddBackward0", "MulBackward0", "AccumulateGrad"]
    assert "events recorded to" in r.stderr  # the one closing line; no progress when not a terminal
    assert len(r.stderr.strip().splitlines()) == 1


def test_everything_after_the_script_is_the_scripts(tmp_path):
    s = script(tmp_path, "import sys\nprint(sys.argv[1:])\n")
    out = tmp_path / "mine.json"
    r = CliRunner().invoke(main, ["run", "-o", str(out), str(s), "0", "-o", "model.json", "--values", "--", "x"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "['0', '-o', 'model.json', '--values', '--', 'x']"
    assert load(out).header.values is False and not (tmp_path / "model.json").exists()
    r = CliRunner().invoke(main, ["run", str(s), "--help"])  # the script's --help, not gradviz's
    assert r.exit_code == 0 and r.stdout.strip() == "['--help']"
    r = CliRunner().invoke(main, ["run", "-o"])
    assert r.exit_code == 2 and "requires an argument" in r.stderr


def test_run_creates_the_outputs_missing_folders(tmp_path):
    s = script(tmp_path, BACKWARD)
    out = tmp_path / "new" / "dir" / "t.json"
    r = CliRunner().invoke(main, ["run", "-o", str(out), str(s)])
    assert r.exit_code == 0, r.output
    assert load(out).status == "ok"


def test_default_output_is_the_script_stem_in_the_current_directory(tmp_path):
    (tmp_path / "src").mkdir()
    s = script(tmp_path / "src", BACKWARD, "model.py")
    work = tmp_path / "work"
    work.mkdir()
    r = gradviz_run(str(s), cwd=work)
    assert r.returncode == 0, r.stderr
    assert (work / "model.trace.json").exists()
    assert load(work / "model.trace.json").status == "ok"


def test_a_raising_script_exits_1_with_its_traceback_and_a_complete_trace(tmp_path):
    s = script(tmp_path, BACKWARD + "def f():\n    raise ValueError('bad value')\nf()\n")
    r = gradviz_run("-o", "t.json", str(s), cwd=tmp_path)
    assert r.returncode == 1
    err = r.stderr
    assert err.startswith("Traceback (most recent call last):\n")
    assert f'File "{s}", line' in err and "ValueError: bad value" in err
    assert "runpy" not in err and "gradviz" not in err.split("ValueError: bad value")[0]  # only the script's frames
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceWarning)  # complete: no cut-short warning
        t = load(tmp_path / "t.json")
    assert t.status == "error" and t.end.error == "ValueError: bad value"
    assert t.errors[-1].type == "ValueError" and t.errors[-1].task is None
    assert len(t.tasks) == 1 and invariants(t) == []


@pytest.mark.parametrize(
    "body, code, stderr",
    [
        ("import sys; sys.exit(3)", 3, ""),
        ("import sys; sys.exit(0)", 0, ""),
        ("import sys; sys.exit()", 0, ""),
        ("import sys; sys.exit('fatal: no data')", 1, "fatal: no data"),
        ("raise KeyboardInterrupt", 130, "KeyboardInterrupt"),
    ],
)
def test_exit_codes_follow_the_script(tmp_path, body, code, stderr):
    s = script(tmp_path, body)
    r = CliRunner().invoke(main, ["run", "-o", str(tmp_path / "t.json"), str(s)])
    assert r.exit_code == code
    assert stderr in r.stderr
    t = load(tmp_path / "t.json")
    assert t.status == {0: "ok", 130: "interrupted"}.get(code, "error")


def test_missing_script_is_a_one_line_error(tmp_path):
    r = CliRunner().invoke(main, ["run", str(tmp_path / "nope.py")])
    assert r.exit_code != 0
    assert r.stderr.strip() == f"Error: {tmp_path / 'nope.py'}: no such file"


def test_help_documents_options():
    r = CliRunner().invoke(main, ["run", "--help"])
    assert r.exit_code == 0
    assert "--output" in r.stdout and "--values" in r.stdout and "(SCRIPT | -m MODULE) [ARGS]..." in r.stdout


def test_values_flag(tmp_path):
    s = script(tmp_path, BACKWARD)
    r = CliRunner().invoke(main, ["run", "--values", "-o", str(tmp_path / "t.json"), str(s)])
    assert r.exit_code == 0
    t = load(tmp_path / "t.json")
    assert t.header.values and t.of_kind(ev.AccumulateGradUpdate)[0].values == [3.0, 5.0]


LOOP = """
import sys, time
import gradviz as torch
a = torch.tensor([1.0, 2.0], requires_grad=True)
n = int(sys.argv[1])
for i in range(n):
    (a * a).sum().backward()
print("done", n, flush=True)
if sys.argv[2] == "busy":
    # Busy for a bounded time (the signals land in it), then idle: a signal the recorder defers
    # again and again (issue 32's closing note) once let the trace grow to millions of events,
    # and the test to minutes; now the re-sent signal finds the idle script, and the trace stays small.
    end = time.monotonic() + 3
    while time.monotonic() < end:
        (a * a).sum().backward()
time.sleep(60)
"""


def _timing_dependent(test):
    """Signal tests race the child's own timing: on a loaded 2-core machine a signal can land in
    a window the test cannot see (before a handler is back, after the script ended). Each attempt
    runs in a fresh folder; the test fails only if three attempts in a row fail, which a real
    regression does every time."""
    import functools

    @functools.wraps(test)
    def run(tmp_path, *args, **kwargs):
        for attempt in range(3):
            where = tmp_path / f"attempt{attempt}"
            where.mkdir()
            try:
                return test(where, *args, **kwargs)
            except AssertionError:
                if attempt == 2:
                    raise

    return run


def _start(tmp_path: Path, mode: str, n: int = 20) -> subprocess.Popen:
    s = script(tmp_path, LOOP)
    return subprocess.Popen(
        [sys.executable, "-m", "gradviz", "run", "-o", "t.json", str(s), str(n), mode],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # stacks on SIGABRT: see the signal test
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """In the child before exec: SIGINT as a terminal's program gets it. A test run started as a
    background job of a shell (a CI step, `pytest &`) has SIGINT ignored, children inherit that,
    and Python then leaves it ignored, as it should: Ctrl-C does not reach a background job. The
    signal test would then wait on a program that rightly ignores every SIGINT it sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_done(p: subprocess.Popen) -> None:
    line = p.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("done"), (line, p.stderr.read() if p.poll() is not None else "")  # type: ignore[union-attr]


def _load_cut(path: Path):
    with pytest.warns(TraceWarning, match="cut short"):
        return load(path)


def test_sigkill_while_idle_loses_nothing_recorded_before(tmp_path):
    p = _start(tmp_path, "idle", n=20)
    try:
        _wait_done(p)
        time.sleep(0.5)  # > the recorder's flush interval
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        p.kill()
    t = _load_cut(tmp_path / "t.json")
    assert t.truncated and invariants(t) == []
    assert len(t.tasks) == 20 and all(task.status == "ok" for task in t.tasks.values())


@_timing_dependent
def test_sigkill_while_busy_leaves_a_sound_prefix(tmp_path):
    p = _start(tmp_path, "busy", n=20)
    try:
        _wait_done(p)
        time.sleep(0.3)
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        p.kill()
    t = _load_cut(tmp_path / "t.json")
    assert invariants(t) == []
    finished = [task for task in t.tasks.values() if task.status == "ok"]
    assert len(finished) >= 20  # everything before "done" was printed, and more


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, 130)] * 3)
@_timing_dependent
def test_sigterm_and_ctrl_c_finish_the_trace_as_interrupted(tmp_path, sig, code):
    """Signals land anywhere in a busy backward loop, recorder included: the trace stays whole."""
    p = _start(tmp_path, "busy", n=5)
    try:
        _wait_done(p)
        time.sleep(0.05)
        # Sent again if need be, as a user presses Ctrl-C again, but only after 5 s: the first
        # signal's shutdown writes the rest of the trace, which takes more than a moment on a
        # loaded machine, and a second signal then would find Python's default handler back
        # and kill the process outright (-15, not 143), as it would a user's.
        for _ in range(6):
            p.send_signal(sig)
            try:
                got = p.wait(5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            # What it was doing: faulthandler (on in the child) prints every thread's stack on
            # SIGABRT, so that a rare hang reported by CI says where it was.
            p.send_signal(signal.SIGABRT)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
            p.kill()
            raise AssertionError("gradviz run did not stop:\n" + p.stderr.read()[-6000:])  # type: ignore[union-attr]
    finally:
        p.kill()
    assert got == code
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceWarning)
        t = load(tmp_path / "t.json")
    assert t.status == "interrupted" and invariants(t) == []


def test_python_dash_m_gradviz_run_works_and_no_progress_without_a_terminal(tmp_path):
    s = script(tmp_path, BACKWARD + "print('hello')\n")
    r = gradviz_run("-o", "t.json", str(s), cwd=tmp_path, env={**os.environ, "TERM": "xterm"})
    assert r.returncode == 0 and r.stdout == "hello\n"
    assert r.stderr.count("\n") == 1 and "recording" not in r.stderr


SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.py"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_every_sample_records_a_sound_trace(tmp_path, sample):
    out = tmp_path / "t.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = CliRunner().invoke(main, ["run", "-o", str(out), str(sample)])
    # The collector may finish another test's leftovers (a pipe, a file) while this one runs:
    # their ResourceWarnings say nothing about the sample.
    caught = [w for w in caught if not issubclass(w.category, ResourceWarning)]
    # Only the anomaly sample warns, on purpose (anomaly mode names the node, numpy the NaN it makes).
    if sample.stem == "anomaly":
        assert any("Error detected in SqrtBackward0" in str(w.message) for w in caught)
    elif sample.stem == "why_nan":  # numpy's own warning for the log(0) the sample is about
        assert all("encountered in" in str(w.message) for w in caught)
    else:
        assert [str(w.message) for w in caught] == []
    t = load(out)
    assert invariants(t) == []
    assert t.status == ("ok" if r.exit_code == 0 else "error")
    assert len(t.tasks) >= 1


@_timing_dependent
def test_ctrl_c_traceback_ends_in_the_users_code(tmp_path):
    """However deep in the engine or the recorder Ctrl-C lands, the traceback shows the script's frames only."""
    for _ in range(3):
        p = _start(tmp_path, "busy", n=5)
        try:
            _wait_done(p)
            time.sleep(0.05)
            for _ in range(6):  # resent only after 5 s: see the signal test above
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        finally:
            p.kill()
        err = p.stderr.read()  # type: ignore[union-attr]
        files = [ln.split('"')[1] for ln in err.splitlines() if ln.startswith('  File "')]
        assert files and all(f == str(tmp_path / "prog.py") for f in files), err


def test_anomaly_forward_traceback_shows_the_scripts_frames_only(tmp_path):
    sample = Path(__file__).resolve().parents[2] / "samples" / "anomaly.py"
    r = gradviz_run("-o", "t.json", str(sample), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    section = r.stderr.split("Traceback of forward call that caused the error:", 1)[1]
    files = [ln.split('"')[1] for ln in section.splitlines() if ln.startswith('  File "')]
    assert files == [str(sample)], r.stderr
