"""Recording real torch never changes the program (issue 29 items 5 and 6; issue 33 G15; issue
35 item 9): the run's status booked the same on both engines, torch's warnings point at the
user's line, tracebacks have no frame of the recorder's, torch.func programs run unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.trace import events as ev
from gradviz.trace import load
from gradviz.trace.check import invariants

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _run(tmp_path: Path, text: str, engine: str | None, name: str = "prog") -> tuple[Any, Path]:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(text))
    out = tmp_path / f"{name}.{engine}.json"
    if engine is None:  # the program on its own
        cmd = [sys.executable, str(script)]
    else:
        cmd = [sys.executable, "-m", "gradviz", "run", "--engine", engine, "-o", str(out), str(script)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=300)
    return r, out


STATUS_SCRIPT = """
import signal, sys
import torch

class Step(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if HOW == "interrupt":
            signal.raise_signal(signal.SIGINT)  # Ctrl-C while a node runs
        if HOW == "raise":
            raise ValueError("bad step")
        return g * 2

HOW = {how!r}
w = torch.ones(3, requires_grad=True)
Step.apply(w).sum().backward()
if HOW == "exit0":
    sys.exit(0)
if HOW == "exit3":
    sys.exit(3)
"""


@pytest.mark.parametrize(("how", "status", "code"), [
    ("ok", "ok", 0), ("exit0", "ok", 0), ("exit3", "error", 3), ("raise", "error", 1),
    ("interrupt", "interrupted", 130),
])
def test_the_runs_status_is_booked_the_same_on_both_engines(tmp_path, how, status, code):
    seen = {}
    for engine in ("torch", "gradviz"):
        r, out = _run(tmp_path, STATUS_SCRIPT.format(how=how), engine, name=f"s_{engine}")
        t = load(out)
        node_errors = [(e.type, t.nodes[e.node].name) for e in t.errors if e.node is not None]
        seen[engine] = (r.returncode, t.status, node_errors)
    assert seen["torch"] == seen["gradviz"], seen
    assert seen["torch"][:2] == (code, status)
    if how == "interrupt":  # the run was interrupted: no node failed
        assert seen["torch"][2] == []


TRACEBACK_SCRIPT = """
import traceback, torch

class Fail(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("fails in backward")

w = torch.ones(3, requires_grad=True)
frames = []
for call in ("backward", "autograd.backward", "grad"):
    try:
        y = Fail.apply(w).sum()
        if call == "backward":
            y.backward()
        elif call == "autograd.backward":
            torch.autograd.backward([y])
        else:
            torch.autograd.grad(y, [w])
    except ValueError as e:
        frames.append([(f.filename.rsplit("/", 1)[-1], f.name) for f in traceback.extract_tb(e.__traceback__)])
print("FRAMES", frames)
"""


def test_tracebacks_of_errors_in_backward_have_no_recorder_frames(tmp_path):
    plain, _ = _run(tmp_path, TRACEBACK_SCRIPT, None)
    recorded, _ = _run(tmp_path, TRACEBACK_SCRIPT, "torch")
    assert plain.returncode == recorded.returncode == 0, recorded.stderr
    line = [ln for ln in plain.stdout.splitlines() if ln.startswith("FRAMES")]
    assert line and line == [ln for ln in recorded.stdout.splitlines() if ln.startswith("FRAMES")]


WARNINGS_SCRIPT = """
import warnings, torch
import torch.nn.functional as F

found = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = torch.ones(3, requires_grad=True)
    y = torch.tensor(x)                      # torch's C++ warning: copy-construct from a tensor
    z = F.softmax(x.unsqueeze(0))            # a Python warning of torch's (implicit dim)
    (z.sum() + y.sum()).backward()
for w in caught:
    found.append((w.filename.rsplit("/", 1)[-1], w.lineno, str(w.message)[:40]))
print("WARNINGS", sorted(found))
"""


def test_torchs_warnings_point_at_the_users_line(tmp_path):
    plain, _ = _run(tmp_path, WARNINGS_SCRIPT, None)
    recorded, _ = _run(tmp_path, WARNINGS_SCRIPT, "torch")
    assert recorded.returncode == 0, recorded.stderr
    want = [ln for ln in plain.stdout.splitlines() if ln.startswith("WARNINGS")]
    assert want and "prog.py" in want[0]
    assert [ln for ln in recorded.stdout.splitlines() if ln.startswith("WARNINGS")] == want


def _func_program() -> dict[str, torch.Tensor]:
    from torch.func import functional_call, grad, jacrev, vmap

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x = torch.randn(3)
    jac = jacrev(net)(x)
    params = {k: v.detach() for k, v in net.named_parameters()}
    xs, ys = torch.randn(5, 3), torch.randn(5, 2)

    def loss(p, xi, yi):
        return ((functional_call(net, p, (xi,)) - yi) ** 2).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    out = net(x).sum()
    out.backward()
    return {"jac": jac, **{f"ps.{k}": v for k, v in per_sample.items()},
            **{f"grad.{k}": p.grad for k, p in net.named_parameters()}}


def test_a_torch_func_program_records_with_its_results_unchanged():
    plain = _func_program()
    with gradviz.record(engine="torch") as rec:
        recorded = _func_program()
    assert plain.keys() == recorded.keys()
    for k in plain:
        assert torch.equal(plain[k], recorded[k]), k
    t = rec.trace
    assert invariants(t) == []
    assert t.status == "ok"
    # gradients with no storage (functorch's wrappers) have no statistics: None, said so in the
    # event, never a failure; the plain backward's have theirs
    adds = [e for e in t.events if type(e) is ev.BufferAdd and e.mode != "undefined"]
    assert any(e.stats is None for e in adds) and any(e.stats is not None for e in adds)


def test_allow_unused_false_says_the_same_on_both_engines():
    msgs = {}
    for T in (torch, gradviz):
        x = T.ones(1, requires_grad=True)
        y = T.ones(1, requires_grad=True)
        with gradviz.record(engine="torch" if T is torch else "gradviz") as rec:
            with pytest.raises(RuntimeError) as info:
                T.autograd.grad(x * 2, [x, y], allow_unused=False)
        t = rec.trace
        msgs[T.__name__] = (str(info.value), [(e.kind, getattr(e, "status", None)) for e in t.events
                                              if e.kind in ("task_end", "error")], t.errors[-1].message)
    assert msgs["torch"] == msgs["gradviz"], msgs
    json.dumps(msgs)
