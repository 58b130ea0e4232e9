"""The interactive stepper driven in tmux as a person would: keys in, screen text out."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from trace_builders import diamond, failing

from gradviz.trace.file import load, save

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed: cannot drive a terminal"),
]

REPO = Path(__file__).resolve().parents[2]


class Pane:
    def __init__(self, name: str) -> None:
        self.name = name

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = 10.0) -> str:
        pred = (lambda s: what in s) if isinstance(what, str) else what
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if pred(text):
                # the terminal may be mid-redraw (a new header over an old body): wait for two
                # equal captures in a row, so the assertions that follow see one whole frame
                time.sleep(0.05)
                again = self.screen()
                if again == text:
                    return text
                continue
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what!r}; screen was:\n{text}")


@contextlib.contextmanager
def terminal(cols: int, rows: int) -> Iterator[Pane]:
    """A tmux pane of cols x rows running a plain bash, with PAGER and LESS unset as on a stock system."""
    name = f"gradviz-test-{uuid.uuid4().hex[:8]}"
    for _attempt in range(3):  # a tmux server that another test is just shutting down can refuse once
        r = subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", str(cols), "-y", str(rows), "bash --norc --noprofile"],
            cwd=REPO, capture_output=True, text=True,
        )
        if r.returncode == 0:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"tmux would not start: {r.stderr}")
    p = Pane(name)
    p.send("export PS1='$ ' TERM=xterm-256color; unset PAGER LESS MANPAGER GRADVIZ_PLAIN", "Enter")
    try:
        yield p
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    with terminal(160, 50) as p:
        yield p


def start(pane: Pane, trace_path: Path) -> None:
    cmd = f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m gradviz replay " \
          f"{shlex.quote(str(trace_path))} --step"
    pane.send(cmd, "Enter")
    pane.wait_for("q quit")


def test_forward_backward_why_and_quit(pane: Pane, tmp_path: Path) -> None:
    path = tmp_path / "diamond.json"
    save(diamond().events, path)
    start(pane, path)
    pane.wait_for("step 17/56")  # it opens where the backward pass begins
    pane.send("Home")
    pane.wait_for("step 0/56")
    pane.send("Right")
    pane.wait_for("step 1/56")
    pane.send("Right", "Right")
    pane.wait_for("step 3/56")
    pane.send("Left")
    pane.wait_for("step 2/56")
    pane.send("f")
    pane.wait_for("step 12/56")
    pane.send("b")
    pane.wait_for("step 2/56")
    # Go to the step where AccumulateGrad parks with one of its two gradients.
    pane.send("g")
    pane.type("42")
    pane.send("Enter")
    screen = pane.wait_for("step 42/56")
    assert "AccumulateGrad a (node 1) parked in not_ready of task 1" in screen
    assert "1. MulBackward0 (seq 0) task 1, priority (0, 0)" in screen  # the ready queue
    assert "slot 0: set from MulBackward0 (node 3)" in screen  # the not_ready buffer
    # Find it by name and ask why it is not running.
    pane.send("/")
    pane.type("AccumulateGrad")
    pane.send("Enter")
    pane.wait_for("selected AccumulateGrad a (node 1), parked")
    pane.send("w")
    screen = pane.wait_for("why: AccumulateGrad a (node 1)")
    assert "1 dependency still to arrive" in screen
    assert "waiting for MulBackward0 (node 2) -> slot 0: queued" in screen
    # Next node execution, then back.
    pane.send(">")
    screen = pane.wait_for("step 44/56")
    assert "MainThread runs MulBackward0 (node 2)" in screen
    pane.send("<")
    pane.wait_for("step 37/56")
    pane.send("?")
    pane.wait_for("next / previous node execution")
    pane.send("q")
    # Back at the shell, with the terminal in its normal (canonical, echoing) mode.
    pane.wait_for(lambda s: "q quit" not in s and s.rstrip().endswith("$"))
    # The marker is computed by the shell, so the typed command line does not match it.
    pane.send("stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' '; echo MARK-$((40+2))",
              "Enter")
    screen = pane.wait_for("MARK-42")
    assert "icanon echo" in screen and "-icanon" not in screen and "-echo " not in screen


def test_jump_to_error_in_the_error_sample(pane: Pane, tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    subprocess.run([sys.executable, "-m", "gradviz", "run", "-o", str(path), str(REPO / "samples" / "error.py")],
                   cwd=tmp_path, capture_output=True, timeout=120)
    trace = load(path)
    total = len(trace)
    step, err = next((i, e) for i, e in enumerate(trace.events, 1) if e.kind == "error")
    start(pane, path)
    first = next(i for i, e in enumerate(trace.events, 1) if e.kind == "task_begin")
    pane.wait_for(f"step {first}/{total}")
    pane.send("e")
    screen = pane.wait_for(f"step {step}/{total}")
    assert f"ERROR in {trace.nodes[err.node].name} (node {err.node}) (task {err.task}): {err.type}" in screen
    pane.send("Right")
    screen = pane.wait_for(f"step {step + 1}/{total}")
    assert f"task {err.task} ends: error" in screen
    pane.send("E")  # and back to it
    pane.wait_for(f"step {step}/{total}")
    pane.send("C-c")  # interrupting also leaves cleanly
    pane.wait_for(lambda s: "q quit" not in s and s.rstrip().endswith("$"))


def test_jump_to_error_hand_built(pane: Pane, tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    save(failing().events, path)
    start(pane, path)
    pane.send("e")
    screen = pane.wait_for("step 23/25")
    assert "ERROR in LogBackward0 (node 2) (task 1): RuntimeError: LogBackward0 failed" in screen
    pane.send("q")
    pane.wait_for(lambda s: "q quit" not in s and s.rstrip().endswith("$"))


def test_not_a_terminal_falls_back_to_text(tmp_path: Path) -> None:
    path = tmp_path / "diamond.json"
    save(diamond().events, path)
    out = subprocess.run([sys.executable, "-m", "gradviz", "replay", str(path), "--step"], cwd=REPO,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("step 56 of 56")


def _record(script: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{Path(script).stem}.json"
    subprocess.run([sys.executable, "-m", "gradviz", "run", "-o", str(path), str(REPO / "samples" / script)],
                   cwd=tmp_path, capture_output=True, timeout=120, check=True)
    return path


def test_stepper_at_80x24_shows_every_thread_and_the_whole_help(tmp_path: Path) -> None:
    path = _record("multi_device.py", tmp_path)
    trace = load(path)
    names = [t.name for t in trace.threads.values()]
    assert len(names) >= 3
    # The step where the device thread runs its first node: every thread has something to say.
    started = [i for i, e in enumerate(trace.events, 1) if e.kind == "thread_start"]
    step = next(i for i, e in enumerate(trace.events, 1) if e.kind == "node_begin" and i > max(started))
    with terminal(80, 24) as p:
        start(p, path)
        p.send("g")
        p.type(str(step))
        p.send("Enter")
        screen = p.wait_for(f"step {step}/")
        lines = screen.splitlines()
        top = next(i for i, ln in enumerate(lines) if "─ threads ─" in ln)
        for name in names:
            line = next((ln for ln in lines[top:] if f"│ {name} " in ln), None)
            assert line is not None, (name, screen)
            doing = line.split(name, 1)[1].strip(" │")
            assert doing and doing.split()[0] in ("running", "waiting", "idle", "ended", "passing"), (name, line)
        p.send("?")
        screen = p.wait_for("─ help ─")
        from gradviz.replay.stepper import HELP

        for _keys, what in HELP:
            assert what in screen, (what, screen)
        p.send("q")
        p.wait_for(lambda s: "q quit" not in s and s.rstrip().endswith("$"))


def test_stepper_tells_when_a_move_is_clamped(pane: Pane, tmp_path: Path) -> None:
    path = tmp_path / "diamond.json"
    save(diamond().events, path)
    start(pane, path)
    pane.send("g")
    pane.type("9999")
    pane.send("Enter")
    pane.wait_for("step 9,999 is past the end: at the last step, 56")
    pane.send("n")
    pane.wait_for("already at the last step (56 events)")
    pane.send("q")


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_timeline_in_a_terminal_has_colours_not_escape_codes(tmp_path: Path, size: tuple[int, int]) -> None:
    """PAGER and LESS unset (most Debian, Ubuntu, macOS set-ups): no raw ESC[1m, no ':' prompt when it fits."""
    path = tmp_path / "diamond.json"
    save(diamond().events, path)
    cmd = f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m gradviz replay {shlex.quote(str(path))}"
    with terminal(*size) as p:
        p.send(cmd + "; echo DONE-$((1+1))", "Enter")
        if size == (80, 24):  # longer than the screen: less -R pages it, in colour
            screen = p.wait_for(lambda s: "Threads" in s or "Timeline" in s or "DONE-2" in s)
            assert "ESC[" not in screen and "\x1b" not in screen, screen
            p.send("q")
        screen = p.wait_for("DONE-2")
        assert "ESC[" not in screen, screen
        p.send("clear; " + cmd + " --no-pager | head -3; echo DONE-$((2+1))", "Enter")
        p.wait_for("DONE-3")
