"""gradviz diff says how the runs ended first, compares hooks, stops where a structure differs,
tells an unseeded run from a wrong gradient, says what it compared, and does work bounded by its
inputs' size (issue 29 items 2 and 5, issue 33 G12). Recordings from gradviz's engine."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from click.testing import CliRunner
from diff_programs import record as _record

import gradviz
from gradviz.cli import main
from gradviz.diff import compare, diff
from gradviz.trace import events as ev
from gradviz.trace.file import save
from gradviz.trace.model import Trace


def _cli(tmp_path, monkeypatch, a, b):
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, ["diff", str(a), str(b)])


def test_same_recording_twice_no_divergence_and_says_what_it_compared(tmp_path, monkeypatch):
    _record(tmp_path / "a.json", hook=True)
    _record(tmp_path / "b.json", hook=True)
    r = _cli(tmp_path, monkeypatch, "a.json", "b.json")
    assert r.exit_code == 0, r.output
    assert "no divergence" in r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("compared:"))
    for what in ("run status and errors", "2 tasks", "nodes", "edges", "2 hooks", "saved tensors", "leaf inputs",
                 "gradients (rtol 0.0001, atol 1e-06)"):
        assert what in line, line


def test_failed_run_vs_finished_exits_1_naming_the_status(tmp_path, monkeypatch):
    a = _record(tmp_path / "ok.json")
    b = _record(tmp_path / "failed.json", fail=True)
    assert a.status == "ok" and b.status == "error"
    found = diff(a, b)
    assert found and found[0].kind == "status"
    r = _cli(tmp_path, monkeypatch, "ok.json", "failed.json")
    assert r.exit_code == 1, r.output
    first = r.output.splitlines()[2]
    assert first.startswith("status:") and "finished (ok)" in first and "failed" in first
    assert "ValueError: the data loader ran dry" in first


def test_one_observe_only_hook_more_is_a_divergence_naming_it(tmp_path, monkeypatch):
    _record(tmp_path / "plain.json")
    _record(tmp_path / "hooked.json", hook=True)
    r = _cli(tmp_path, monkeypatch, "plain.json", "hooked.json")
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("hook:")]
    assert len(lines) == 1, r.output
    assert "B called" in lines[0] and "log_grad" in lines[0] and "A did not" in lines[0]
    assert "MmBackward0" in lines[0]  # the node whose gradient the hook saw
    # the gradients are the same: only the hook differs
    assert not any(ln.startswith(("gradient:", "structure:")) for ln in r.output.splitlines())
    r = _cli(tmp_path, monkeypatch, "hooked.json", "plain.json")
    assert r.exit_code == 1 and "A called" in r.output and "B did not" in r.output


def test_hooks_compared_by_node_kind_and_qualname_only(tmp_path):
    """Fields both engines' recordings share: a trace whose hook events carry other timestamps
    is no divergence; another function is."""
    a = _record(tmp_path / "a.json", hook=True)
    events = [e if type(e) is not ev.Hook else ev.Hook(e.seq, e.ts + 5, e.tid, e.task, e.node, e.hook, e.name)
              for e in a.events]
    save(events, tmp_path / "b.json")
    assert diff(a, gradviz.load(str(tmp_path / "b.json"))) == []
    renamed = [e if type(e) is not ev.Hook else ev.Hook(e.seq, e.ts, e.tid, e.task, e.node, e.hook, "other_hook")
               for e in a.events]
    save(renamed, tmp_path / "c.json")
    found = diff(a, gradviz.load(str(tmp_path / "c.json")))
    assert [d.kind for d in found] == ["hook"] and "log_grad" in found[0].message


def test_after_a_structural_divergence_no_gradient_lines(tmp_path, monkeypatch):
    _record(tmp_path / "tanh.json")
    _record(tmp_path / "sin.json", sin=True)
    r = _cli(tmp_path, monkeypatch, "tanh.json", "sin.json")
    assert r.exit_code == 1
    assert "structure: task 1: node #1: TanhBackward0 vs SinBackward0" in r.output, r.output
    assert not any(ln.startswith(("gradient:", "order:")) for ln in r.output.splitlines())
    assert "tasks 2..2: not comparable once task 1's structure differs" in r.output


def test_unseeded_runs_blame_the_inputs_not_a_gradient(tmp_path, monkeypatch):
    _record(tmp_path / "seed0.json", seed=0)
    _record(tmp_path / "seed1.json", seed=1)
    r = _cli(tmp_path, monkeypatch, "seed0.json", "seed1.json")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[2].startswith("inputs: task 1: leaf w at AccumulateGrad"), r.output
    assert "unseeded" in lines[2]
    assert not any(ln.startswith("gradient:") for ln in lines)
    assert "not compared: gradients: the runs' leaf inputs differ" in r.output


def test_old_trace_without_leaf_values_says_it_could_not_compare_them(tmp_path):
    a = _record(tmp_path / "a.json")
    events = [e if type(e) is not ev.TensorCreated else ev.TensorCreated(
        e.seq, e.ts, e.tid, e.tensor, e.name, e.shape, e.dtype, e.device, e.source) for e in a.events]
    res = compare(a, Trace(events))
    assert res.divergences == []
    assert any("the values of 1 leaf: a trace does not record them" in ln for ln in res.summary())


def _crafted(path, n_nodes: int, n_tasks: int) -> None:
    """A small file that roots many graph tasks in one long chain and runs none of them: a walk
    of every task's graph costs n_tasks * n_nodes, far more than the file's size."""
    seq = iter(range(10**9))

    def at(cls, **f):
        return cls(seq=next(seq), ts=0, tid=1, **f)

    evs: list[ev.Event] = [
        at(ev.TraceBegin, format_version=ev.FORMAT_VERSION, gradviz_version="0", numpy_version="0",
           python_version="3", platform="x", devices=("cpu",), argv=("crafted",), pid=1, values=False),
        at(ev.ThreadStart, name="MainThread", device=None, role="caller"),
        at(ev.QueueCreated, queue=1, device="cpu", owner=1, name="cpu"),
    ]
    for i in range(1, n_nodes + 1):
        evs.append(at(ev.NodeCreated, node=i, name="MulBackward0", sequence_nr=i, topological_nr=n_nodes - i,
                      num_inputs=1, num_outputs=1, device="cpu", saved=(), source=None))
    for i in range(2, n_nodes + 1):
        evs.append(at(ev.EdgeCreated, src=i, slot=0, dst=i - 1, input_nr=0))
    for t in range(1, n_tasks + 1):
        evs.append(at(ev.TaskBegin, task=t, roots=((n_nodes, 0),), graph_root=None, keep_graph=True,
                      create_graph=False, accumulate_grad=True, outputs=(), reentrant_depth=0, owner=1,
                      cpu_queue=1))
    evs.append(at(ev.TraceEnd, status="ok", events=len(evs)))
    save(evs, path)


def test_crafted_trace_work_is_bounded_by_its_size(tmp_path, monkeypatch):
    path = tmp_path / "crafted.json"
    _crafted(path, 1500, 1500)  # unbounded: 2.25M positions numbered, twice, and as many kept
    trace = gradviz.load(str(path), lazy=True)
    tracemalloc.start()
    t = time.perf_counter()
    res = compare(trace, trace)
    elapsed = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 40e6, f"{peak / 1e6:.0f} MB"
    assert elapsed < 30  # a generous bound on a shared machine; unbounded it grows with the square
    assert res.divergences == []
    assert any("their graphs hold more nodes than the traces have events" in s for s in res.not_compared)
    assert 0 < res.compared["tasks"] < 1500
    r = _cli(tmp_path, monkeypatch, "crafted.json", "crafted.json")
    assert r.exit_code == 0 and "not compared: tasks" in r.output, r.output


@pytest.mark.parametrize("n_tasks", [1, 3])
def test_real_traces_of_retained_graphs_are_compared_whole(tmp_path, n_tasks):
    """The bound never cuts a real recording: each task's walk is paid for by its own events."""
    x = gradviz.ones(3, requires_grad=True)
    with gradviz.trace(str(tmp_path / "r.json")):
        y = x
        for _ in range(200):
            y = y * 1.01
        for _ in range(n_tasks):
            y.sum().backward(retain_graph=True)
    t = gradviz.load(str(tmp_path / "r.json"))
    res = compare(t, t)
    assert res.not_compared == [] and res.compared["tasks"] == n_tasks


def test_retain_grad_hooks_compared_by_kind_not_the_engines_function_name(tmp_path):
    """retain_grad()'s hook is each engine's own function: another name for it is no divergence,
    a missing one is."""

    def program():
        w = gradviz.ones(3, requires_grad=True)
        h = w * 2
        h.retain_grad()
        h.sum().backward()

    a = _record_fn(tmp_path / "a.json", program)
    hooks = [e for e in a.events if type(e) is ev.Hook]
    assert [h.hook for h in hooks] == ["retains_grad"]
    renamed = [e if type(e) is not ev.Hook else ev.Hook(e.seq, e.ts, e.tid, e.task, e.node, e.hook, "torch_retain")
               for e in a.events]
    assert diff(a, Trace(renamed)) == []
    dropped = [e for e in a.events if type(e) is not ev.Hook]
    found = diff(a, Trace(dropped))
    assert [d.kind for d in found] == ["hook"] and "retains_grad hook retain_grad()" in found[0].message


def _record_fn(path, fn):
    with gradviz.trace(str(path)):
        fn()
    return gradviz.load(str(path))
