"""A file that starts as a trace and then stops being one is refused where it stops, read a few
megabytes at a time (issue 33 G11): a header then zeros, a header then a log, an endless pipe.
Every reading command: one line, exit 1, memory bounded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import trace_builders as tb
from faults import capped_memory, count_reads

from gradviz.trace import TraceError, load
from gradviz.trace import file as trace_file
from gradviz.trace.crash import CRASH_MARKER
from gradviz.trace.file import save

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [["info"], ["replay"], ["replay", "--step", "3"], ["export"], ["render", "--format", "dot"],
            ["diff", "X"], ["diff", "X", "-"]]


def _gradviz(args: list[str], cwd: Path, shell: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "gradviz", *args]
    if shell is not None:  # the input from a pipe: `shell | gradviz ... /dev/stdin`
        feeder = subprocess.Popen(["sh", "-c", shell], stdout=subprocess.PIPE, cwd=cwd)
        try:
            return subprocess.run(cmd, stdin=feeder.stdout, capture_output=True, text=True, env=env, cwd=cwd,
                                  timeout=60, preexec_fn=capped_memory)
        finally:
            feeder.kill()
            feeder.wait()
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=60, preexec_fn=capped_memory)


def _args(command: list[str], bad: str, good: Path) -> list[str]:
    """The command with the bad file in each of its places (diff: A, then B as "-")."""
    if command[-1] == "-":
        return [command[0], str(good), bad]
    return [command[0], bad, *[str(good) if a == "X" else a for a in command[1:]]]


def _head_then(tmp_path: Path, tail: bytes, size: int) -> Path:
    """A real trace's header and first lines, then ``tail``, then zeros to ``size`` (sparse)."""
    save(tb.diamond().events, tmp_path / "good.json")
    data = (tmp_path / "good.json").read_bytes()
    head = data[: data.index(b"\n", data.index(b"\n") + 1) + 1]  # the header line and one event
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.write(head + tail)
        f.truncate(size)
    return big


def _cli(args: list[str]):
    from click.testing import CliRunner

    from gradviz.cli import main

    return CliRunner().invoke(main, args)


def _start(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(1 << 16)


def test_a_trace_header_then_3_gb_of_zeros_is_refused_in_bounded_memory(tmp_path):
    big = _head_then(tmp_path, b"", 3 << 30)
    at = _start(big).index(b"\0")
    r = _gradviz(["info", str(big)], tmp_path)  # under a 1 GB cap: reading it all would not fit
    assert r.returncode == 1, r.stderr[-1000:]
    assert r.stderr == (f"Error: {big}: not a gradviz trace from byte {at:,} on "
                        "(byte 0x00 where a trace holds only text)\n")


@pytest.mark.parametrize("tail", [b"", b"2026-12-07 12:00:01 INFO step 1 loss 0.3\n" * 1000])
def test_every_command_refuses_a_trace_that_stops_being_one_where_it_stops(tmp_path, monkeypatch, tail):
    monkeypatch.chdir(tmp_path)
    big = _head_then(tmp_path, tail, 64 << 20)
    at = _start(big).index(tail[:4] or b"\0")
    why = "a line that starts with '2', not an event" if tail else "byte 0x00 where a trace holds only text"
    for command in COMMANDS:
        r = _cli(_args(command, str(big), tmp_path / "good.json"))
        assert r.exit_code == 1, (command, r.output)
        assert r.stderr == f"Error: {big}: not a gradviz trace from byte {at:,} on ({why})\n", command


def test_a_trace_header_then_dev_zero_through_a_pipe_is_refused(tmp_path):
    save(tb.diamond().events, tmp_path / "good.json")
    r = _gradviz(["info", "/dev/stdin"], tmp_path, shell="head -n 3 good.json; cat /dev/zero")
    assert r.returncode == 1, r.stderr[-1000:]
    assert r.stderr.startswith("Error: /dev/stdin: not a gradviz trace from byte ")
    assert r.stderr.endswith(" on (byte 0x00 where a trace holds only text)\n")


def test_the_read_stops_at_the_block_where_the_trace_stops(tmp_path, monkeypatch):
    big = _head_then(tmp_path, b"", 64 << 20)
    sizes = count_reads(monkeypatch, trace_file)
    with pytest.raises(TraceError, match="not a gradviz trace from byte"):
        load(big)
    assert sum(sizes) <= trace_file.HEAD_BYTES + trace_file.READ_BYTES


@pytest.mark.parametrize("block", [1, 7, 4096])
def test_a_good_trace_read_in_small_blocks_loads_the_same(tmp_path, monkeypatch, block):
    """Every boundary a block can end on (a line's start split from its newline) passes."""
    save(tb.diamond().events, tmp_path / "t.json")
    monkeypatch.setattr(trace_file, "HEAD_BYTES", _start(tmp_path / "t.json").index(b"\n") + 1)
    monkeypatch.setattr(trace_file, "READ_BYTES", block)
    assert load(tmp_path / "t.json").events == tb.diamond().events


def test_a_crash_report_after_the_events_is_read_but_not_text_past_it(tmp_path, monkeypatch):
    save(tb.diamond().events, tmp_path / "t.json")
    data = (tmp_path / "t.json").read_bytes()
    cut = data[: data.rindex(b"\n", 0, len(data) - 4) + 1]  # a crash before the footer was written
    report = CRASH_MARKER + b"Segmentation fault\n\nCurrent thread 0x01 (most recent call first):\n  File x\n"
    (tmp_path / "crash.json").write_bytes(cut + report)
    with pytest.warns(Warning, match="the program crashed: Segmentation fault"):
        load(tmp_path / "crash.json")
    monkeypatch.setattr(trace_file, "MARKER_WINDOW", 64)
    (tmp_path / "long.json").write_bytes(cut + report + b"  more text\n" * 100)
    with pytest.raises(TraceError, match=r"from byte [\d,]+ on \(text after a crash report\)"):
        load(tmp_path / "long.json")
