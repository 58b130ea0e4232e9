"""`gradviz info`: the summary of a trace, and one-line errors for files it cannot read."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from trace_builders import failing, reentrant, two_devices

import gradviz as torch
from gradviz.cli import main
from gradviz.trace import TraceWarning, codec, load, trace
from gradviz.trace.file import save
from gradviz.trace.summary import summarize


def info(*args: str):
    return CliRunner().invoke(main, ["info", *args])


@pytest.fixture
def recorded(tmp_path):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    path = tmp_path / "run.trace.json"
    with trace(path):
        (a * a + a.to("virtual:0").exp().to("cpu")).sum().backward()
    return path


def test_summary_of_a_recorded_trace(recorded):
    r = info(str(recorded))
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "status: ok" in out
    assert "Graph tasks" in out and "SumBackward0" in out
    assert "gradviz-virtual:0" in out and "device_worker" in out  # threads
    assert "node_begin" in out and "Events by kind" in out
    assert r.stderr == ""


def test_json_summary_matches_the_library(recorded):
    r = info(str(recorded), "--json")
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data == json.loads(json.dumps(summarize(load(recorded)).to_dict()))
    assert data["status"] == "ok" and data["tasks"][0]["status"] == "ok"
    assert data["events"] == sum(data["events_by_kind"].values())
    assert {t["role"] for t in data["threads"]} == {"caller", "device_worker"}


def test_errors_and_task_status_are_shown(tmp_path):
    save(failing().events, tmp_path / "f.json")
    r = info(str(tmp_path / "f.json"))
    assert r.exit_code == 0
    assert "Errors" in r.stdout and "RuntimeError: LogBackward0 failed" in r.stdout
    s = summarize(load(tmp_path / "f.json"))
    assert s.tasks[0].status == "error" and s.errors[0].node == "LogBackward0 (node 2)"


def test_reentrant_and_devices_summaries():
    s = summarize(reentrant())
    assert sorted(t.reentrant_depth for t in s.tasks) == [0, 1]
    s = summarize(two_devices())
    assert {t.device for t in s.threads} >= {None, "virtual:0"}


def test_truncated_trace_warns_and_exits_0(tmp_path, recorded):
    data = recorded.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    r = info(str(cut))
    assert r.exit_code == 0
    assert r.stderr.startswith(f"warning: {cut}: trace is incomplete") and r.stderr.count("\n") == 1
    assert "status: unfinished" in r.stdout and "incomplete" in r.stdout
    with pytest.warns(TraceWarning):
        assert summarize(load(cut)).truncated


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "{path}: No such file or directory"),
        (b"", "{path}: empty file, not a gradviz trace"),
        (b"[1, 2]", "{path}: not a gradviz trace"),
    ],
)
def test_unreadable_files_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "t.json"
    if content is not None:
        path.write_bytes(content)
    r = info(str(path))
    assert r.exit_code == (2 if content is None else 1)  # a missing input is a usage mistake
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith(f"Error: {message.format(path=path)}")


def test_malformed_event_names_event_and_field(tmp_path, recorded):
    lines = recorded.read_bytes().split(b"\n")
    # a gradient handed on is one line (format 3): its third event is the queue_push, size last
    k = next(i for i, ln in enumerate(lines) if ln.startswith(b'["gradient_in",') and ln.endswith(b",1],"))
    lines[k] = lines[k][: -len(b",1],")] + b',"1"],'
    push = sum(codec.row_events(json.loads(ln.rstrip(b","))) for ln in lines[1:k]) + 2
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\n".join(lines))
    r = info(str(bad))
    assert r.exit_code == 1
    assert r.stderr == f"Error: {bad}: event {push} (queue_push): field 'size' must be int, got str\n"
    assert "Traceback" not in r.output
