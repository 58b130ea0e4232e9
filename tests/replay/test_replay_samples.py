"""Replay of real recordings: the samples run under `gradviz run`, then replayed.

Golden text for `--step N` of the reentrant sample and of a two-device program, and, for every
sample, a check that the fold agrees with what the engine recorded at each step: queue sizes,
which task each pop takes (the fold's pop order), and clean task ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_replay_cli import check_golden

from gradviz.cli import main
from gradviz.replay.state import EngineState, apply
from gradviz.trace import events as ev
from gradviz.trace.file import load

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"

# Forward on cpu, the middle on virtual:0 (its own worker thread and ready queue), back to cpu.
MULTI_DEVICE = """\
import gradviz as torch
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x.to("virtual:0") * 2
z = (y.exp() + y).to("cpu")
w = x * 3
(z * w).sum().backward()
print(x.grad)
"""

# Reentrant backward past max_recursion_depth: the inner tasks move to reentrant pool threads.
POOL = """\
import gradviz as torch
from gradviz.autograd.engine import get_default_engine
get_default_engine().max_recursion_depth = 1

class Nest(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            inner = x.detach().requires_grad_()
            out = Nest.apply(inner, ctx.n - 1) if ctx.n > 0 else inner * 2
            out.backward(grad)
        return inner.grad, None

x = torch.tensor([1.0, 2.0], requires_grad=True)
Nest.apply(x, 3).sum().backward()
print(x.grad)
"""


def record(script: Path, out: Path) -> Path:
    # GRADVIZ_FORWARD=0: the backward's events alone, so that the steps named below stay put
    r = subprocess.run([sys.executable, "-m", "gradviz", "run", "-o", str(out), str(script)],
                       cwd=out.parent, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "GRADVIZ_FORWARD": "0"})
    assert out.exists(), r.stderr
    return out


@pytest.fixture(scope="session")  # once per worker: interleaved modules would tear a module's down
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("samples")
    (d / "multi_device_inline.py").write_text(MULTI_DEVICE)
    (d / "pool_inline.py").write_text(POOL)
    out = {"multi_device_inline": record(d / "multi_device_inline.py", d / "multi_device_inline.json"),
           "pool_inline": record(d / "pool_inline.py", d / "pool_inline.json")}
    for script in sorted(SAMPLES.glob("*.py")):
        out[script.stem] = record(script, d / f"{script.stem}.json")
    return out


def replay(path: Path, *args: str) -> str:
    r = CliRunner().invoke(main, ["replay", str(path), *args, "--width", "100"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def test_reentrant_sample_inner_node_runs_nested(recorded: dict[str, Path]) -> None:
    out = replay(recorded["reentrant"], "--at", "TanhBackward0")
    assert "running TanhBackward0 (node 6), task 2 inside" in out
    assert "1     MainThread   caller   1       1, 2" in out  # one thread, two tasks, depth 1
    check_golden("replay_sample_reentrant_at_tanh.txt", out)


def test_reentrant_sample_inner_task_shares_the_queue(recorded: dict[str, Path]) -> None:
    out = replay(recorded["reentrant"], "--step", "41")
    # The inner task's node is in the outer task's cpu queue, with depth 1 in its priority.
    assert "1. TanhBackward0 (seq 3) task 2, priority (1, 3)" in out
    check_golden("replay_sample_reentrant_step41.txt", out)


def test_multi_device_device_thread_runs_device_nodes(recorded: dict[str, Path]) -> None:
    out = replay(recorded["multi_device_inline"], "--at", "ExpBackward0")
    assert "gradviz-virtual:0 runs ExpBackward0 (node 4) for task 1 at depth 0" in out
    assert "waiting for work" in out  # the caller thread waits on its cpu queue
    check_golden("replay_sample_multi_device_at_exp.txt", out)


def test_multi_device_park_on_the_device_thread(recorded: dict[str, Path]) -> None:
    out = replay(recorded["multi_device_inline"], "--step", "68")
    assert "MulBackward0 (node 3) parked in not_ready of task 1" in out
    assert "1. ExpBackward0 (seq 2) task 1, priority (0, 2)" in out
    check_golden("replay_sample_multi_device_step68.txt", out)


def test_fold_agrees_with_every_recording(recorded: dict[str, Path]) -> None:
    for name, path in recorded.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = load(path)
        s = EngineState()
        for i, e in enumerate(tr.events, 1):
            if type(e) is ev.QueuePop:
                head = s.queues[e.queue].entries[0]
                assert (head.node, head.task, head.what) == (e.node, e.task, e.what), (name, i)
            apply(s, e)
            if type(e) in (ev.QueuePush, ev.QueuePop):
                assert len(s.queues[e.queue].entries) == e.size, (name, i)
            if type(e) is ev.NodeBegin:
                assert s.nodes[e.node].state == "running" and s.threads[e.tid].running.node == e.node
            if type(e) is ev.TaskEnd and e.status == "ok":
                t = s.tasks[e.task]
                assert t.outstanding == 0 and not t.not_ready, (name, i)
        assert s.step == len(tr)


def test_every_panel_agrees_with_the_event_just_applied(recorded: dict[str, Path]) -> None:
    """After each event, the node table, the why-text, the threads and the picture's colours all
    say what the event line says (no node "unreached" right after a gradient reached it)."""
    from gradviz.render.model import apply_state, build
    from gradviz.replay import views

    for name, path in recorded.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = load(path)
        s = EngineState()
        for i, e in enumerate(tr.events, 1):
            apply(s, e)
            where = (name, i, e.kind)
            if type(e) in (ev.DependencyDecrement, ev.BufferAdd, ev.NotReadyPark, ev.NotReadyTake):
                ns = s.nodes[e.node]
                if ns.state == "pruned":  # torch decrements an unneeded node's count, then skips it
                    continue
                assert ns.task == e.task and ns.state in ("arriving", "parked", "ready", "queued"), (*where, ns)
                why = " ".join(views.why(tr, s, e.node))
                assert "has no gradient yet" not in why, (*where, why)
                assert "passing a gradient to" in views.threads_view(s).columns[-1]._cells[
                    list(s.threads).index(e.tid)].plain, where
            if type(e) is ev.NotReadyTake:
                assert s.nodes[e.node].state == "ready", where
            if type(e) is ev.QueuePush and e.what == "node":
                ns = s.nodes[e.node]
                assert ns.state == "queued" and ns.queue == e.queue, where
                assert any(x.node == e.node for x in s.queues[e.queue].entries), where
        # The picture at a few steps colours nodes as the fold does.
        for task in list(tr.tasks)[:1]:
            steps = [i for i, e in enumerate(tr.events, 1) if type(e) is ev.BufferAdd][:6]
            for step in steps:
                model = build(tr, task)
                apply_state(tr, model, step)
                st = EngineState()
                for e in tr.events[:step]:
                    apply(st, e)
                for nid, n in model.nodes.items():
                    # A node the fold last saw in another task shows its state in the task drawn
                    # (issue 29: a shared leaf drawn "unreached" in a task where it ran).
                    if nid in st.nodes and st.nodes[nid].task in (None, task):
                        assert n.state == st.nodes[nid].state, (name, step, nid)


def test_error_sample_shows_the_error(recorded: dict[str, Path]) -> None:
    out = replay(recorded["error"])
    assert "Errors" in out and "error" in out


def test_multi_device_sample_if_present(recorded: dict[str, Path]) -> None:
    if "multi_device" not in recorded:
        pytest.skip("samples/multi_device.py is not in the repository (the inline program covers it)")
    tr = load(recorded["multi_device"])
    assert any(t.role == "device_worker" for t in tr.threads.values())
    out = replay(recorded["multi_device"], "--step", str(len(tr)))
    assert "device virtual:" in out


def test_reentrant_pool_threads_take_tasks(recorded: dict[str, Path]) -> None:
    from gradviz.replay.state import state_at

    tr = load(recorded["pool_inline"])
    takes = [(i, e) for i, e in enumerate(tr.events, 1) if e.kind == "pool_take"]
    assert takes, "the program goes past max_recursion_depth"
    step, take = takes[0]
    s = state_at(tr, step)
    t = s.tasks[take.task]
    assert t.pooled and t.runner == take.tid
    assert s.threads[take.tid].role == "reentrant_pool" and s.threads[take.tid].tasks == (take.task,)
    assert take.task not in s.threads[t.owner].tasks  # handed over: the owner no longer drives it
    out = replay(recorded["pool_inline"], "--step", str(step))
    assert "pool" in out and f"task {take.task}: running, backward" in out and "pooled" in out


def test_export_of_the_multi_device_recording(recorded: dict[str, Path], tmp_path: Path) -> None:
    import json

    from tests.cli.test_export import check_format, spans_from_events

    out = tmp_path / "md.perfetto.json"
    r = CliRunner().invoke(main, ["export", str(recorded["multi_device_inline"]), "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    tr = load(recorded["multi_device_inline"])
    check_format(doc, tr)
    spans = sorted((e["tid"], e["args"]["task"], e["args"]["node"], e["ts"], e["dur"])
                   for e in doc["traceEvents"] if e["ph"] == "X")
    assert spans == spans_from_events(tr)
    assert {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X"} == set(tr.threads)  # both threads
    flows = [e for e in doc["traceEvents"] if e["ph"] == "s"]
    assert any(f["tid"] != g["tid"] for f in flows for g in doc["traceEvents"]
               if g["ph"] == "f" and g["id"] == f["id"])  # a gradient crossing threads
