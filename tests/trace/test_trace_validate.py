"""Hostile traces (issue 18, items 2, 4 and 6): crafted numbers get a one-line error naming the
event and field, under a memory cap, for every command; strings reach no terminal raw."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import mutants
import pytest
from click.testing import CliRunner
from trace_builders import diamond

import gradviz
from gradviz.cli import main
from gradviz.trace import TraceError, load
from gradviz.trace import events as ev
from gradviz.trace.file import save
from gradviz.trace.text import neutralise

ROOT = Path(__file__).resolve().parents[2]


def _first(events, kind):
    return next(i for i, e in enumerate(events) if isinstance(e, kind))


def _saved_with(tmp_path, kind, **fields) -> tuple[str, int]:
    events = diamond().events
    i = _first(events, kind)
    events[i] = dataclasses.replace(events[i], **fields)
    path = tmp_path / "t.json"
    save(events, path)
    return str(path), i


def _one_line_error(path: str, args: list[str]) -> str:
    r = CliRunner().invoke(main, [args[0], path, *args[1:]])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: event "), r.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("kind", "field", "value", "says"),
    [
        (ev.BufferAdd, "slot", 10**9, "field 'slot' is 1000000000, but node 5 has 1 inputs"),
        (ev.BufferAdd, "slot", -1, "field 'slot' is -1"),
        (ev.NodeCreated, "num_outputs", 10**9, "field 'num_outputs' is 1000000000, outside 0.."),
        (ev.NodeCreated, "num_outputs", -(2**64), "field 'num_outputs'"),
        (ev.NodeBegin, "ts", -5, "field 'ts' is -5"),
        (ev.QueuePush, "queue", 77, "field 'queue' is queue 77, which no queue_created announced before"),
        (ev.Dependencies, "task", 9, "field 'task' is task 9"),
        (ev.Dependencies, "counts", ((1, 1), (77, 1)), "field 'counts' is node 77, which no node_created"),
        (ev.Dependencies, "counts", ((1, 1), (2, 10**9)), "field 'counts' is 1000000000, outside 0.."),
        (ev.Dependencies, "counts", ((1, -1),), "field 'counts' is -1, outside 0.."),
    ],
)
def test_a_crafted_number_is_one_line_naming_event_and_field(tmp_path, kind, field, value, says):
    """The issue's cases: a slot of 10**9 (replay --step and render --step grew to 19.5 GB), a
    num_outputs of 10**9 (info, render, export: 7.5 GB) or below -2**63 (OverflowError), a
    negative slot (IndexError in replay), a ts outside the span (IndexError in the timeline)."""
    path, i = _saved_with(tmp_path, kind, **{field: value})
    with pytest.raises(TraceError) as exc:
        load(path)
    assert str(exc.value).startswith(f"{path}: event {i} ({kind.kind}): {says}"), str(exc.value)
    for args in (["info"], ["replay", "--step", "30"], ["render", "--step", "30", "--format", "dot", "-o",
                                                        str(tmp_path / "o.dot")], ["export"]):
        assert says in _one_line_error(path, args)


def test_a_ts_out_of_order_still_draws_the_timeline(tmp_path):
    """A ts in range but after the last event's (the timeline indexed its bar by it)."""
    path, _ = _saved_with(tmp_path, ev.NodeBegin, ts=10**15)
    r = CliRunner().invoke(main, ["replay", path, "--width", "100"])
    assert r.exit_code == 0 and r.exception is None, r.output


def _run_capped(args: list[str], timeout: int) -> dict:
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"mutants-{os.getpid()}.json"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(ROOT / "tests" / "mutants.py"), str(out), *args], env=env,
                   preexec_fn=mutants.capped, timeout=timeout, check=True)
    try:
        return json.loads(out.read_text())
    finally:
        out.unlink()


@pytest.mark.slow
def test_every_integer_of_every_event_kind_mutated_runs_every_command_under_a_memory_cap():
    """Each integer field (and each integer inside a tuple field) of each event kind in five base
    traces, set to -1, 0, 10**9, 2**62, 10**400 and an unknown id; each string set to rich markup,
    a lone surrogate, a control sequence; each float of a statistic to an integer too large for a
    float (tests/mutants.py, one mutant per kind, field and value); every command (info, info
    --json, diff with the mutant first and second, render, render --step, replay, replay --step,
    export) on each mutant that loads, info and diff on each that does not, in a subprocess with
    2 GB of address space: no traceback, no hang (20 s a run), no MemoryError.
    (benchmarks/bench_mutants.py --all runs all 11,340 mutants.)"""
    result = _run_capped([], timeout=300)
    assert result["mutants"] > 600 and result["runs"] > result["mutants"]
    assert result["failures"] == [], "\n".join(result["failures"][:20])


# --- terminal escapes (item 6) ---------------------------------------------------------------

ESC_SCRIPT = '''
import sys, threading
import gradviz as torch

def in_thread():
    y = torch.tensor([3.0], requires_grad=True)
    (y * 3).sum().backward()

t = threading.Thread(target=in_thread, name="worker\\x1b]0;pwned-title\\x07")
t.start()
t.join()

class Evil(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("boom \\x1b[2J\\x9b31m cleared")

Evil.__name__ = Evil.__qualname__ = "Evil\\x1b[2J\\x9bK"
x = torch.tensor([1.0, 2.0], requires_grad=True)
Evil.apply(x).sum().backward()
'''


@pytest.fixture(scope="module")
def escape_trace(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("esc")
    script = d / "evil.py"
    script.write_text(ESC_SCRIPT)
    path = d / "evil.trace.json"
    r = subprocess.run([sys.executable, "-m", "gradviz", "run", "-o", str(path), str(script), "\x1b[31mred\x9b"],
                       capture_output=True, timeout=120, cwd=ROOT)
    assert r.returncode == 1, r.stderr  # the script's exception
    return str(path)


def test_neutralise_shows_controls_visibly():
    assert neutralise("a\x1b[2Jb\x9bc\x07d\re\u202ef") == "a\\x1b[2Jb\\x9bc\\x07d\\x0de\\u202ef"
    assert neutralise("new\nline\ttab é 漢") == "new\nline\ttab é 漢"


@pytest.mark.parametrize("args", [["info"], ["replay", "--width", "200"], ["replay", "--step", "20", "--width", "200"],
                                  ["info", "--json"]])
def test_no_escape_from_a_trace_reaches_the_terminal(escape_trace, args):
    """Node names (a custom Function's class name), thread names, argv and exception messages
    holding ESC and C1 sequences: printed as text (\\x1b), never as the control itself."""
    r = CliRunner().invoke(main, [args[0], escape_trace, *args[1:]])
    assert r.exit_code == 0, r.output
    out = r.stdout_bytes + r.stderr_bytes
    for raw in (b"\x1b", "\x9b".encode(), b"\x07"):
        assert raw not in out, (args, raw, out[:2000])
    text = out.decode()
    if args[0] == "info":  # argv, the exception message and the thread's name, visibly escaped
        assert "\\x1b[31mred\\x9b" in text.replace("\\\\", "\\")
        assert "boom \\x1b[2J\\x9b31m cleared" in text.replace("\\\\", "\\")


def test_renderers_show_the_escaped_names_readably(escape_trace, tmp_path):
    """DOT output of the same trace: the name is there, as text."""
    out = tmp_path / "g.dot"
    r = CliRunner().invoke(main, ["render", escape_trace, "--format", "dot", "-o", str(out)])
    assert r.exit_code == 0, r.output
    dot = "".join(p.read_text() for p in tmp_path.glob("g*.dot"))  # one file per graph task
    assert "\x1b" not in dot and "Evil" in dot and "x1b" in dot and "KBackward" in dot
    t = load(escape_trace)
    names = {i.name for i in t.nodes.values()}
    assert "EvilBackward".replace("Evil", "Evil\\x1b[2J\\x9bK") in names, names


def test_the_nodes_declared_slots_are_bounded_in_all_not_only_each(tmp_path):
    """Five nodes of 40,000 inputs each: each under the bound, together over it (replay makes an
    InputBuffer of num_inputs slots for each node a gradient reaches: 5 x 40,000 from 60 events)."""
    events = [dataclasses.replace(e, num_inputs=40_000) if isinstance(e, ev.NodeCreated) else e
              for e in diamond().events]
    save(events, tmp_path / "t.json")
    with pytest.raises(TraceError, match=r"event \d+ \(node_created\): field 'num_inputs' is 40000: the trace's "
                                         r"nodes would declare 80000 in all, over 65536"):
        load(tmp_path / "t.json")


def test_grad_of_an_input_without_an_accumulator_loads(tmp_path):
    # torch.autograd.grad gives such an input an edge (Identity, 0) to a node of no inputs; the
    # loader once refused gradviz's own faithful recording of it ("node 8 has 0 inputs").
    x = gradviz.ones(1, requires_grad=True)
    z = gradviz.ones(1, requires_grad=True)  # never used: no AccumulateGrad
    path = tmp_path / "t.json"
    with gradviz.trace(str(path)):
        gx, gz = gradviz.autograd.grad(x * 2, [x, z], allow_unused=True)
    assert gz is None and gx.tolist() == [2.0]
    tr = gradviz.load(path)
    (task,) = tr.tasks.values()
    assert [tr.nodes[n].name for n, _ in task.begin.outputs] == ["AccumulateGrad", "Identity"]
