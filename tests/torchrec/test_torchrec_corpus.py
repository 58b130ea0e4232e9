"""The torch recorder over the real-program corpus (tests/corpus/programs/, real torch 2.13).

Each program runs twice in forked children of one server that imported torch once: plain, and
recorded by gradviz's TorchRecorder. Both runs carry the corpus observer (tests/corpus/observer.py,
which sees torch's order through Node pre-hooks), extended here with each node's _sequence_nr().
Per outermost backward/grad call, the recorded TRACE must equal the PLAIN run's torch:
- node names, _sequence_nr() and next_functions (the graph walked from the task's roots),
- the execution order (the task's node_begin events against torch's pre-hook order),
- each leaf's .grad statistics (the trace's accumulate_grad ``after``; grad()'s captured_grad);
and recording must leave no trace: the recorded run's losses and leaf gradients (sums, norms,
extremes, 16 sampled values) are bit-identical to the plain run's, and so are torch's own sequence
numbers (recording makes no graph node). Reentrant calls (checkpoint, a backward inside a
backward) become nested tasks, which the check below proves by depth.

    python tests/torchrec/test_torchrec_corpus.py --serve      (the fork server the test talks to)
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
TIMEOUT_S = 120


# -- the child: one program, plain or recorded ---------------------------------------------------
def _child(program: str, mode: str, out: str) -> None:
    import random
    import runpy
    import warnings

    import numpy as np
    import torch

    sys.path.insert(0, str(CORPUS))
    import observer

    seqs: list[list[int]] = []
    walk = observer._walk

    def walk_seq(roots: list[Any]) -> tuple[list[Any], list[list[Any]]]:
        nodes, edges = walk(roots)
        seqs.append([n._sequence_nr() for n in nodes])
        return nodes, edges

    observer._walk = walk_seq
    rec = None
    if mode == "recorded":
        from gradviz.torchrec import TorchRecorder

        rec = TorchRecorder(None).start()  # first: the observer's wrappers call the recorder's
    observer.install()
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    result: dict[str, Any] = {"status": "ok"}
    sys.argv = [program]
    sys.path.insert(0, os.path.dirname(program))
    warnings.simplefilter("ignore")
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            result.update(status="error", message=f"SystemExit({e.code!r})")
    except BaseException as e:  # noqa: BLE001 - every ending is a result
        result.update(status="error", message=f"{type(e).__name__}: {e}")
    if rec is not None:
        rec.stop()
        result["tasks"] = _tasks(rec.trace.events)
    for r, s in zip(observer.records, seqs):
        r["seq"] = s
    result["records"] = observer.records
    with open(out, "w") as f:
        json.dump(result, f)


def _tasks(events: list[Any]) -> list[dict[str, Any]]:
    """The trace in the observer's terms, per task: nodes walked depth first from the roots
    through the edges, their names, sequence numbers, edges and the order they began in."""
    from gradviz.trace import events as ev

    name: dict[int, str] = {}
    seq: dict[int, int] = {}
    nexts: dict[int, list[tuple[int | None, int]]] = {}
    tasks: dict[int, dict[str, Any]] = {}
    for e in events:
        t = type(e)
        if t is ev.NodeCreated:
            name[e.node], seq[e.node], nexts[e.node] = e.name, e.sequence_nr, []
        elif t is ev.EdgeCreated:
            nexts[e.src].append((e.dst, e.input_nr))
        elif t is ev.TaskBegin:
            roots = [n for n, _ in e.roots if name[n] != "AccumulateGrad"]  # the observer walks grad_fns
            tasks[e.task] = {"depth": e.reentrant_depth, "roots": roots, "begun": [], "after": {}, "captured": {}}
        elif t is ev.NodeBegin:  # observed, or derived where no pre-hook saw it (its order checked all the same)
            tasks[e.task]["begun"].append(e.node)
        elif t is ev.AccumulateGradUpdate:
            tasks[e.task]["after"][e.node] = _stats(e.after)
        elif t is ev.CapturedGrad:
            tasks[e.task]["captured"][e.index] = _stats(e.stats)
        elif t is ev.TaskEnd:
            tasks[e.task]["status"] = e.status
        elif t is ev.Error and e.task is not None:
            tasks[e.task]["raised"] = True  # the call raised (in its engine run or after it)
    out = []
    for task in tasks.values():
        nodes: list[int] = []
        index: dict[int, int] = {}
        stack = list(reversed(task["roots"]))
        while stack:
            n = stack.pop()
            if n in index:
                continue
            index[n] = len(nodes)
            nodes.append(n)
            stack.extend(d for d, _ in reversed(nexts[n]) if d is not None and d not in index)
        out.append({
            "depth": task["depth"],
            "status": task.get("status"),
            "raised": task.get("raised", False),
            "nodes": [name[n].rsplit("::", 1)[-1] for n in nodes],
            "seq": [seq[n] for n in nodes],
            "edges": [[[index.get(d, -2) if d is not None else -1, nr] for d, nr in nexts[n]] for n in nodes],
            # the observer hooks only the nodes it walks from grad_fns (not a leaf root's)
            "order": [index[n] for n in task["begun"] if n in index],
            "leaf_after": [task["after"].get(n) for n in nodes if name[n].endswith("AccumulateGrad")],
            "captured": [task["captured"].get(i) for i in range(len(task["captured"]))],
        })
    return out


def _stats(s: Any) -> list[float] | None:
    return None if s is None else [s.norm, s.min, s.max]


def serve() -> int:
    """Import torch (and the recorder) once; run each "PROGRAM<TAB>MODE<TAB>OUT<TAB>DIR" line in a
    forked child, answering its exit status or "timeout"."""
    import numpy  # noqa: F401 - paid once, here
    import torch  # noqa: F401

    import gradviz.torchrec.recorder  # noqa: F401

    sys.path.insert(0, str(CORPUS))
    from run_program import run_forked

    def run(program: str, mode: str, out: str) -> int:
        _child(program, mode, out)
        return 0

    for line in sys.stdin:
        program, mode, out, cwd = line.rstrip("\n").split("\t")
        print(run_forked(cwd, TIMEOUT_S, functools.partial(run, program, mode, out)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else 2)


# -- the test ------------------------------------------------------------------------------------
import pytest  # noqa: E402
import torch  # noqa: E402 - the oracle: without it this module fails to import (never skips)

sys.path.insert(0, str(CORPUS))
import harness  # noqa: E402

_servers: dict[str, subprocess.Popen[str]] = {}
_lock = threading.Lock()
_results: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def _server(mode: str) -> subprocess.Popen[str]:
    with _lock:
        p = _servers.get(mode)
        if p is None or p.poll() is not None:
            env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
            p = _servers[mode] = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                                  stdout=subprocess.PIPE, env=env, text=True)
        return p


@atexit.register
def _close_servers() -> None:
    """End of stdin ends a server's loop; its pipes are closed here, not left to the collector
    (CI's log showed ResourceWarnings for them at exit)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for p in servers:
        for pipe in (p.stdin, p.stdout):
            if pipe is not None:
                pipe.close()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _run(name: str, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"torchrec-{name}-") as tmp:
        out = os.path.join(tmp, "result.json")
        srv = _server(mode)  # one server per mode: the two runs of a program go side by side
        assert srv.stdin is not None and srv.stdout is not None
        srv.stdin.write(f"{harness.path_of(name)}\t{mode}\t{out}\t{tmp}\n")
        srv.stdin.flush()
        status = srv.stdout.readline().strip() or "server died"
        if not os.path.exists(out):
            return {"status": "error", "message": f"runner ended without a result ({status})", "records": []}
        with open(out) as f:
            return json.load(f)


def _both(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if name not in _results:
        with ThreadPoolExecutor(2) as pool:
            p, r = pool.submit(_run, name, "plain"), pool.submit(_run, name, "recorded")
            _results[name] = p.result(), r.result()
    return _results[name]


def _close(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))


def _leaf_matches(stats: list[float] | None, summary: dict[str, Any] | None) -> bool:
    """The trace's norm is summed in the gradient's dtype (float32 over up to millions of
    values), the observer's in float64: rtol 1e-4. Extremes are values, and must be equal."""
    if stats is None or summary is None:
        return stats is None and (summary is None or "norm" not in summary)
    norm, lo, hi = stats
    if "norm" not in summary:  # an empty gradient (a program's empty batch): no values to summarise
        return norm == 0 and 0 in summary["shape"]
    return _close(norm, summary["norm"], 1e-4) and _close(lo, summary["min"], 0) and _close(hi, summary["max"], 0)


# torch.func's transforms call torch.autograd.grad on functorch's wrapper tensors: their tasks are
# not the observer's records (one per transform call), so those programs are compared on results.
TRACEABLE = [n for n in harness.programs() if not harness.uses_transforms(n)]


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACEABLE)
def test_recorded_trace_equals_torch(name: str) -> None:
    plain, recorded = _both(name)
    assert plain["status"] == "ok", plain.get("message")
    assert recorded["status"] == "ok", f"the program failed only when recorded: {recorded.get('message')}"
    pr = plain["records"]
    # the observer keeps a call that returned; the trace also has those that raised (their errors,
    # also after a task that ended ok: grad()'s allow_unused check runs once the engine finished)
    outer = [t for t in recorded["tasks"] if t["depth"] == 0 and not t["raised"]]
    assert len(outer) == len(pr), f"{len(pr)} backward/grad calls (torch) vs {len(outer)} outermost tasks (trace)"
    for i, (want, got) in enumerate(zip(pr, outer)):
        at = f"call {i + 1} ({want['kind']})"
        assert got["nodes"] == want["nodes"], f"{at}: node names"
        assert got["seq"] == want["seq"], f"{at}: _sequence_nr()"
        assert got["edges"] == want["edges"], f"{at}: next_functions"
        assert got["order"] == want["order"], f"{at}: execution order"
        if want["kind"] == "grad":
            for k, (st, sm) in enumerate(zip(got["captured"], want["grads"])):
                assert _leaf_matches(st, sm), f"{at}: grad() output {k}: trace {st} vs torch {sm}"
        else:
            for k, (st, sm) in enumerate(zip(got["leaf_after"], want["grads"])):
                if st is not None:  # a leaf the task did not reach keeps an older .grad
                    assert _leaf_matches(st, sm), f"{at}: leaf {k}'s .grad: trace {st} vs torch {sm}"


@pytest.mark.slow
@pytest.mark.parametrize("name", harness.programs())
def test_recording_leaves_no_trace(name: str) -> None:
    """Bit-identical: the recorded run's losses, leaf gradients and torch's sequence numbers."""
    plain, recorded = _both(name)
    assert recorded["status"] == plain["status"]
    assert len(recorded["records"]) == len(plain["records"])
    for i, (a, b) in enumerate(zip(plain["records"], recorded["records"])):
        for key in ("nodes", "seq", "edges", "order", "roots", "grads"):
            assert b.get(key) == a.get(key), f"call {i + 1}: {key} differ with recording on"  # func records: no graph


def test_reentrant_programs_nest() -> None:
    """A backward inside a backward is a task one level deeper, never a task of its own at depth 0:
    proven on the corpus's checkpoint-free programs by the counts above, and here on one that
    really re-enters (torch.utils.checkpoint, use_reentrant=True), recorded in this process."""
    from gradviz.torchrec import record

    lin = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    with record() as rec:
        y = torch.utils.checkpoint.checkpoint(lambda v: lin(v).tanh(), x, use_reentrant=True)
        y.sum().backward()
    from gradviz.trace import events as ev

    depths = [e.reentrant_depth for e in rec.trace.events if type(e) is ev.TaskBegin]
    assert depths == [0, 1]
