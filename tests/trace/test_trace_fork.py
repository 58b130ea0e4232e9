"""A forked child (a DataLoader worker, a user's os.fork) records nothing into its parent's trace:
its steps are not the parent's engine's, the file descriptor it inherits is the parent's, and a
lock another of the parent's threads held at the fork is never released in the child.

Before: a DataLoader worker's in-place transforms spilled their events into the parent's file
(the trace read as "events are missing"), and a worker forked while the flusher held the
recorder's lock could wait on it forever (the parent then waits on the worker's batch)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from collections import Counter

import pytest

import gradviz
from gradviz.trace.file import read_events

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

ENGINES = ["gradviz", "torch"]


def _lib(engine: str):
    if engine == "torch":
        import torch

        return torch
    return gradviz


def _kinds(path) -> Counter:
    events, complete = read_events(path)
    assert complete
    return Counter(type(e).__name__ for e in events)


def _wait(pid: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child was still running after {timeout:.0f} s")


def _child_work(t) -> None:
    """What the child does: ops and in-place writes, enough rows to spill a batch, and on gradviz
    a backward each time (torch refuses a backward in a child forked after its autograd threads
    started, as they have in a test process: "Unable to handle autograd's threading in
    combination with fork-based multiprocessing")."""
    w = t.ones(3, requires_grad=True)
    for _ in range(1200):
        x = t.ones(3)
        x.mul_(2.0).add_(1.0)
        y = (w * x).cos().sum()
        if t is gradviz:
            y.backward()


def _in_child(t, tmp_path) -> None:
    """Run the child's work and exit without returning into pytest: 0, or 3 with the traceback
    left for the parent to show."""
    code = 0
    try:
        _child_work(t)
    except BaseException:  # noqa: BLE001 - the parent reports it
        (tmp_path / "child.err").write_text(traceback.format_exc())
        code = 3
    os._exit(code)


def _check_child(pid: int, tmp_path) -> None:
    code = _wait(pid)
    err = tmp_path / "child.err"
    assert code == 0, err.read_text() if err.exists() else f"the child exited with {code}"


@pytest.mark.parametrize("engine", ENGINES)
def test_forked_child_writes_nothing_to_the_parents_trace(tmp_path, engine):
    t = _lib(engine)
    path = tmp_path / "fork.trace.json"
    with gradviz.trace(path, engine=engine):
        w = t.ones(3, requires_grad=True)
        (w * 2.0).sum().backward()
        pid = os.fork()
        if pid == 0:  # the child: its steps go nowhere, and it exits as it would unrecorded
            _in_child(t, tmp_path)
        _check_child(pid, tmp_path)
        (w * 3.0).sum().backward()
    kinds = _kinds(path)
    assert kinds["TaskBegin"] == 2  # the parent's two backward calls, none of the child's
    assert kinds["VersionBump"] == 0  # none of the child's 2,400 writes
    assert kinds["TraceEnd"] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_child_forked_while_a_thread_holds_the_recorders_lock_does_not_hang(tmp_path, engine):
    t = _lib(engine)
    path = tmp_path / "lock.trace.json"
    with gradviz.trace(path, engine=engine) as rec:
        w = t.ones(3, requires_grad=True)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with rec._lock:  # what the flusher does every interval
                held.set()
                release.wait(30)

        th = threading.Thread(target=hold)
        th.start()
        held.wait(30)
        pid = os.fork()
        if pid == 0:
            _in_child(t, tmp_path)
        try:
            _check_child(pid, tmp_path)
        finally:
            release.set()
            th.join()
        (w * 3.0).sum().backward()
    assert _kinds(path)["TaskBegin"] == 1


DATALOADER = """
import torch
from torch.utils.data import DataLoader, Dataset

class Items(Dataset):
    def __len__(self):
        return 3000

    def __getitem__(self, i):
        x = torch.arange(4.0) + i
        x.sub_(x.mean()).div_(x.std() + 1e-6)  # a transform's in-place steps, in the worker
        return x, torch.tensor(i % 2)

torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(Items(), batch_size=500, num_workers=2):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print("done")
"""


@pytest.mark.slow
def test_dataloader_workers_leave_the_torch_trace_alone(tmp_path):
    (tmp_path / "loader.py").write_text(textwrap.dedent(DATALOADER))
    counts = []
    for i in range(2):
        out = tmp_path / f"loader{i}.trace.json"
        r = subprocess.run([sys.executable, "-m", "gradviz", "run", "--engine", "torch", "-o", str(out), "loader.py"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "done" in r.stdout
        kinds = _kinds(out)
        assert kinds["TaskBegin"] == 6  # the parent's six backward calls
        counts.append(sum(kinds.values()))
    assert counts[0] == counts[1]  # the same run, the same steps


@pytest.mark.parametrize("engine", ENGINES)
def test_a_forked_child_can_record_its_own_trace(tmp_path, engine):
    t = _lib(engine)
    child_path = tmp_path / "child.trace.json"
    with gradviz.trace(tmp_path / "parent.trace.json", engine=engine):
        w = t.ones(3, requires_grad=True)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                with gradviz.trace(child_path, engine=engine):
                    (w * 2.0).exp().sum()
            except BaseException:  # noqa: BLE001 - the parent reports it
                (tmp_path / "child.err").write_text(traceback.format_exc())
                code = 3
            os._exit(code)
        _check_child(pid, tmp_path)
    events, complete = read_events(child_path)
    assert complete
    assert [e.op for e in events if type(e).__name__ == "ForwardOp"][-2:] == ["exp", "sum"]
