"""The recorder against real backward passes: what it records, and that every trace is sound."""

from __future__ import annotations

import math
import threading
import warnings

import numpy as np
import pytest

import gradviz
import gradviz as torch
from gradviz.autograd.engine import get_default_engine
from gradviz.trace import events as ev
from gradviz.trace import load, record
from gradviz.trace.check import invariants
from gradviz.trace.recorder import stats_of


def sound(trace):  # every recorded trace in these tests must pass the invariants
    problems = invariants(trace)
    assert problems == [], "\n".join(problems)
    return trace


def test_simple_backward_records_every_step_in_order():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        (a * a).sum().backward()
    t = sound(rec.trace)
    assert t.execution_order() == ["SumBackward0", "MulBackward0", "AccumulateGrad"]
    assert t.status == "ok" and not t.truncated
    kinds = [e.kind for e in t.events]
    assert kinds[:2] == ["trace_begin", "thread_start"] and kinds[-1] == "trace_end"
    (leaf,) = t.tensors.values()
    assert leaf.name == "a" and leaf.shape == (2,) and leaf.dtype == "float32"
    (upd,) = t.of_kind(ev.AccumulateGradUpdate)
    assert upd.after == ev.Stats(math.sqrt(20.0), 2.0, 4.0, 0, 0)  # grad = 2a = [2, 4]
    assert all(n.source and n.source.startswith(__file__) for n in t.nodes.values() if n.name != "GraphRoot")
    assert [e.seq for e in t.events] == list(range(len(t.events)))


def test_file_recording_loads_back_equal_to_what_was_recorded(tmp_path):
    a = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    path = tmp_path / "run.trace.json"
    with gradviz.trace(path) as rec:
        b = a * 2
        c = a.exp()
        (b + c).sum().backward()
    t = load(path)
    sound(t)
    assert rec.trace.events == t.events
    assert t.execution_order()[0] == "SumBackward0"
    assert t.execution_order()[-1] == "AccumulateGrad"


def test_nothing_recorded_outside_and_probe_restored():
    engine = get_default_engine()
    assert engine.probe is None
    a = torch.tensor([1.0], requires_grad=True)
    rec = record()
    (a * 3).sum().backward()  # before: not recorded
    with rec:
        assert engine.probe is rec
    (a * 3).sum().backward()  # after: not recorded
    assert engine.probe is None
    assert [e.kind for e in rec.trace.events] == ["trace_begin", "thread_start", "trace_end"]


def test_nested_recording_is_refused_and_leaves_the_outer_one_working():
    a = torch.tensor([1.0], requires_grad=True)
    with record() as outer:
        with pytest.raises(RuntimeError, match="a gradviz recording is already active"):
            with record():
                pass
        (a * a).sum().backward()
    sound(outer.trace)
    assert len(outer.trace.tasks) == 1
    with record():  # and a new one may start after
        pass


def test_graph_made_before_recording_is_announced_on_first_use():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (a * a + a).sum()  # made outside the recording
    with record() as rec:
        loss.backward()
    t = sound(rec.trace)
    assert sorted(n.name for n in t.nodes.values()) == [
        "AccumulateGrad", "AddBackward0", "MulBackward0", "SumBackward0",
    ]
    assert all(n.source is None for n in t.nodes.values())  # made before: no source recorded
    assert len(t.tensors) == 1


def test_two_devices_record_worker_thread_and_queues():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, 0.5, 0.5], requires_grad=True)
    with record() as rec:
        y = (x.to("virtual:0") * 2).exp()
        (y.to("cpu") * w).sum().backward()
    t = sound(rec.trace)
    roles = {th.role: th for th in t.threads.values()}
    assert roles["device_worker"].device == "virtual:0"
    assert roles["caller"].name == threading.current_thread().name
    worker = roles["device_worker"].tid
    on_worker = {t.nodes[e.node].name for e in t.of_kind(ev.NodeBegin) if e.tid == worker}
    assert "ExpBackward0" in on_worker
    assert {q.device for q in t.queues.values()} == {"cpu", "virtual:0"}


def test_grad_with_inputs_records_exec_info_and_captures():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    with record() as rec:
        y = (x * w).sum()
        (g,) = gradviz.autograd.grad(y, [x])
    t = sound(rec.trace)
    (info,) = t.of_kind(ev.ExecInfo)
    assert info.captured and info.captured[0][2] == 0
    (cap,) = t.of_kind(ev.CapturedGrad)
    assert cap.stats == stats_of(np.array([3.0, 4.0]))
    assert "AccumulateGrad" not in t.execution_order()


def test_reentrant_backward_is_recorded_as_a_nested_task():
    class Reentrant(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with gradviz.enable_grad():
                inner = x.detach().requires_grad_()
                (inner * inner).sum().backward()
            return g * inner.grad

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        Reentrant.apply(a).sum().backward()
    t = sound(rec.trace)
    depths = sorted(task.begin.reentrant_depth for task in t.tasks.values())
    assert depths == [0, 1]
    assert all(task.status == "ok" for task in t.tasks.values())


def test_error_in_backward_is_recorded_and_the_trace_still_sound():
    class Boom(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            raise ValueError("no gradient for you")

    a = torch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="no gradient"):
        with record() as rec:
            Boom.apply(a).sum().backward()
    t = sound(rec.trace)
    assert t.status == "error" and "no gradient for you" in t.end.error
    errors = t.errors
    assert errors[0].node is not None and t.nodes[errors[0].node].name == "BoomBackward"
    assert errors[-1].task is None and errors[-1].type == "ValueError"  # the program-level error
    (task,) = t.tasks.values()
    assert task.status == "error"


def test_keyboard_interrupt_marks_the_trace_interrupted():
    with pytest.raises(KeyboardInterrupt):
        with record() as rec:
            raise KeyboardInterrupt
    assert rec.trace.status == "interrupted"


def test_values_are_stored_only_when_asked_and_only_for_small_tensors():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    big = torch.ones(100, requires_grad=True)
    with record(values=True) as rec:
        (a * a).sum().backward()
        (big * 2).sum().backward()
    t = sound(rec.trace)
    assert t.header.values is True
    upd = t.of_kind(ev.AccumulateGradUpdate)
    assert upd[0].values == [2.0, 4.0]
    assert upd[1].values is None  # 100 elements: stats only
    with record() as rec2:
        (a * a).sum().backward()
    assert all(getattr(e, "values", None) is None for e in rec2.trace.events[1:])  # [0]: the header flag


def test_hooks_and_retain_graph_accumulation_are_recorded():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    with record() as rec:
        b = a * 3
        b.register_hook(lambda g: seen.append(g))
        loss = b.sum()
        loss.backward(retain_graph=True)
        loss.backward()
    t = sound(rec.trace)
    hooks = t.of_kind(ev.Hook)
    assert len(hooks) == 2 and {h.hook for h in hooks} == {"tensor_pre"}
    modes = [u.mode for u in t.of_kind(ev.AccumulateGradUpdate)]
    assert modes == ["set", "accumulate"]
    assert len(seen) == 2


def test_threads_recording_concurrently_keep_seq_order(tmp_path):
    leaves = [torch.tensor([float(i), 1.0], requires_grad=True) for i in range(4)]

    def work(x):
        for _ in range(5):
            (x * x).sum().backward()

    with gradviz.trace(tmp_path / "mt.json"):
        threads = [threading.Thread(target=work, args=(x,), name=f"w{i}") for i, x in enumerate(leaves)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    t = sound(load(tmp_path / "mt.json"))
    assert len(t.tasks) == 20
    assert {th.name for th in t.threads.values()} >= {"w0", "w1", "w2", "w3"}


@pytest.mark.parametrize(
    "data, expected",
    [
        (np.array([], dtype=np.float32), (0.0, math.nan, math.nan, 0, 0)),
        (np.array([3, -4], dtype=np.int64), (5.0, -4.0, 3.0, 0, 0)),
        (np.array([True, False]), (1.0, 0.0, 1.0, 0, 0)),
        (np.array([1.0, np.nan, -np.inf], dtype=np.float32), (math.nan, -math.inf, 1.0, 1, 1)),
        (np.array([np.inf, 2.0]), (math.inf, 2.0, math.inf, 0, 1)),
        (np.array([np.nan, np.nan]), (math.nan, math.nan, math.nan, 2, 0)),
        (np.array([[1e200, -1e200]]), (math.sqrt(2) * 1e200, -1e200, 1e200, 0, 0)),
    ],
)
def test_stats(data, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarnings leak to the user
        s = stats_of(data)
    for got, want in zip((s.norm, s.min, s.max, s.nan, s.inf), expected):
        assert (math.isnan(got) and math.isnan(want)) or got == want


def test_public_names_and_the_callable_package(tmp_path):
    import gradviz.trace as trace_pkg

    assert gradviz.trace is trace_pkg and gradviz.load is load and gradviz.record is record
    assert gradviz.TraceError is trace_pkg.TraceError and issubclass(gradviz.TraceError, ValueError)
    with gradviz.trace(tmp_path / "t.json") as rec:  # the package called as the function
        pass
    assert rec.path == str(tmp_path / "t.json") and rec.trace.status == "ok"


def test_a_recording_that_cannot_open_its_file_leaves_nothing_installed(tmp_path):
    with pytest.raises(OSError):
        gradviz.trace(tmp_path / "no" / "such" / "dir" / "t.json").start()
    assert get_default_engine().probe is None
    with record():  # and the next recording starts normally
        pass


def test_file_recording_trace_before_stop_is_refused(tmp_path):
    rec = gradviz.trace(tmp_path / "t.json")
    with rec:
        with pytest.raises(RuntimeError, match="still being written"):
            _ = rec.trace
    assert rec.count == len(rec.trace.events)


def test_concurrent_callers_on_two_devices_stay_sound():
    """Three caller threads, two device workers, shared queues: seq order must still tell a
    consistent story (pushes before pops, sizes, dependencies) in every run."""
    for _ in range(5):
        xs = [torch.tensor([1.0, 2.0, 3.0], requires_grad=True) for _ in range(3)]

        def work(x, dev):
            for _ in range(4):
                y = (x.to(dev) * 2).exp()
                (y.to("cpu") * x).sum().backward()

        with record() as rec:
            threads = [threading.Thread(target=work, args=(x, f"virtual:{i % 2}")) for i, x in enumerate(xs)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        t = sound(rec.trace)
        assert len(t.tasks) == 12 and all(task.status == "ok" for task in t.tasks.values())
        assert {th.role for th in t.threads.values()} == {"caller", "device_worker"}


def test_a_gradient_handed_on_unchanged_keeps_its_summary_and_a_changed_one_gets_a_new_one():
    # AddBackward0 hands the gradient it got on to both inputs as it is: the recorder reuses that
    # gradient's summary. A prehook writing into it (user code, in place, behind the version
    # counter's back) must get a new one.
    x = torch.tensor([[1.0, -2.0, 3.0] * 8] * 2, requires_grad=True)  # 48 elements: numpy's stats
    for hooked in (False, True):
        z = x * 3.0 + x
        add = z.grad_fn
        assert add.name() == "AddBackward0"
        if hooked:

            def double(grads):
                grads[0]._data *= 2.0

            add.register_prehook(double)
        c = z.detach()  # z's gradient (one, so that it makes AddBackward0 ready alone)
        with record() as rec:
            (z * c).sum().backward()
        t = sound(rec.trace)
        adds = t.of_kind(ev.BufferAdd)
        into = [e.stats for e in adds if e.node == add._id]
        out = [e.stats for e in adds if e.producer == add._id]
        expected = stats_of(c.numpy() * (2.0 if hooked else 1.0))
        assert len(into) == 1 and into[0] == stats_of(c.numpy())
        assert len(out) == 2 and out == [expected, expected]


def _scalar_chain(n: int = 40, *, hook_at: int | None = None, tanh: bool = False, fail_at: int | None = None):
    class Boom(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("boom")

    def build():
        x = torch.ones(1, requires_grad=True)
        y = x
        for i in range(n):
            y = y * 1.0001 + 0.0001
            if tanh and i % 7 == 3:
                y = y.tanh()  # saves its result: a saved_release between node_end and gradient_in
            if hook_at == i:
                y.register_hook(lambda g: g * 2.0)
            if fail_at == i:
                y = Boom.apply(y)
        return x, y.sum()

    return build


@pytest.mark.parametrize(
    "build",
    [_scalar_chain(), _scalar_chain(hook_at=17), _scalar_chain(tanh=True), _scalar_chain(fail_at=11)],
    ids=["chain", "hooked", "saved", "failing"],
)
def test_a_chain_records_every_push_and_pop_through_the_queue(build, tmp_path):
    # Every node goes through its ReadyQueue: each node_begin follows a queue_pop of that node,
    # and the file holds the events the recording counted, invariants and all.
    _leaf, loss = build()
    path = tmp_path / "chain.trace.json"
    with gradviz.trace(path) as rec:
        try:
            loss.backward()
        except RuntimeError:
            pass
    trace = load(path)
    assert invariants(trace) == [] and len(trace.events) == rec.count
    events = trace.events
    begins = [i for i, e in enumerate(events) if e.kind == "node_begin"]
    assert len(begins) > 40
    for i in begins:
        pop = next(e for e in reversed(events[:i]) if e.kind == "queue_pop")
        assert pop.node == events[i].node


def test_each_node_records_the_line_of_its_op_call_site():
    """Sources are cached by call site (code object and instruction): two sites on two lines give
    two lines, a loop's one site one line, and code made again (exec) its own."""
    import inspect

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with record() as rec:
        first_line = inspect.currentframe().f_lineno + 1
        b = a * 2.0
        c = b + 1.0
        for _ in range(3):
            c = c * 1.5
        ns = {"a": a}
        for k in range(2):  # the same text compiled twice: two code objects, their own files
            exec(compile("d = a * 3.0", f"<made {k}>", "exec"), ns)
    sources = [n.source for n in rec.trace.nodes.values() if n.name != "AccumulateGrad"]
    here = f"{__file__}:"
    assert sources == [
        f"{here}{first_line}", f"{here}{first_line + 1}", *[f"{here}{first_line + 3}"] * 3,
        "<made 0>:1", "<made 1>:1",
    ]
    del b, c
