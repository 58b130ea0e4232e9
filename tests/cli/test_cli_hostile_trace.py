"""Crafted traces against every reading command (issue 33, G8-G11): recorded text is never
markup and never unprintable, numbers a float cannot hold and non-traces are refused in one line."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trace_builders as tb
from click.testing import CliRunner
from faults import capped_memory, count_reads
from rich.console import Console

from gradviz.cli import main
from gradviz.replay.stepper import Stepper, layout
from gradviz.trace import events as ev
from gradviz.trace import load
from gradviz.trace.file import save

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default outputs (x.dot, x.perfetto.json) land here


def _failing_with(message: str, thread: str = "MainThread") -> list[ev.Event]:
    """tb.failing()'s events with the error's message and the thread's name replaced."""
    out = []
    for e in tb.failing().events:
        if type(e) is ev.Error:
            e = dataclasses.replace(e, message=message)
        elif type(e) is ev.TaskEnd and e.error:
            e = dataclasses.replace(e, error=f"RuntimeError: {message}")
        elif type(e) is ev.ThreadStart:
            e = dataclasses.replace(e, name=thread)
        out.append(e)
    return out


def _commands(path: str) -> list[list[str]]:
    return [
        ["info", path], ["info", path, "--json"], ["replay", path], ["replay", path, "--step", "10"],
        ["replay", path, "--step", "23"], ["render", path, "--format", "dot", "-o", "x.dot"],
        ["export", path, "-o", "x.perfetto.json"], ["diff", path, path],
    ]


def _cli(args: list[str]) -> subprocess.CompletedProcess:
    """The real process: its own stdout encoding (strict UTF-8), as a user's terminal has."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gradviz", *args], capture_output=True, text=True,
                          errors="backslashreplace", env=env, timeout=120)


# --- G8: recorded text is never markup ---------------------------------------------------------


def test_brackets_in_recorded_text_print_as_written(tmp_path):
    path = str(tmp_path / "t.json")
    save(_failing_with("cannot read [/data/train.csv]", thread="loader[/]"), path)
    for args in _commands(path):
        r = CliRunner().invoke(main, args)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.output)
        assert r.exit_code == 0, (args, r.output)
        if args[0] in ("info", "replay") and "--json" not in args:
            assert "loader[/]" in r.stdout, args
    r = CliRunner().invoke(main, ["info", path])
    assert "cannot read [/data/train.csv]" in r.stdout
    assert "[bold]" not in r.stdout and "[red]" not in r.stdout


def test_brackets_in_the_stepper_panels(tmp_path):
    events = _failing_with("cannot read [/data/train.csv]", thread="loader[/]")
    path = tmp_path / "t.json"
    save(events, path)
    s = Stepper(load(path))
    s.key("e")  # the error's step; then the why panel, whose title names the node
    s.key("w")
    c = Console(width=120, height=40, color_system=None, record=True, markup=False, file=open(os.devnull, "w"))
    c.print(layout(s), height=40)
    assert "loader[/]" in c.export_text()


# --- G9: lone surrogates ----------------------------------------------------------------------


@pytest.mark.slow
def test_lone_surrogates_print_as_escapes_in_every_command(tmp_path):
    path = str(tmp_path / "t.json")
    save(_failing_with("cannot open \udcff.csv", thread="th\ud800"), path)
    for args in _commands(path):
        r = _cli(args)
        assert r.returncode == 0, (args, r.stderr[-2000:])
        assert "Traceback" not in r.stderr, args
        if args[0] in ("info", "replay") and "--json" not in args:
            assert "th\\ud800" in r.stdout, args
    assert load(path).threads[1].name == "th\\ud800"


def test_a_trace_path_that_is_not_utf8(tmp_path):
    raw = os.fsencode(str(tmp_path)) + b"/\xff.json"
    save(tb.diamond().events, raw.decode(sys.getfilesystemencoding(), "surrogateescape"))
    r = _cli(["info", os.fsdecode(raw)])
    assert r.returncode == 0, r.stderr
    assert "\\udcff.json" in r.stdout


# --- G10: numbers a float cannot hold -----------------------------------------------------------


def _huge_norm(where: str) -> list[ev.Event]:
    out = []
    for e in tb.diamond().events:
        if type(e) is ev.BufferAdd and e.stats is not None:
            e = dataclasses.replace(e, stats=dataclasses.replace(e.stats, **{where: 10**400}))
        out.append(e)
    return out


@pytest.mark.parametrize("where", ["norm", "min", "max"])
def test_a_statistic_too_large_for_a_float_is_one_line(tmp_path, where):
    path = str(tmp_path / "t.json")
    save(_huge_norm(where), path)
    for args in _commands(path):
        r = CliRunner().invoke(main, args)
        assert isinstance(r.exception, SystemExit), (args, r.exception)
        assert r.exit_code == 1, (args, r.output)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (args, r.stderr)
        assert f"'stats.{where}'" in lines[0] and "float" in lines[0]


def test_a_one_element_statistic_too_large(tmp_path):
    """Format 3 writes a one-element gradient's statistics as the bare number: an integer there."""
    path = tmp_path / "t.json"
    save(tb.diamond().events, path)
    text = path.read_text()
    assert "[1.0,1.0,1.0,0,0]" in text
    path.write_text(text.replace("[1.0,1.0,1.0,0,0]", "1" + "0" * 400, 1))
    for lazy in ("info", "replay"):
        r = CliRunner().invoke(main, [lazy, str(path)])
        assert r.exit_code == 1 and r.stderr.startswith("Error: "), r.output
        assert len(r.stderr.strip().splitlines()) == 1 and "float" in r.stderr


# --- G11: a file that is not a trace is refused from its first bytes -------------------------------


@pytest.mark.parametrize("command", [["info"], ["replay"], ["replay", "--step", "3"], ["export"],
                                     ["render", "--format", "dot"], ["diff", "X"]])
def test_dev_zero_is_refused_at_once(tmp_path, command):
    good = tmp_path / "good.json"
    save(tb.diamond().events, good)
    args = [*command[:1], "/dev/zero", *[str(good) if a == "X" else a for a in command[1:]]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "gradviz", *args], capture_output=True, text=True, env=env,
                       timeout=60, preexec_fn=capped_memory)
    assert r.returncode == 1, r.stderr[-1000:]
    assert r.stderr == "Error: /dev/zero: not a gradviz trace (it starts with byte 0x00, not a JSON object)\n"


@pytest.mark.parametrize("start", [b"\x7fELF", b"2026-12-07 INFO training started\n", b'{"weights": [0.0, '])
def test_a_large_file_that_is_not_a_trace_is_refused_before_it_is_read(tmp_path, start):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:  # 3 GB, sparse: reading it all would pass the 1 GB cap
        f.write(start)
        f.truncate(3 << 30)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "gradviz", "info", str(big)], capture_output=True, text=True,
                       env=env, timeout=60, preexec_fn=capped_memory)
    assert r.returncode == 1, r.stderr[-1000:]
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {big}: not a gradviz trace"), r.stderr


def test_the_check_reads_only_the_head(tmp_path, monkeypatch):
    from gradviz.trace import file

    path = tmp_path / "log.txt"
    path.write_bytes(b"x" * (10 << 20))
    sizes = count_reads(monkeypatch, file)
    with pytest.raises(file.TraceError, match="not a gradviz trace"):
        file.load(path)
    assert sum(sizes) <= file.HEAD_BYTES


def test_a_small_document_with_the_format_key_last_still_loads(tmp_path):
    import json

    save(tb.diamond().events, tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_bytes())
    reordered = {"events": doc.pop("events"), **doc}
    (tmp_path / "r.json").write_text(json.dumps(reordered))
    assert load(tmp_path / "r.json").events == tb.diamond().events
