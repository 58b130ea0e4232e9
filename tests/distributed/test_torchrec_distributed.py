"""Recording DDP over torch.distributed: one trace per rank (issue 30).

Two ranks, gloo, CPU, loopback only. The recordings run once per module (each launch of two ranks
takes seconds) and the commands then read their traces.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradviz.cli import main
from gradviz.launch import output_for_rank, torchrun_argv
from gradviz.replay.ranks import RankError, compare_ranks, expand, merged_order, mismatches, ranks
from gradviz.trace import events as ev
from gradviz.trace import load
from gradviz.trace.ddp import of_kind, unused_parameters
from gradviz.trace.model import Trace
from gradviz.trace.ranks import header_fields, rank_env, rank_path
from tests._ddp import checksums, free_port, job_env, sh, torchrun

PROGRAMS = Path(__file__).resolve().parent.parent / "ddp_programs"


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The 2-rank training recorded with `gradviz run --nproc-per-node 2`, and run plainly."""
    d = tmp_path_factory.mktemp("ddp_job")
    shutil.copy(PROGRAMS / "train.py", d / "train.py")
    rec = sh([sys.executable, "-m", "gradviz", "run", "--nproc-per-node", "2", "-o", "out/t.trace.json",
              "train.py", "--gather"], d, job_env())
    plain = sh([*torchrun(2, free_port()), "train.py", "--gather"], d, job_env())
    return {"dir": d, "rec": rec, "plain": plain}


@pytest.fixture(scope="module")
def job_torchrun(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The same training under `torchrun -m gradviz run`, with the user's own comm hook."""
    d = tmp_path_factory.mktemp("ddp_torchrun")
    shutil.copy(PROGRAMS / "train.py", d / "train.py")
    port = free_port()
    rec = sh([*torchrun(2, port), "-m", "gradviz", "run", "train.py", "--hook", "--gather"], d, job_env(port))
    plain = sh([*torchrun(2, free_port()), "train.py", "--hook", "--gather"], d, job_env())
    return {"dir": d, "rec": rec, "plain": plain}


def _kinds(t: Trace) -> set[str]:
    return {e.kind for e in t.events}


# --- launching and recording -------------------------------------------------------------------


@pytest.mark.slow
def test_nproc_per_node_writes_one_trace_per_rank(job: dict) -> None:
    rec, d = job["rec"], job["dir"]
    assert rec.returncode == 0, rec.stderr[-3000:]
    for r in (0, 1):
        t = load(d / "out" / f"t.rank{r}.trace.json")
        h = t.header
        assert (h.rank, h.local_rank, h.world_size) == (r, r, 2)
        init = of_kind(t, ev.DistInit)
        assert [(e.backend, e.rank, e.world_size) for e in init] == [("gloo", r, 2)]
        assert init[0].clock is not None
        assert {"ddp_init", "ddp_forward", "ddp_grads", "bucket_ready", "bucket_done", "collective_begin",
                "collective_end", "accumulate_grad"} <= _kinds(t)
        ops = [e.op for e in of_kind(t, ev.CollectiveBegin)]
        assert ops.count("all_reduce") >= 3 and ops[-3:] == ["all_gather", "broadcast", "barrier"]
        assert [e.number for e in of_kind(t, ev.CollectiveBegin)] == list(range(1, len(ops) + 1))
        # every bucket's allreduce says its bucket, and every bucket ended
        buckets = of_kind(t, ev.BucketReady)
        assert all(e.hook.startswith("allreduce") for e in buckets)
        reduce = [e for e in of_kind(t, ev.CollectiveBegin) if e.bucket is not None]
        assert len(reduce) == len(buckets) and len(of_kind(t, ev.BucketDone)) == len(buckets)
        names = of_kind(t, ev.DdpInit)[0].params
        assert names == ("body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias", "head.weight", "head.bias")
        assert all(e.ready == tuple(range(6)) for e in of_kind(t, ev.DdpGrads))
    assert not (d / "out" / "t.trace.json").exists()


@pytest.mark.slow
def test_recording_does_not_change_the_results(job: dict, job_torchrun: dict) -> None:
    for j in (job, job_torchrun):
        rec, plain = j["rec"], j["plain"]
        assert plain.returncode == 0, plain.stderr[-3000:]
        assert rec.returncode == 0, rec.stderr[-3000:]
        got, want = checksums(rec.stdout), checksums(plain.stdout)
        assert set(want) == {"0", "1"} and got == want


@pytest.mark.slow
def test_torchrun_m_gradviz_run_wraps_the_users_comm_hook(job_torchrun: dict) -> None:
    rec, d = job_torchrun["rec"], job_torchrun["dir"]
    assert rec.returncode == 0, rec.stderr[-3000:]
    traces = [load(d / f"train.rank{r}.trace.json") for r in (0, 1)]
    for t in traces:
        hooks = {e.hook for e in of_kind(t, ev.BucketReady)}
        assert hooks == {"torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook"}
        assert {"bucket_ready", "collective_begin", "collective_end"} <= _kinds(t)
    rs = ranks(traces)
    assert [r.rank for r in rs] == [0, 1] and mismatches(rs) == []


# --- the commands on both traces ---------------------------------------------------------------


@pytest.fixture
def rank_files(job: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    assert job["rec"].returncode == 0, job["rec"].stderr[-3000:]
    for r in (0, 1):
        shutil.copy(job["dir"] / "out" / f"t.rank{r}.trace.json", tmp_path)
    monkeypatch.chdir(tmp_path)
    return ["t.rank0.trace.json", "t.rank1.trace.json"]


def cli(*args: str) -> object:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_info_lists_the_ranks(rank_files: list[str]) -> None:
    r = cli("info", *rank_files)
    assert r.exit_code == 0, r.output
    assert "2 rank traces" in r.output and "gloo" in r.output and "lined up on every rank" in r.output
    r = cli("info", "t.rank*.trace.json", "--json")  # a quoted glob
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["ranks"]
    assert [(x["rank"], x["world_size"], x["backend"]) for x in rows] == [(0, 2, "gloo"), (1, 2, "gloo")]
    assert all(x["buckets_ready"] > 0 and x["collectives"] > 0 for x in rows)


@pytest.mark.slow
def test_replay_steps_through_the_merged_order(rank_files: list[str]) -> None:
    r = cli("replay", *rank_files, "--step", "300", "--width", "100")
    assert r.exit_code == 0, r.output
    assert "step 300 of" in r.output and "rank 0: its step" in r.output and "rank 1: its step" in r.output
    got = [int(n) for n in re.findall(r"rank \d: its step (\d+) of", r.output)]
    assert sum(got) == 300
    whole = cli("replay", *rank_files, "--no-pager", "--width", "100")
    assert whole.exit_code == 0 and "Collectives" in whole.output and "rank 1:" in whole.output
    assert cli("replay", *rank_files, "--step", "100000").exit_code != 0


@pytest.mark.slow
def test_export_one_process_per_rank_with_flows(rank_files: list[str]) -> None:
    r = cli("export", *rank_files, "-o", "job.json")
    assert r.exit_code == 0, r.output
    doc = json.loads(Path("job.json").read_text())
    items = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in items if e.get("name") == "process_name"}
    assert sorted(procs) == [1, 2] and procs[1].startswith("rank 0") and procs[2].startswith("rank 1")
    assert {e["pid"] for e in items} == {1, 2}
    for pid in (1, 2):
        flows = [e for e in items if e["pid"] == pid and e.get("cat") == "ddp" and e["ph"] in "sf"]
        names = {e["name"] for e in flows}
        assert names == {"grad to bucket", "bucket to collective"}
        assert any(e.get("cat") == "collective" and e["pid"] == pid for e in items)
    ids = [e["id"] for e in items if e.get("ph") == "s"]
    assert len(ids) == len(set(ids))  # flow ids do not collide across ranks


@pytest.mark.slow
def test_diff_of_two_ranks_and_render_of_one(rank_files: list[str]) -> None:
    r = cli("diff", *rank_files)
    assert "ranks: DDP's gradients per iteration, buckets and collectives agree" in r.output
    assert "structure" not in r.output  # the graphs are the same; the data differ by rank
    r = cli("render", rank_files[0], "-o", "r0.dot")
    assert r.exit_code == 0, r.output
    assert "-&gt; DDP bucket 0" in Path("r0.dot").read_text() or "-> DDP bucket 0" in Path("r0.dot").read_text()


# --- the unused-parameter failure --------------------------------------------------------------


@pytest.mark.slow
def test_unused_parameter_failure_is_named(tmp_path: Path) -> None:
    shutil.copy(PROGRAMS / "unused.py", tmp_path / "unused.py")
    port = free_port()
    plain = sh([*torchrun(2, port), "unused.py"], tmp_path, job_env(port))
    rec = sh([sys.executable, "-m", "gradviz", "run", "--nproc-per-node", "2", "unused.py"], tmp_path, job_env())
    assert rec.returncode == plain.returncode == 1  # torchrun's exit code
    assert "Expected to have finished reduction in the prior iteration" in rec.stderr
    for r in (0, 1):
        t = load(tmp_path / f"unused.rank{r}.trace.json")
        a = unused_parameters(t)
        assert a is not None
        assert (a["question"], a["reason"], a["rank"], a["iteration"]) == ("error", "unused_parameters", r, 1)
        assert a["parameters"] == ["extra.weight", "extra.bias"] and a["tensor"] == "extra.weight"
        assert a["where"].endswith("unused.py:24")
        assert "extra.weight, extra.bias" in a["text"] and "find_unused_parameters=True" in a["text"]
        assert set(a) >= {"question", "reason", "where", "node", "tensor", "text"}
        # the CLI's answer (gradviz why, issue 28): the same reason, the parameters by module path
        res = CliRunner().invoke(main, ["why", "--error", "--json", str(tmp_path / f"unused.rank{r}.trace.json")])
        assert res.exit_code == 0, res.output
        j = json.loads(res.output)
        assert (j["reason"], j["tensor"]) == ("unused_parameters", "extra.weight")
        assert j["where"].endswith("unused.py:24") and "extra.weight, extra.bias" in j["text"]


@pytest.mark.slow
def test_unused_parameter_in_a_later_iteration_names_its_bucket(tmp_path: Path) -> None:
    shutil.copy(PROGRAMS / "unused_later.py", tmp_path / "unused_later.py")
    rec = sh([sys.executable, "-m", "gradviz", "run", "--nproc-per-node", "2", "unused_later.py"], tmp_path,
             job_env())
    assert rec.returncode == 1
    a = unused_parameters(load(tmp_path / "unused_later.rank1.trace.json"))
    assert a is not None and (a["rank"], a["iteration"]) == (1, 2)
    assert a["parameters"] == ["b.weight", "b.bias"]
    assert a["buckets"] == [{"bucket": 0, "missing": ["b.weight", "b.bias"]}]
    assert "bucket 0" in a["text"] and a["where"].endswith("unused_later.py:30")


# --- without launching -------------------------------------------------------------------------


def test_rank_names_and_environment() -> None:
    assert rank_path("t.trace.json", 1) == "t.rank1.trace.json"
    assert rank_path("out/run.json", 0) == "out/run.rank0.json"
    assert rank_path("out/run", 3) == "out/run.rank3"
    assert rank_env({}) is None and header_fields({}) == {}
    env = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"}
    assert header_fields(env) == {"rank": 3, "local_rank": 1, "world_size": 4}
    assert output_for_rank("x.trace.json", env) == "x.rank3.trace.json"
    assert output_for_rank("x.trace.json", {}) == "x.trace.json"
    assert "--standalone" in torchrun_argv(2, ["a.py"], {})
    argv = torchrun_argv(2, ["-o", "t.json", "a.py", "--x"], {"MASTER_PORT": "1234"})
    assert argv[-7:] == ["-m", "gradviz", "run", "-o", "t.json", "a.py", "--x"] and "1234" in argv


def _rank_trace(rank: int, collectives: list[tuple[str, int, int, int]], clock: int) -> Trace:
    """A rank's trace of collectives only: (op, number, begin ts, end ts)."""
    evs: list[ev.Event] = [ev.TraceBegin(seq=0, ts=0, tid=1, format_version=ev.FORMAT_VERSION, gradviz_version="t",
                                         numpy_version="", python_version="", platform="", devices=("cpu",),
                                         argv=(), pid=1, values=False, rank=rank, world_size=2),
                           ev.ThreadStart(seq=1, ts=1, tid=1, name="MainThread", device=None, role="caller"),
                           ev.DistInit(seq=2, ts=clock, tid=1, backend="gloo", rank=rank, world_size=2, clock=clock,
                                       wall=None)]
    timed = []
    for op, n, b, e in collectives:
        timed.append((b, ev.CollectiveBegin, dict(op=op, group="0", group_size=2, number=n, shape=None, dtype=None,
                                                   bytes=0, async_op=False)))
        timed.append((e, ev.CollectiveEnd, dict(op=op, group="0", number=n, status="ok")))
    for ts, cls, f in sorted(timed, key=lambda x: x[0]):
        evs.append(cls(seq=len(evs), ts=ts, tid=1, **f))
    return Trace(evs, path=f"j.rank{rank}.trace.json")


def test_merge_aligns_clocks_and_no_collective_ends_before_every_rank_began_it() -> None:
    # rank 1 began recording 1000 ns later: its start barrier reads 1000 less
    a = _rank_trace(0, [("all_reduce", 1, 5000, 5100)], clock=2000)
    b = _rank_trace(1, [("all_reduce", 1, 5050, 5060)], clock=1000)  # on rank 0's clock: 6050
    rs = ranks([b, a])
    assert [r.rank for r in rs] == [0, 1] and [r.shift for r in rs] == [0, 1000]
    order = merged_order(rs)
    assert sorted(order) == sorted((i, k) for i, r in enumerate(rs) for k in range(len(r.trace.events)))
    kinds = [(rs[i].rank, rs[i].trace.events[k].kind) for i, k in order]
    end0 = kinds.index((0, "collective_end"))
    assert kinds.index((1, "collective_begin")) < end0  # rank 0's clock said 5100 < 6050: it waited
    assert mismatches(rs) == []
    c = _rank_trace(1, [("broadcast", 1, 5050, 5060)], clock=1000)
    assert "different collectives" in mismatches(ranks([a, c]))[0]
    with pytest.raises(RankError, match="two traces are rank 0"):
        ranks([a, a])


def test_a_rank_that_stopped_and_a_rank_whose_graph_differs() -> None:
    a = _rank_trace(0, [("all_reduce", 1, 5000, 5100), ("all_reduce", 2, 6000, 6100)], clock=0)
    b = _rank_trace(1, [("all_reduce", 1, 5000, 5100)], clock=0)  # hangs before #2
    assert mismatches(ranks([a, b])) == ["group 0 collective #2 (rank 0: all_reduce) never called by rank 1"]

    def with_grads(t: Trace, ready: tuple[int, ...]) -> Trace:
        evs = list(t.events)
        evs.append(ev.DdpInit(seq=len(evs), ts=9000, tid=1, ddp=1, params=("a.weight", "b.weight"), tensors=(),
                              bucket_cap=0, find_unused=False, group="0"))
        evs.append(ev.DdpGrads(seq=len(evs), ts=9001, tid=1, ddp=1, iteration=1, ready=ready, buckets=(0,)))
        return Trace(evs, path=t.path)

    a = _rank_trace(0, [("all_reduce", 1, 5000, 5100)], clock=0)
    b = _rank_trace(1, [("all_reduce", 1, 5000, 5100)], clock=0)
    assert compare_ranks(with_grads(a, (0, 1)), with_grads(b, (0, 1))) == []
    got = compare_ranks(with_grads(a, (0, 1)), with_grads(b, (0,)))
    assert got == ["ddp 1 iteration 1: gradients only on rank 0: b.weight; only on rank 1: none"]
    assert compare_ranks(Trace(a.events[1:2]), Trace(b.events[1:2])) is None  # no rank: not a job's


def test_glob_expansion(tmp_path: Path) -> None:
    for r in (1, 0):
        (tmp_path / f"j.rank{r}.trace.json").write_text("")
    got = expand([str(tmp_path / "j.rank*.trace.json")])
    assert [os.path.basename(p) for p in got] == ["j.rank0.trace.json", "j.rank1.trace.json"]
    with pytest.raises(RankError, match="no file matches"):
        expand([str(tmp_path / "none*.json")])


def test_recorder_emit_from_a_backend_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The distributed observer's sink on the one Recorder: an event from a thread the recorder
    has not seen (gloo completes collectives on its own) gets that thread announced as "comm",
    its fields in the event's order (defaults where left out); a parameter's tensor id is the one
    its AccumulateGrad's leaf keeps; the header carries the launcher's rank fields."""
    import threading

    import torch

    from gradviz.torchrec import TorchRecorder

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    w = torch.ones(2, requires_grad=True)
    with TorchRecorder() as rec:
        src = rec._source
        tensor_id = src._dist_leaf(w, "fc.weight")
        t = threading.Thread(target=rec.emit, args=(ev.CollectiveEnd,),
                             kwargs=dict(op="all_reduce", group="0", number=1, status="ok"))
        t.start()
        t.join()
        (w * 2).sum().backward()
    tr = rec.trace
    h = tr.header
    assert (h.rank, h.local_rank, h.world_size) == (1, 0, 2)
    (end,) = [e for e in tr.events if isinstance(e, ev.CollectiveEnd)]
    assert (end.op, end.group, end.number, end.status, end.error) == ("all_reduce", "0", 1, "ok", None)
    (comm,) = [e for e in tr.events if isinstance(e, ev.ThreadStart) and e.tid == end.tid]
    assert comm.role == "comm" and comm.seq < end.seq
    (made,) = [e for e in tr.events if isinstance(e, ev.TensorCreated)]
    assert (made.tensor, made.name) == (tensor_id, "fc.weight")
    (acc,) = [e for e in tr.events if isinstance(e, ev.NodeCreated) and e.name == "AccumulateGrad"]
    assert acc.tensor == tensor_id
