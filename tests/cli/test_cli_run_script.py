"""`gradviz run` as a library call (gradviz.run_script), -m MODULE, and what it refuses before the
script starts (issue 29 item 7, issue 33 G3/G16, issue 35 items 3, 4 and 7)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradviz
from gradviz.cli import main
from gradviz.script import ScriptError, run_script
from gradviz.trace import load

ROOT = Path(__file__).resolve().parents[2]

GRADVIZ_PROG = """
import sys
import gradviz as torch
a = torch.tensor([1.0, 2.0], requires_grad=True)
for _ in range({n}):
    (a * a).sum().backward()
print("argv", sys.argv[1:], "path0", sys.path[0], __name__)
sys.exit({code})
"""

TORCH_PROG = GRADVIZ_PROG.replace("import gradviz as torch", "import torch")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


def _gradviz(*args: str, cwd: Path, preexec=None, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gradviz", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=timeout, preexec_fn=preexec)


# --- the library call -------------------------------------------------------------------------


def test_run_script_is_the_library_call(tmp_path, capsys):
    s = _write(tmp_path / "prog.py", GRADVIZ_PROG.format(n=1, code=3))
    argv, path0 = list(sys.argv), sys.path[0]
    result = gradviz.run_script(s, ["--epochs", "2"], output=tmp_path / "t.json")
    assert (result.status, result.exit_code, result.engine) == ("error", 3, "gradviz")
    assert result.written == result.recorded == len(load(tmp_path / "t.json"))
    assert capsys.readouterr().out.strip() == f"argv ['--epochs', '2'] path0 {tmp_path} __main__"
    assert (sys.argv, sys.path[0]) == (argv, path0)  # the caller's, back


def test_run_script_refuses_before_running(tmp_path):
    with pytest.raises(ScriptError, match="no such file") as e:
        run_script(tmp_path / "nope.py")
    assert e.value.usage


# --- -m MODULE (issue 35 item 3) --------------------------------------------------------------


@pytest.mark.slow
def test_dash_m_runs_a_module_as_python_does(tmp_path):
    _write(tmp_path / "pkg" / "__init__.py", "")
    _write(tmp_path / "pkg" / "train.py", GRADVIZ_PROG.format(n=1, code=0))
    _write(tmp_path / "pkg" / "__main__.py", "import sys\nprint('main of pkg', sys.argv[1:])\n")
    r = _gradviz("run", "-m", "pkg.train", "-o", "x", "--flag", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # everything after MODULE is the module's, sys.path[0] the current folder, as `python -m`
    assert r.stdout.strip() == f"argv ['-o', 'x', '--flag'] path0 {tmp_path} __main__"
    assert "events recorded to pkg.train.trace.json" in r.stderr
    t = load(tmp_path / "pkg.train.trace.json")
    assert t.header.argv == (str(tmp_path / "pkg" / "train.py"), "-o", "x", "--flag")
    r = _gradviz("run", "-o", "p.json", "-m", "pkg", "z", cwd=tmp_path)  # a package: its __main__
    assert r.returncode == 0 and r.stdout.strip() == "main of pkg ['z']", r.stderr
    r = _gradviz("run", "-m", "no_such_module", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("Error: no_such_module: no module named")


# --- refused in one line before the script runs (issue 35 item 4, issue 33 G3) ------------------


def test_a_trace_passed_as_the_script_is_refused(tmp_path):
    s = _write(tmp_path / "prog.py", GRADVIZ_PROG.format(n=1, code=0))
    assert CliRunner().invoke(main, ["run", "-o", "x.trace.json", str(s)]).exit_code == 0
    r = CliRunner().invoke(main, ["run", "x.trace.json"])
    assert r.exit_code == 2
    assert r.stderr == ("Error: x.trace.json is a gradviz trace, not a script: look at it with "
                        "'gradviz info x.trace.json' (or replay, render)\n")


def test_engine_torch_on_a_script_that_never_imports_torch(tmp_path):
    s = _write(tmp_path / "prog.py", GRADVIZ_PROG.format(n=1, code=0))
    old = tmp_path / "prog.trace.json"
    old.write_text("an earlier trace")
    r = CliRunner().invoke(main, ["run", "--engine", "torch", str(s)])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"Error: {s} never imports torch: --engine torch would record nothing")
    assert r.stdout == "" and old.read_text() == "an earlier trace"  # not run, nothing overwritten


@pytest.mark.parametrize("prog", [GRADVIZ_PROG, TORCH_PROG], ids=["gradviz", "torch"])
def test_an_output_that_cannot_be_written_is_refused_before_the_script_starts(tmp_path, prog):
    s = _write(tmp_path / "prog.py", prog.format(n=1, code=3))
    r = _gradviz("run", "-o", "/dev/full", str(s), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout == ""  # the script never ran
    assert r.stderr == "Error: cannot write the trace to /dev/full: No space left on device\n"


def _fsize_limit() -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))


@pytest.mark.slow
@pytest.mark.parametrize("prog", [GRADVIZ_PROG, TORCH_PROG], ids=["gradviz", "torch"])
def test_a_full_disk_keeps_the_exit_code_and_says_what_the_file_holds(tmp_path, prog):
    s = _write(tmp_path / "prog.py", prog.format(n=1500, code=3))
    r = _gradviz("run", "-o", "t.json", str(s), cwd=tmp_path, preexec=_fsize_limit)
    assert r.returncode == 3, r.stderr  # the script's, not 1
    assert r.stdout.startswith("argv")
    last = r.stderr.strip().splitlines()[-1]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        held = len(load(tmp_path / "t.json"))
    assert last.startswith(f"gradviz: t.json holds {held:,} of the ")
    assert "writing stopped: File too large" in last
    assert "standard output" not in r.stderr and "Traceback" not in r.stderr


# --- usage (issue 35 item 7) ------------------------------------------------------------------


def test_gradviz_alone_prints_its_help_without_error(tmp_path):
    r = _gradviz(cwd=tmp_path)
    assert r.returncode == 0
    assert r.stdout.startswith("Usage: ") and "Commands:" in r.stdout
    assert "Error" not in r.stdout + r.stderr


@pytest.mark.parametrize("args", [
    ["info", "nope.json"], ["replay", "nope.json"], ["replay", "nope.json", "--step", "3"], ["render", "nope.json"],
    ["export", "nope.json"], ["diff", "nope.json", "nope.json"], ["run", "nope.py"], ["run"], ["info"],
    ["nosuchcommand"],
])
def test_missing_files_and_usage_mistakes_exit_2(args):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, (args, r.output)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
