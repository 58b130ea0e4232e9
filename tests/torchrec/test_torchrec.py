"""The torch recorder is faithful to torch: per task, the execution order a Node pre-hook sees in
a separate unrecorded run, node names, _sequence_nr() and next_functions, and leaf .grad
statistics; reentrant backwards are nested tasks; recording leaves nothing behind."""

from __future__ import annotations

import math

import pytest
import torch  # a differential test: fails, never skips, without torch

import gradviz
from gradviz.torchrec import TorchRecorder
from gradviz.torchrec import adapters as g
from gradviz.torchrec.lines import SourceMode
from gradviz.torchrec.summaries import stats as summary_stats
from gradviz.trace import events as ev
from gradviz.trace.check import invariants
from gradviz.trace.provenance import derived_seqs, engine
from tests.torchrec_programs import PROGRAMS


def _oracle(prog, monkeypatch) -> list[list[tuple]]:
    """Torch's own order per backward/grad call, from Node pre-hooks, without the recorder."""
    calls: list[list[tuple]] = []
    orig_b, orig_g = torch.autograd.backward, torch.autograd.grad

    def hooked(fn, first):
        def wrapper(*args, **kwargs):
            outs = args[0] if args else kwargs[first]
            outs = [outs] if isinstance(outs, torch.Tensor) else list(outs)
            roots = [torch.autograd.graph.get_gradient_edge(t).node for t in outs if t.requires_grad]
            seen: list[tuple] = []
            calls.append(seen)
            hs = []
            for n in g.walk(roots):
                nxt = tuple((g.node_name(f) if f is not None else None, nr) for f, nr in n.next_functions)
                def pre(go, n=n, nxt=nxt):
                    seen.append((g.node_name(n), n._sequence_nr(), nxt))

                hs.append(n.register_prehook(pre))
            try:
                return fn(*args, **kwargs)
            finally:
                for h in hs:
                    h.remove()
        return wrapper

    monkeypatch.setattr(torch.autograd, "backward", hooked(orig_b, "tensors"))
    monkeypatch.setattr(torch.autograd, "grad", hooked(orig_g, "outputs"))
    leaves = prog()
    monkeypatch.undo()
    return calls, leaves


def _recorded(prog):
    with TorchRecorder() as rec:
        leaves = prog()
    return rec.trace, leaves


def _trace_order(t) -> list[list[tuple]]:
    nodes = t.nodes
    out = []
    for task in sorted(t.tasks):
        run = []
        for e in t.events:
            if type(e) is ev.NodeBegin and e.task == task and nodes[e.node].name != "GraphRoot":
                n = nodes[e.node]
                nxt = tuple((nodes[d].name if d is not None else None, nr) for d, nr in n.next_edges)
                run.append((n.name, n.sequence_nr, nxt))
        out.append(run)
    return out


def _relative(calls: list[list[tuple]]) -> list[list[tuple]]:
    """Sequence numbers relative to the run's first: two runs in one process count on."""
    seqs = [s for c in calls for _, s, _ in c if s < 2**63]
    base = min(seqs, default=0)
    return [[(n, s - base if s < 2**63 else s, nx) for n, s, nx in c] for c in calls]


def _stats(t: torch.Tensor) -> tuple:
    s = summary_stats(t)
    if type(s) is float:  # one finite element
        return (abs(s), s, s, 0, 0)
    s = s if type(s) is tuple else s.value
    return tuple(s)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_faithful_to_torch(name, monkeypatch):
    prog = PROGRAMS[name]
    calls, leaves_plain = _oracle(prog, monkeypatch)
    t, leaves_rec = _recorded(prog)
    assert engine(t) == ("torch", torch.__version__)
    assert invariants(t) == []
    assert _relative(_trace_order(t)) == _relative(calls)
    # gradients: bit-identical with recording on and off, and the trace's .grad stats are theirs
    for a, b in zip(leaves_plain, leaves_rec):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            assert torch.equal(a.grad, b.grad)
    last_after = {}
    for e in t.events:
        if type(e) is ev.AccumulateGradUpdate:
            last_after[e.tensor] = e.after
    # every trained leaf's final .grad has the statistics of the trace's last update of it
    trained = [x for x in leaves_rec if x.grad is not None]
    assert trained
    for x in trained:
        assert any(_close(_stats(x.grad), after) for after in last_after.values()), name


def _close(a: tuple, s: ev.Stats) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-12, abs_tol=0) for x, y in zip(a[:3], (s.norm, s.min, s.max)))


def test_reentrant_backwards_are_nested_tasks():
    for name in ("custom_reentrant", "checkpoint"):
        t, _ = _recorded(PROGRAMS[name])
        begins = t.of_kind(ev.TaskBegin)
        assert [b.reentrant_depth for b in begins] == [0, 1], name
        outer, inner = t.tasks[begins[0].task], t.tasks[begins[1].task]
        assert outer.begin.seq < inner.begin.seq < inner.end.seq < outer.end.seq
        # the inner task runs inside the outer's node: between its node_begin and node_end
        running = [e for e in t.events if type(e) is ev.NodeBegin and e.task == outer.id and e.seq < inner.begin.seq]
        assert t.nodes[running[-1].node].name in ("TwiceBackward", "CheckpointFunctionBackward")


def test_observed_and_derived_are_marked():
    t, _ = _recorded(PROGRAMS["mlp"])
    d = derived_seqs(t)
    kinds_derived = {t.events[s].kind for s in d}
    assert {"queue_push", "queue_pop", "buffer_add", "dependency_decrement", "dependencies"} <= kinds_derived
    observed = {e.kind for e in t.events if e.seq not in d}
    assert {"node_begin", "node_end", "accumulate_grad"} <= observed
    assert "node_end" not in kinds_derived  # every node that ran told its end (its post-hook)
    # a node's start is seen by a pre-hook where its moment tells something (a leaf's .grad
    # before, the first node of the task); elsewhere it is derived when the node ends
    begun = [e for e in t.events if e.kind == "node_begin"]
    for e in begun:
        name = t.nodes[e.node].name
        first = e is begun[0]
        assert (e.seq in d) == (name != "AccumulateGrad" and not first), (name, e.seq in d)


def test_names_sources_and_modules():
    t, _ = _recorded(PROGRAMS["mlp"])
    names = {x.name for x in t.tensors.values()}
    # module paths as gradviz's engine names them (issue 29 item 3)
    assert {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"} <= names
    srcs = {n.name: n.source for n in t.nodes.values()}
    assert srcs["AddmmBackward0"].endswith("torchrec_programs.py:20")  # self.fc2(h) in MLP.forward
    assert srcs["ReluBackward0"].endswith("torchrec_programs.py:19")


def test_recording_leaves_nothing_behind():
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    rec = TorchRecorder()
    with rec:
        y = (a.exp() * a).sum()
        y.backward(retain_graph=True)
    n = rec.count
    g1 = a.grad.clone()
    y.backward()  # the same graph again: no hook of ours may fire
    assert rec.count == n
    saved = rec._source._saved
    assert torch.autograd.backward is saved["backward"] and torch.autograd.grad is saved["grad"]
    assert torch.equal(a.grad, 2 * g1)
    # no TorchFunctionMode of ours is left
    from torch.overrides import _get_current_function_mode_stack

    assert not any(isinstance(m, SourceMode) for m in _get_current_function_mode_stack())


def test_anomaly_error_names_node_and_source():
    a = torch.tensor([0.0, 1.0], requires_grad=True)
    with TorchRecorder() as rec, torch.autograd.detect_anomaly(check_nan=True):
        y = (a / a).sum()
        with pytest.raises(RuntimeError, match="returned nan values"):
            y.backward()
    t = rec.trace
    (an,) = t.of_kind(ev.Anomaly)
    assert t.nodes[an.node].name == "DivBackward0" and "test_torchrec.py" in an.forward
    (err,) = [e for e in t.errors if e.task is not None]
    assert err.node == an.node and err.type == "RuntimeError"


def _task_end_then_error(t):
    """The task's end and the errors that name it, in trace order, as (kind, status or node)."""
    return [(e.kind, e.status if e.kind == "task_end" else e.node)
            for e in t.events if e.kind in ("task_end", "error") and e.task is not None]


def test_an_error_raised_after_the_engine_finished_is_not_the_tasks():
    # grad(allow_unused=False) with an unused input: torch's engine runs the graph to its end,
    # then run_backward raises. Both recorders: the task ended ok, then the call failed.
    traces = {}
    for T in (torch, gradviz):
        x = T.ones(1, requires_grad=True)
        y = T.ones(1, requires_grad=True)
        with TorchRecorder() if T is torch else gradviz.record() as rec:
            with pytest.raises(RuntimeError, match="Set allow_unused=True"):
                T.autograd.grad(x * 2, [x, y], allow_unused=False)
        traces[T.__name__] = rec.trace
    for name, t in traces.items():
        assert _task_end_then_error(t) == [("task_end", "ok"), ("error", None)], name
        (err,) = [e for e in t.errors if e.task is not None]
        assert "Set allow_unused=True" in err.message, name
    # a node that raises still fails its task
    a = torch.ones(2, requires_grad=True)
    with TorchRecorder() as rec:
        out = (a * 2).sum()
        out.grad_fn.register_prehook(lambda g: (_ for _ in ()).throw(ValueError("boom")))
        with pytest.raises(ValueError):
            out.backward()
    assert [k for k, _ in _task_end_then_error(rec.trace)] == ["error", "task_end"]
    assert rec.trace.tasks[1].status == "error"


def test_trace_file_and_entry_point(tmp_path):
    p = tmp_path / "t.json"
    a = torch.ones(3, requires_grad=True)
    with gradviz.trace(p, engine="torch"):
        (a * 3).sum().backward()
    t = gradviz.load(p)
    assert engine(t)[0] == "torch" and t.execution_order(1) == ["SumBackward0", "MulBackward0", "AccumulateGrad"]
    assert derived_seqs(t) and t.status == "ok"


def test_tools_on_a_torch_trace(tmp_path):
    """info, render (and --step), replay (timeline and --step), export on a recorded nn.Module
    MLP; the picture has the forward source lines and the parameters' module names."""
    import shutil

    from click.testing import CliRunner

    from gradviz.cli import main

    script = tmp_path / "mlp.py"
    script.write_text(
        "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n"
        "loss = model(torch.randn(3, 4)).pow(2).mean()\nloss.backward()\n"
    )
    out = tmp_path / "mlp.trace.json"
    run = CliRunner()
    r = run.invoke(main, ["run", "-o", str(out), str(script)])  # imports torch, not gradviz: torch
    assert r.exit_code == 0, r.output
    t = gradviz.load(out)
    assert engine(t)[0] == "torch" and t.execution_order(1)[0] == "MeanBackward0"
    r = run.invoke(main, ["info", str(out)])
    assert r.exit_code == 0 and "engine: torch 2.13" in r.output and "derived by the recorder" in r.output
    r = run.invoke(main, ["replay", str(out)])
    assert r.exit_code == 0 and "AddmmBackward0" in r.output and "engine: torch" in r.output
    r = run.invoke(main, ["replay", str(out), "--step", "30"])
    assert r.exit_code == 0 and ("(derived, torch" in r.output or "(observed, torch" in r.output)
    r = run.invoke(main, ["export", str(out), "-o", str(tmp_path / "p.json")])
    assert r.exit_code == 0
    exported = (tmp_path / "p.json").read_text()
    assert "recorded from torch 2.13" in exported and '"origin":"derived"' in exported.replace(" ", "")
    fmt = "svg" if shutil.which("dot") else "dot"
    for extra in ([], ["--step", "25"]):
        pic = tmp_path / f"m{len(extra)}.{fmt}"
        r = run.invoke(main, ["render", str(out), "-o", str(pic), *extra])
        assert r.exit_code == 0, r.output
        text = pic.read_text()
        assert "0.weight" in text and "2.bias" in text  # module paths, as gradviz names them
        assert "mlp.py:5" in text  # the line of model(...) for the Linear/ReLU nodes
        assert "recorded from torch 2.13" in text


def test_small_gpt_records_in_full_and_renders_collapsed_fast(tmp_path, monkeypatch):
    """A 2-layer GPT on CPU: recorded in full (every node ran, faithful order) and rendered
    collapsed, in under 10 s together."""
    import shutil
    import time

    from gradviz.render import render
    from tests.torchrec_programs import gpt

    calls, _ = _oracle(gpt, monkeypatch)
    t0 = time.perf_counter()
    with TorchRecorder(tmp_path / "gpt.json"):
        gpt()
    t = gradviz.load(tmp_path / "gpt.json")
    fmt = "svg" if shutil.which("dot") else "dot"
    (pic,) = render(t, tmp_path / f"gpt.{fmt}", max_nodes=40)
    took = time.perf_counter() - t0
    assert _relative(_trace_order(t)) == _relative(calls)
    assert len(t.execution_order(1)) == len(calls[0]) > 100
    assert pic.boxes < len(t.nodes)  # collapsed
    assert took < 10, f"{took:.1f} s"


@pytest.mark.slow
def test_benchmark_runs(tmp_path):
    """benchmarks/bench_torchrec.py runs in its own process and writes its claim (no time is
    asserted here: the ratio is the benchmark's, measured on a quiet machine)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(repo / "benchmarks" / "bench_torchrec.py"), "--quick", "--json",
                           str(out)], cwd=repo, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert [w["key"] for w in result["workloads"]] == ["torchrec_mlp"]


def test_recording_does_not_keep_forward_graphs_alive():
    """The forward's source lines are noted without holding the graph: an activation saved by a
    graph that is dropped unbackwarded is freed during the recording."""
    import gc
    import weakref

    a = torch.randn(100, requires_grad=True)
    with TorchRecorder():
        h = a.exp()
        r = weakref.ref(h)
        loss = (h * h).sum()
        del h, loss
        gc.collect()
        assert r() is None


def test_backward_on_another_thread_and_hooks_gone_after_an_error():
    import threading

    a = torch.randn(4, requires_grad=True)
    with TorchRecorder() as rec:
        y = (a * 3).sum()
        th = threading.Thread(target=y.backward, name="worker")
        th.start()
        th.join()
        z = (a / torch.zeros(4)).sum()
        with pytest.raises(RuntimeError):
            z.backward(torch.ones(2))  # a gradient of the wrong shape: torch raises
    t = rec.trace
    (worker,) = [th for th in t.threads.values() if th.name == "worker"]
    assert worker.role == "caller"
    runs = [e for e in t.events if type(e) is ev.NodeBegin and e.task == 1]
    assert runs and all(e.tid == worker.tid for e in runs)
    assert t.tasks[2].status == "error"
    n = rec.count
    (a * a).sum().backward()  # after the recording: nothing of ours fires
    assert rec.count == n
