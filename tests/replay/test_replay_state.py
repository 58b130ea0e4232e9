"""The replay fold against hand-checked engine states (step N = first N events applied)."""

from __future__ import annotations

import random

import pytest
from trace_builders import diamond, failing, pruned, reentrant, two_devices, unbind_diamond

from gradviz.replay.state import EngineState, Replayer, SlotState, apply, fold, state_at
from gradviz.trace.model import Trace


def canon(s: EngineState) -> tuple:
    """Everything observable in a state, as plain data, to compare two states."""
    tasks = tuple(
        (t.id, t.status, t.outstanding, tuple(sorted(t.deps.items())), tuple(t.buffers.items()),
         tuple(sorted(t.captured.items())), t.errors, t.runner, t.executed)
        for t in (s.tasks[i] for i in s.tasks)
    )
    queues = tuple((q.id, tuple(q.entries)) for q in s.queues.values())
    return (s.step, tuple(s.nodes.items()), tuple(sorted(s.threads.items())), queues, tasks, s.errors)


def entries(s: EngineState, q: int) -> list[tuple[int | None, tuple[int, int, int]]]:
    return [(e.node, e.priority) for e in s.queues[q].entries]


# --- the diamond: a (leaf); b = a*2; c = a*3; d = b + c; d.sum().backward() ----------------------
# 1 AccumulateGrad(a), 2 MulBackward0(b, seq 0), 3 MulBackward0(c, seq 1), 4 AddBackward0, 5 SumBackward0


@pytest.fixture(scope="module")
def dia() -> Trace:
    return diamond()


def test_step_zero_is_empty(dia: Trace) -> None:
    s = state_at(dia, 0)
    assert s.step == 0 and s.last is None
    assert len(s.nodes) == 0 and not s.threads and not s.queues and len(s.tasks) == 0


def test_forward_only_nodes_are_unreached(dia: Trace) -> None:
    s = state_at(dia, 16)  # every node and edge created, backward not started
    assert {n: ns.state for n, ns in s.nodes.items()} == dict.fromkeys(range(1, 6), "unreached")
    assert s.nodes[2].name == "MulBackward0" and s.nodes[2].sequence_nr == 0
    assert s.threads[1].name == "MainThread" and s.threads[1].frames == ()
    assert s.queues[1].name == "cpu@MainThread" and s.queues[1].entries == []


def test_task_begins_with_dependency_counts(dia: Trace) -> None:
    s = state_at(dia, 18)  # task_begin, dependencies
    t = s.tasks[1]
    assert t.status == "running" and t.outstanding == 0
    assert t.deps == {1: 2, 2: 1, 3: 1, 4: 1}
    assert s.threads[1].tasks == (1,)


def test_root_queued_then_running(dia: Trace) -> None:
    s = state_at(dia, 20)  # root buffer_add + queue_push
    assert s.nodes[5].state == "queued" and s.nodes[5].queue == 1
    assert entries(s, 1) == [(5, (2, 0, 3))]
    assert s.tasks[1].outstanding == 1
    assert s.tasks[1].buffers[5].slots == (SlotState("set", 1, (None,)),)

    s = state_at(dia, 22)  # queue_pop, node_begin
    assert s.nodes[5].state == "running" and s.nodes[5].tid == 1 and s.nodes[5].depth == 0
    assert s.threads[1].running == (1, 5, 0)
    assert entries(s, 1) == []
    assert 5 not in s.tasks[1].buffers  # the popped buffer now belongs to the running node


def test_queue_in_pop_order(dia: Trace) -> None:
    s = state_at(dia, 35)  # AddBackward0 pushed b's node (seq 0) then c's node (seq 1)
    # Higher sequence_nr pops first: c's MulBackward0 (3) before b's (2).
    assert entries(s, 1) == [(3, (2, 0, 1)), (2, (2, 0, 0))]
    assert [s.nodes[n].state for n in (2, 3, 4, 5)] == ["queued", "queued", "done", "done"]
    assert s.tasks[1].outstanding == 2  # 4 pushes, 2 nodes evaluated


def test_parked_with_one_contribution(dia: Trace) -> None:
    s = state_at(dia, 42)  # c's MulBackward0 ran and fed AccumulateGrad, which parks
    acc = s.nodes[1]
    assert acc.state == "parked" and acc.filled == 1 and acc.num_inputs == 1 and acc.task == 1
    t = s.tasks[1]
    assert list(t.not_ready) == [1]
    buf = t.not_ready[1]
    assert buf.slots == (SlotState("set", 1, (3,)),) and buf.remaining == 1
    assert t.deps[1] == 1 and t.waiting == {1: 1}
    assert s.nodes[3].state == "released"  # ran without retain_graph: saved tensors freed
    assert s.nodes[2].state == "queued" and entries(s, 1) == [(2, (2, 0, 0))]


def test_second_gradient_accumulates_then_ready(dia: Trace) -> None:
    s = state_at(dia, 48)  # b's MulBackward0 ran: second gradient summed into slot 0
    assert s.tasks[1].buffers[1].slots == (SlotState("accumulated", 2, (3, 2)),)
    assert s.nodes[1].state == "parked" and s.tasks[1].deps[1] == 0

    s = state_at(dia, 49)  # not_ready_take: the moment it becomes ready
    assert s.nodes[1].state == "ready" and s.nodes[1].queue is None
    assert s.tasks[1].not_ready == {}

    s = state_at(dia, 50)  # pushed to the cpu queue
    assert s.nodes[1].state == "queued" and s.nodes[1].queue == 1
    assert entries(s, 1) == [(1, (2, 0, 2**64 - 1))]


def test_end_of_task(dia: Trace) -> None:
    s = state_at(dia, len(dia))
    t = s.tasks[1]
    assert t.status == "ok" and t.outstanding == 0 and t.executed == 5 and t.end_step == 55
    assert s.threads[1].tasks == () and s.threads[1].frames == ()
    assert {n: ns.state for n, ns in s.nodes.items()} == {
        1: "done", 2: "released", 3: "released", 4: "done", 5: "done",
    }
    assert s.status == "ok"


# --- a join with two InputBuffer slots: one set, one missing -----------------------------------
# 1 AccumulateGrad(x), 2 UnbindBackward0 (2 inputs), 3 MulBackward0 -> (2,0), 4 ExpBackward0 -> (2,1)


def test_partially_filled_buffer_and_the_moment_it_is_ready() -> None:
    tr = unbind_diamond()
    s = state_at(tr, 35)  # ExpBackward0 fed slot 1; slot 0 still missing
    ub = s.nodes[2]
    assert ub.state == "parked" and ub.filled == 1 and ub.num_inputs == 2
    assert s.tasks[1].not_ready[2].slots == (SlotState("missing"), SlotState("set", 1, (4,)))
    assert s.tasks[1].not_ready[2].remaining == 1
    assert s.nodes[3].state == "queued"  # the node whose gradient is missing waits in the queue

    s = state_at(tr, 41)  # MulBackward0's gradient arrives in slot 0, still in not_ready
    assert s.nodes[2].state == "parked" and s.nodes[2].filled == 2
    s = state_at(tr, 42)  # not_ready_take
    assert s.nodes[2].state == "ready" and s.nodes[2].filled == 2
    assert s.tasks[1].not_ready == {}
    assert s.tasks[1].buffers[2].slots == (SlotState("set", 1, (3,)), SlotState("set", 1, (4,)))
    s = state_at(tr, 45)  # popped and running
    assert s.nodes[2].state == "running" and 2 not in s.tasks[1].buffers


# --- reentrant, devices, pruning, errors ---------------------------------------------------------


def test_reentrant_task_nests_on_the_same_thread_and_queue() -> None:
    tr = reentrant()
    s = state_at(tr, 36)  # inner task 2's SumBackward0 runs inside CheckpointFunctionBackward
    th = s.threads[1]
    assert th.tasks == (1, 2)
    assert th.frames == ((1, 3, 0), (2, 7, 1)) and th.depth == 1
    assert s.tasks[2].reentrant_depth == 1 and s.tasks[2].cpu_queue == s.tasks[1].cpu_queue == 1
    s = state_at(tr, 40)
    assert entries(s, 1) == [(6, (2, 1, 3))]
    s = state_at(tr, 52)  # inner task done; outer node still running
    assert s.tasks[2].status == "ok" and s.threads[1].tasks == (1,)
    assert s.threads[1].frames == ((1, 3, 0),)


def test_device_worker_runs_device_nodes() -> None:
    tr = two_devices()
    s = state_at(tr, 28)
    assert s.threads[2].role == "device_worker" and s.threads[2].running == (1, 4, 0)
    assert s.nodes[4].state == "running" and s.nodes[4].tid == 2
    assert s.threads[1].frames == () and s.threads[1].tasks == (1,)
    s = state_at(tr, 39)  # the device thread pushed back onto the cpu queue
    assert entries(s, 1) == [(2, (2, 0, 0))] and entries(s, 2) == []


def test_exec_info_prunes_unneeded_nodes() -> None:
    tr = pruned()
    s = state_at(tr, 15)
    assert s.nodes[2].state == "pruned" and s.tasks[1].needed == frozenset({1, 3, 4})
    s = state_at(tr, len(tr))
    assert s.nodes[2].state == "pruned" and s.nodes[1].state == "done"


def test_error_marks_node_and_task() -> None:
    tr = failing()
    s = state_at(tr, 23)
    assert s.nodes[2].state == "error"
    assert [(e.node, e.type, e.step) for e in s.errors] == [(2, "RuntimeError", 23)]
    s = state_at(tr, 24)
    assert s.tasks[1].status == "error" and s.tasks[1].error == "RuntimeError: LogBackward0 failed"
    assert s.nodes[1].state == "unreached"


def test_anomaly_is_recorded() -> None:
    s = state_at(failing(nan=True), 10_000)
    assert [e.kind for e in s.errors] == ["anomaly"] and "nan" in s.errors[0].message


# --- random access equals the fold, forward and backward ----------------------------------------


@pytest.mark.parametrize("build", [diamond, reentrant, two_devices, unbind_diamond, pruned])
@pytest.mark.parametrize("every", [1, 3, 7, 1000])
def test_random_access_equals_fold(build, every: int) -> None:
    tr = build()
    r = Replayer(tr, every=every)
    expected = []
    s = EngineState()
    expected.append(canon(s.copy()))
    for e in tr.events:
        apply(s, e)
        expected.append(canon(s.copy()))
    order = list(range(len(tr) + 1))
    random.Random(every).shuffle(order)
    order += list(range(len(tr), -1, -1))  # stepping backward
    for n in order:
        assert canon(r.state_at(n)) == expected[n], n


def test_snapshots_do_not_change_later() -> None:
    tr = diamond()
    r = Replayer(tr, every=5)
    early = r.state_at(42)
    before = canon(early)
    r.state_at(len(tr))
    r.state_at(43)
    assert canon(early) == before
    assert canon(fold(tr.events[:42])) == before


def test_step_is_clamped() -> None:
    tr = diamond()
    assert state_at(tr, -5).step == 0
    assert state_at(tr, 10**9).step == len(tr)


def test_checkpoints_on_a_long_trace_equal_the_fold() -> None:
    from tests.synth import synthetic_trace

    tr = synthetic_trace(30_000)
    r = Replayer(tr, every=997)
    rng = random.Random(7)
    steps = sorted(rng.randrange(len(tr) + 1) for _ in range(12))
    s = EngineState()
    done = 0
    for n in steps:  # one forward fold, compared with random access at each sampled step
        for e in tr.events[done:n]:
            apply(s, e)
        done = n
        assert canon(r.state_at(n)) == canon(s), n
    for n in reversed(steps):  # and again backward, after the replayer has moved forward
        assert r.state_at(n).step == n
    end = r.state_at(len(tr))
    assert all(end.tasks[t].status == "ok" and end.tasks[t].outstanding == 0 for t in end.tasks)
    assert all(not q.entries for q in end.queues.values())


def test_wakeup_and_shutdown_tasks_pop_before_node_tasks() -> None:
    from gradviz.trace import events as ev
    from tests.synth import TraceBuilder

    b = TraceBuilder()
    n = b.op("MulBackward0", [None])
    push = dict(queue=b.cpu_queue, device="cpu")
    b.emit(ev.QueuePush, **push, task=1, node=n, what="node", priority=(2, 0, 0), size=1)
    b.emit(ev.QueuePush, **push, task=1, node=None, what="wakeup", priority=(1, 0, 0), size=2)
    b.emit(ev.QueuePush, **push, task=None, node=None, what="shutdown", priority=(0, 0, 0), size=3)
    s = fold(b.events)
    assert [e.what for e in s.queues[b.cpu_queue].entries] == ["shutdown", "wakeup", "node"]
    b.emit(ev.QueuePop, **push, task=None, node=None, what="shutdown", priority=(0, 0, 0), size=2)
    b.emit(ev.QueuePop, **push, task=1, node=None, what="wakeup", priority=(1, 0, 0), size=1)
    s = fold(b.events)
    assert [(e.what, e.node) for e in s.queues[b.cpu_queue].entries] == [("node", n)]


def test_replay_shows_next_the_entry_the_engine_pops_next_equal_keys_too() -> None:
    # Twelve leaves made ready together (AccumulateGrads share one key) and a diamond: at every
    # queue_pop the replayed queue's first entry is the one popped. Equal keys pop in the heap's
    # own order (1, 3, 5, 2, 4 for five pushed in order), not by push order.
    import gradviz
    from gradviz.trace import events as ev

    xs = [gradviz.ones(2, requires_grad=True) for _ in range(12)]
    with gradviz.record() as rec:
        (gradviz.stack(xs[:8]).sum() * gradviz.stack(xs[6:]).prod()).backward()
    s = EngineState()
    pops = ties = 0
    for e in rec.trace.events:
        if isinstance(e, ev.QueuePop):
            first = s.queues[e.queue].entries[0]
            assert (first.task, first.node, first.what) == (e.task, e.node, e.what), e
            pops += 1
            ties += sum(1 for x in s.queues[e.queue].entries if x.priority == first.priority) > 1
        apply(s, e)
    assert pops > 12 and ties
