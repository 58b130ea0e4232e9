"""What a newcomer meets in the CLI: help that reads whole, one numbering, one error style, long
runs summarised, outputs in one place with the umask, and output errors in one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_builders import diamond, failing

import gradviz
from gradviz.cli import main
from gradviz.trace.file import save

COMMANDS = ("run", "info", "render", "replay", "export", "diff", "view", "why")


def _many(tmp_path: Path, n: int, fail_at: tuple[int, ...] = ()) -> Path:
    path = tmp_path / "many.trace.json"

    class Boom(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = gradviz.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.trace(str(path)):
        for i in range(n):
            try:
                (Boom.apply(x) if i in fail_at else x * 2).sum().backward()
            except ValueError:
                pass
    return path


def test_info_lists_the_ends_and_the_failures_of_a_long_run(tmp_path):
    path = _many(tmp_path, 40, fail_at=(20,))
    ids = list(gradviz.load(path).tasks)
    r = CliRunner().invoke(main, ["info", str(path)])
    assert r.exit_code == 0, r.output
    section = r.stdout.split("Graph tasks", 1)[1].split("graph:", 1)[0]
    rows = [ln.split()[0] for ln in section.splitlines() if re.match(r"\s+(\d+|…)\s", ln)]
    listed = [int(x) for x in rows if x.isdigit() and int(x) in ids]
    assert listed == ids[:5] + [ids[20]] + ids[-5:], r.stdout
    assert "15 more (--json for all)" in r.stdout and "14 more (--json for all)" in r.stdout
    r = CliRunner().invoke(main, ["info", str(path), "--json"])
    import json

    assert len(json.loads(r.stdout)["tasks"]) == 40


def test_info_numbers_events_as_replay_does(tmp_path):
    save(failing().events, tmp_path / "f.json")
    r = CliRunner().invoke(main, ["info", str(tmp_path / "f.json")])
    assert "event #22 (task 1, LogBackward0 (node 2); replay --step 23): RuntimeError" in r.stdout
    r = CliRunner().invoke(main, ["replay", str(tmp_path / "f.json"), "--step", "23"])
    assert "after 23 events (the last: #22 error)" in r.stdout


@pytest.mark.parametrize("command", ["info", "render", "replay", "export"])
def test_a_directory_as_the_trace_is_a_usage_error_everywhere(tmp_path, command):
    r = CliRunner().invoke(main, [command, str(tmp_path)])
    assert r.exit_code == 2 and "is a directory" in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.parametrize("command", ["render", "replay"])
def test_step_mistakes_name_the_real_bounds(tmp_path, command):
    save(diamond().events, tmp_path / "d.json")
    for bad in ("-1", "57"):
        r = CliRunner().invoke(main, [command, str(tmp_path / "d.json"), "--step", bad])
        assert r.exit_code == 2 and f"{bad} is out of range: the trace has 56 events (0..56)" in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1


def test_help_reads_whole_and_names_no_internal_issues():
    r = CliRunner().invoke(main, ["--help"], terminal_width=80)
    commands = r.stdout.split("Commands:", 1)[1]
    assert "..." not in commands and len(commands.strip().splitlines()) == len(COMMANDS), commands
    for command in COMMANDS:
        r = CliRunner().invoke(main, [command, "--help"], terminal_width=80)
        assert r.exit_code == 0
        assert not re.search(r"\bissue \d", r.stdout, re.I), (command, r.stdout)
    render = CliRunner().invoke(main, ["render", "--help"], terminal_width=100).stdout
    assert re.search(r"--group-by \[none\|line\|function\][\s\S]*default: none", render)
    replay = CliRunner().invoke(main, ["replay", "--help"], terminal_width=100).stdout
    assert "--no-pager" in replay and "less -R -F -X" in replay
    assert "why is the selected node not running" in replay and "clear selection" in replay


def test_replay_at_and_step_together_is_refused(tmp_path):
    save(diamond().events, tmp_path / "d.json")
    r = CliRunner().invoke(main, ["replay", str(tmp_path / "d.json"), "--at", "MulBackward0", "--step", "3"])
    assert r.exit_code == 2 and "--at and --step N both pick a step" in r.output


def test_a_trace_cut_inside_its_header(tmp_path):
    path = tmp_path / "d.json"
    save(diamond().events, path)
    head = path.read_bytes().split(b"\n", 1)[0]
    cut = tmp_path / "cut.json"
    cut.write_bytes(head[: len(head) // 2])
    for command in ("info", "render", "replay", "export"):
        r = CliRunner().invoke(main, [command, str(cut)])
        assert r.exit_code == 1, r.output
        assert r.output.strip() == f"Error: {cut}: a gradviz trace cut inside its header: nothing to recover"


def test_export_default_in_the_current_folder_with_the_umask_and_new_folders(tmp_path, monkeypatch):
    save(diamond().events, tmp_path / "d.trace.json")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    old = os.umask(0o022)
    try:
        r = CliRunner().invoke(main, ["export", str(tmp_path / "d.trace.json")])
        assert r.exit_code == 0, r.output
        assert (work / "d.perfetto.json").stat().st_mode & 0o777 == 0o644
        r = CliRunner().invoke(main, ["export", str(tmp_path / "d.trace.json"), "-o", "a/b/x.json"])
        assert r.exit_code == 0, r.output
        assert (work / "a" / "b" / "x.json").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [["info"], ["replay"], ["replay", "--step", "20"], ["info", "--json"],
                                  ["render", "--format", "dot", "-o", "/dev/stdout"]])
def test_stdout_on_a_full_device_is_one_line(tmp_path, args):
    save(diamond().events, tmp_path / "d.json")
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "gradviz", args[0], str(tmp_path / "d.json"), *args[1:]],
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    where = "/dev/stdout" if args[0] == "render" else "cannot write to standard output"
    assert r.stderr.strip() == f"Error: {where}: No space left on device", r.stderr


def test_dir_gradviz_shows_the_public_api_only():
    names = dir(gradviz)
    for internal in ("np", "math", "builtins", "Any", "Sequence", "annotations", "warnings", "getitem_raw"):
        assert internal not in names
    for public in ("tensor", "Tensor", "nn", "autograd", "trace", "load", "record", "no_grad", "float32", "exp"):
        assert public in names
    assert all(hasattr(gradviz, n) for n in names)


def test_diamond_docstring_names_the_node_that_waits_in_not_ready(tmp_path):
    import runpy

    path = tmp_path / "d.trace.json"
    with gradviz.trace(str(path)):
        runpy.run_path(str(Path(__file__).resolve().parents[2] / "samples" / "diamond.py"))
    tr = gradviz.load(path)
    parked = {tr.nodes[e.node].name for e in tr.events if e.kind == "not_ready_park"}
    assert parked == {"AccumulateGrad"}
    doc = (Path(__file__).resolve().parents[2] / "samples" / "diamond.py").read_text().split('"""')[1]
    assert "AccumulateGrad waits in not_ready" in doc and "add node waits" not in doc


def test_docs_name_every_stepper_key():
    from gradviz.replay.stepper import HELP

    doc = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text()
    for keys, _ in HELP:
        for key in keys.split():
            shown = {"→": "→", "←": "←", "↓": "↓", "↑": "↑", "space": "space", "esc": "Esc"}.get(key, key)
            assert f"`{shown}`" in doc or f"/`{shown}`" in doc, key


def test_stepper_graph_panel_counts_nodes_not_created_yet(tmp_path):
    from rich.console import Console

    from gradviz.replay.stepper import Stepper, layout

    path = tmp_path / "loop.trace.json"
    w = gradviz.tensor([1.0, 2.0], requires_grad=True)
    keep = []  # each product kept alive keeps w's one AccumulateGrad alive, as in torch
    with gradviz.trace(str(path)):
        for _ in range(13):
            keep.append(w * 2)
            keep[-1].sum().backward()
    tr = gradviz.load(path)
    acc = next(n for n, i in tr.nodes.items() if i.name == "AccumulateGrad")
    first_run = next(i for i, e in enumerate(tr.events, 1) if e.kind == "node_begin" and e.node == acc)
    s = Stepper(tr, first_run)
    con = Console(width=160, height=50, color_system=None, record=True)
    con.print(layout(s, 160, 50), height=50)
    screen = con.export_text()
    assert "+12 later (created after this step)" in screen
    assert "not created" not in screen
