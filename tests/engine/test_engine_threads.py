"""The engine's threads under pressure: many callers, shared leaves, wake-ups, shutdown, exit.

Every test that could hang is bounded: a watchdog (faulthandler) dumps every thread's stack and
kills the process past a hard deadline, and the tests also join their threads with a deadline
and fail cleanly when one is late.
"""

from __future__ import annotations

import faulthandler
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import gradviz
from gradviz.autograd import _state
from gradviz.autograd.engine import get_default_engine
from gradviz.autograd.probe import Probe

ENGINE = get_default_engine()


def _engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if getattr(t, "gv_role", None) in ("device_worker", "reentrant_pool")]


@pytest.fixture
def watchdog() -> Iterator[Callable[[float], None]]:
    """arm(seconds): past it, dump all stacks to stderr and exit the test process (a hang must
    fail loudly, not stall CI)."""

    def arm(seconds: float) -> None:
        faulthandler.dump_traceback_later(seconds, exit=True)

    yield arm
    faulthandler.cancel_dump_traceback_later()


def _run_threads(targets: list[Callable[[], None]], deadline: float) -> list[BaseException]:
    errors: list[BaseException] = []
    lock = threading.Lock()

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                with lock:
                    errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(fn), name=f"caller-{i}", daemon=True) for i, fn in enumerate(targets)]
    for t in threads:
        t.start()
    end = time.monotonic() + deadline
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    late = [t.name for t in threads if t.is_alive()]
    if late:
        faulthandler.dump_traceback(all_threads=True)
        pytest.fail(f"backward calls still running after {deadline}s (hung?): {late}")
    return errors


# -- must-show 2: stress --------------------------------------------------------------------------

N_THREADS = 8
N_PASSES = 200


def test_stress_8_threads_200_passes_over_two_virtual_devices(watchdog) -> None:
    watchdog(240)
    before = set(threading.enumerate())
    rng = np.random.default_rng(0)
    # A leaf on virtual:1 that every thread's graphs share: its .grad sums all passes.
    shared_w = gradviz.tensor(rng.standard_normal(4), dtype=gradviz.float64, device="virtual:1", requires_grad=True)
    shared_wv = shared_w.detach().numpy().copy()
    expected_shared = [np.zeros(4) for _ in range(N_THREADS)]
    checked = [0] * N_THREADS

    def worker(k: int) -> Callable[[], None]:
        def run() -> None:
            r = np.random.default_rng(100 + k)
            w0v = r.standard_normal(4)
            w0 = gradviz.tensor(w0v, dtype=gradviz.float64, device="virtual:0", requires_grad=True)
            w0_acc = np.zeros(4)
            for i in range(N_PASSES):
                xv = r.standard_normal(4)
                x = gradviz.tensor(xv, dtype=gradviz.float64, requires_grad=True)
                h = x.to("virtual:0") * w0  # runs on virtual:0
                t = h.tanh()
                u = t.to("virtual:1") * shared_w  # virtual:1, the shared leaf
                loss = u.sum() + (x * x).sum()  # and a cpu branch into the same leaf x
                if i % 2:
                    loss.backward()
                    gx = x.grad.numpy()
                else:
                    (gx_t,) = gradviz.autograd.grad(loss, [x], retain_graph=True)
                    gx = gx_t.numpy()
                    loss.backward()  # and accumulate through the same graph
                th = np.tanh(xv * w0v)
                dh = shared_wv * (1 - th**2)
                np.testing.assert_allclose(gx, dh * w0v + 2 * xv, rtol=1e-12, atol=1e-12)
                w0_acc += dh * xv
                expected_shared[k] += th
                checked[k] += 1
            np.testing.assert_allclose(w0.grad.numpy(), w0_acc, rtol=1e-10)
            assert str(w0.grad.device) == "virtual:0"

        return run

    t0 = time.monotonic()
    errors = _run_threads([worker(k) for k in range(N_THREADS)], deadline=180)
    elapsed = time.monotonic() - t0
    assert not errors, errors[:3]
    assert checked == [N_PASSES] * N_THREADS
    # Shared leaf: 1600 passes from 8 threads and two devices, none lost.
    np.testing.assert_allclose(shared_w.grad.numpy(), sum(expected_shared), rtol=1e-10)
    assert ENGINE.shutdown(timeout=10)
    left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert not left, f"threads left over after shutdown: {left}"
    assert _engine_threads() == [] and ENGINE.threads() == []
    print(f"stress: {N_THREADS * N_PASSES} backward passes in {elapsed:.1f}s")


def test_concurrent_backward_on_one_shared_graph(watchdog) -> None:
    watchdog(120)
    w = gradviz.tensor([1.0, -2.0, 0.5], dtype=gradviz.float64, device="virtual:0", requires_grad=True)
    x = gradviz.tensor([0.5, 1.0, 2.0], dtype=gradviz.float64, requires_grad=True)
    y = (x.to("virtual:0") * w).sin().to("virtual:1").sum()
    n = 50

    def run() -> None:
        for _ in range(n):
            y.backward(retain_graph=True)

    assert not _run_threads([run] * 8, deadline=90)
    xv, wv = np.array([0.5, 1.0, 2.0]), np.array([1.0, -2.0, 0.5])
    c = np.cos(xv * wv)
    np.testing.assert_allclose(w.grad.numpy(), 8 * n * c * xv, rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), 8 * n * c * wv, rtol=1e-10)


def _accumulators_made_by_racing_threads(n: int) -> set[int]:
    leaf = gradviz.ones(2, requires_grad=True)
    barrier = threading.Barrier(n)
    fns: list = []
    lock = threading.Lock()

    def build() -> None:
        barrier.wait()
        fn = (leaf * 2).grad_fn.next_functions[0][0]
        with lock:
            fns.append(fn)

    assert not _run_threads([build] * n, deadline=30)
    return {id(f) for f in fns}


def test_one_grad_accumulator_per_leaf_when_threads_race_to_make_it() -> None:
    for _ in range(20):
        assert len(_accumulators_made_by_racing_threads(8)) == 1


# -- how work moves between threads ---------------------------------------------------------------


class _QueueLog(Probe):
    """Records pushes and pops: (op, queue device, queue id, what, task id, thread name)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple] = []
        self.tasks: dict[int, object] = {}

    def task_begin(self, task, roots, graph_root, outputs) -> None:
        with self.lock:
            self.tasks[task.id] = task

    def _log(self, op: str, queue, node_task) -> None:
        gt = node_task.graph_task
        what = "shutdown" if node_task.is_shutdown else ("wakeup" if node_task.fn is None else node_task.fn.name())
        with self.lock:
            self.events.append((op, queue.device, queue.id, what, None if gt is None else gt.id,
                                threading.current_thread().name, gt.cpu_ready_queue.id if gt else None))

    def queue_push(self, queue, node_task, size) -> None:
        self._log("push", queue, node_task)

    def queue_pop(self, queue, node_task, size) -> None:
        self._log("pop", queue, node_task)


def _recording(probe: Probe):
    class _Ctx:
        def __enter__(self):
            self.prev = ENGINE.probe
            ENGINE.probe = probe
            return probe

        def __exit__(self, *exc):
            ENGINE.probe = self.prev

    return _Ctx()


def test_cpu_work_goes_to_the_tasks_own_queue_and_device_work_to_the_device_queue() -> None:
    x = gradviz.tensor([1.0, 2.0], requires_grad=True)
    w = gradviz.tensor([3.0, 4.0], device="virtual:0", requires_grad=True)
    loss = (x.to("virtual:0") * w).to("cpu").sum()
    log = _QueueLog()
    with _recording(log):
        loss.backward()
    dev_q = ENGINE.device_ready_queues["virtual:0"]
    node_events = [e for e in log.events if e[3] not in ("wakeup", "shutdown")]
    assert node_events
    for op, device, qid, _what, _task, thread, cpu_qid in node_events:
        if device == "cpu":
            assert qid == cpu_qid, "CPU work always goes to the GraphTask's cpu_ready_queue"
            if op == "pop":
                assert thread == "MainThread"
        else:
            assert qid == dev_q.id
            if op == "pop":
                assert thread == "gradviz-virtual:0"
    # The last nodes (x's ToCopyBackward0 -> AccumulateGrad) ran on cpu; w's AccumulateGrad and
    # MulBackward0 on virtual:0. Whatever finished last, the owner is never left asleep.
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])


def test_a_worker_that_completes_a_task_wakes_its_owner() -> None:
    # Everything after the root runs on virtual:0, so the worker completes the task while the
    # owner sleeps in pop() on its CPU queue: the worker must push an empty wake-up task there.
    w = gradviz.tensor([1.0, 2.0], device="virtual:0", requires_grad=True)
    loss = (w * w).sum()
    log = _QueueLog()
    with _recording(log):
        done = threading.Event()

        def call() -> None:
            loss.backward()
            done.set()

        t = threading.Thread(target=call)
        t.start()
        assert done.wait(30), "the owner was never woken"
        t.join()
    wakeups = [e for e in log.events if e[3] == "wakeup"]
    assert wakeups and wakeups[0][0] == "push"
    assert wakeups[0][1] == "cpu" and wakeups[0][5] == "gradviz-virtual:0"
    assert wakeups[0][2] == wakeups[0][6], "pushed to the owner's cpu_ready_queue"
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])


def test_outstanding_tasks_counted_on_push_and_decremented_after_evaluation() -> None:
    seen: list[tuple[str, int]] = []

    class P(Probe):
        def node_begin(self, task, node, depth) -> None:
            # While a node runs, it is still counted: it was counted when pushed, and is
            # decremented only after it (and the pushes of its successors) are done.
            seen.append((node.name(), task.outstanding_tasks))

    x = gradviz.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * 2).sum()
    with _recording(P()):
        loss.backward()
    assert seen and all(n >= 1 for _, n in seen)
    assert [name for name, _ in seen] == ["SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad"]


def test_ready_queue_order_shutdown_then_wakeups_then_depth_then_sequence_nr() -> None:
    from gradviz.autograd.engine import GraphTask, InputBuffer, NodeTask, ReadyQueue
    from gradviz.autograd.graph import Node

    q = ReadyQueue("cpu", "test")
    shallow = GraphTask(False, False, True, 0, q)
    deep = GraphTask(False, False, True, 3, q)
    a, b, c = Node(), Node(), Node()  # increasing sequence_nr
    q.push(NodeTask(shallow, a, InputBuffer(0)))
    q.push(NodeTask(shallow, c, InputBuffer(0)))
    q.push(NodeTask(deep, b, InputBuffer(0)))
    q.push(NodeTask(shallow, None, InputBuffer(0)))
    q.push_shutdown()
    order = [q.pop() for _ in range(5)]
    assert order[0].is_shutdown
    assert order[1].fn is None
    assert [t.fn for t in order[2:]] == [b, c, a]
    assert shallow.outstanding_tasks == 3 and deep.outstanding_tasks == 1


# -- shutdown and exit ----------------------------------------------------------------------------


class _Reent(gradviz.autograd.Function):
    @staticmethod
    def forward(ctx, x, level):
        ctx.level = level
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if ctx.level > 0:
            with gradviz.enable_grad():
                y = gradviz.ones(2, device="virtual:0", requires_grad=True)
                _Reent.apply(y, ctx.level - 1).sum().backward()
        return g * 2, None


def test_shutdown_stops_device_workers_and_pool_threads_and_they_restart(watchdog) -> None:
    watchdog(60)
    from gradviz.autograd.engine import set_max_recursion_depth

    with set_max_recursion_depth(2):
        x = gradviz.ones(2, device="virtual:0", requires_grad=True)
        _Reent.apply(x, 8).sum().backward()
    roles = {t.gv_role for t in _engine_threads()}
    assert roles == {"device_worker", "reentrant_pool"}
    assert ENGINE.shutdown(timeout=10)
    assert _engine_threads() == []
    assert ENGINE.threads() == [] and ENGINE.pool_threads == []
    # Lazily back: the next backward starts what it needs.
    x = gradviz.ones(2, device="virtual:1", requires_grad=True)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert [t.name for t in _engine_threads()] == ["gradviz-virtual:1"]
    assert ENGINE.shutdown(timeout=10)


def test_thread_state_is_reset_after_backward() -> None:
    x = gradviz.ones(2, device="virtual:0", requires_grad=True)
    (x * 2).sum().backward()
    tls = _state.tls
    assert tls.worker_device is _state.NO_DEVICE
    assert (tls.current_depth, tls.total_depth, tls.current_graph_task) == (0, 0, None)


def _run_python(code: str, timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)
    return proc, time.monotonic() - t0


def test_interpreter_exits_promptly_after_using_devices_and_the_pool() -> None:
    proc, elapsed = _run_python(
        """
        import gradviz
        from gradviz.autograd.engine import set_max_recursion_depth, get_default_engine

        class R(gradviz.autograd.Function):
            @staticmethod
            def forward(ctx, x, n):
                ctx.n = n
                return x * 2
            @staticmethod
            def backward(ctx, g):
                if ctx.n:
                    with gradviz.enable_grad():
                        y = gradviz.ones(2, device="virtual:1", requires_grad=True)
                        R.apply(y, ctx.n - 1).sum().backward()
                return g * 2, None

        set_max_recursion_depth(1)
        x = gradviz.ones(2, requires_grad=True)
        R.apply(x.to("virtual:0"), 5).to("cpu").sum().backward()
        roles = sorted({t.gv_role for t in get_default_engine().threads()})
        print(x.grad.tolist(), roles)
        """,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "[2.0, 2.0] ['device_worker', 'reentrant_pool']" in proc.stdout
    assert elapsed < 10, f"exit took {elapsed:.1f}s"


def test_interpreter_exits_even_with_a_worker_stuck_in_a_node() -> None:
    # A backward that never returns, running on virtual:0 for a daemon caller thread: at exit the
    # engine asks its workers to stop and waits a bounded time, then lets the process go.
    proc, elapsed = _run_python(
        """
        import threading, time
        import gradviz

        started = threading.Event()

        class Stuck(gradviz.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1
            @staticmethod
            def backward(ctx, g):
                started.set()
                threading.Event().wait()
                return g

        x = gradviz.ones(2, device="virtual:0", requires_grad=True)
        y = Stuck.apply(x).sum()
        threading.Thread(target=y.backward, daemon=True).start()
        assert started.wait(10)
        print("exiting")
        """,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "exiting" in proc.stdout
    assert elapsed < 15, f"exit took {elapsed:.1f}s"


class _Boom(Exception):
    pass


class _Mixed(gradviz.autograd.Function):
    """Reentrant on a chosen device, failing at the deepest level when asked."""

    @staticmethod
    def forward(ctx, x, levels, device, fail):
        ctx.levels, ctx.on, ctx.fail = levels, device, fail
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if ctx.levels:
            with gradviz.enable_grad():
                y = gradviz.ones(2, device=ctx.on, requires_grad=True)
                _Mixed.apply(y, ctx.levels - 1, ctx.on, ctx.fail).sum().backward()
            assert y.grad.tolist() == [2.0, 2.0]
        elif ctx.fail:
            raise _Boom("deepest level")
        return g * 2, None, None, None


@pytest.mark.parametrize("max_depth", [0, 2])
def test_mixed_load_devices_reentrant_pool_and_errors_from_8_threads(watchdog, max_depth: int) -> None:
    # Everything at once for a few seconds: random device hops, reentrant depths past a small
    # max_recursion_depth (so pool threads serve cpu and device queues; 0 sends every reentrant
    # call to the pool), and failures.
    import random

    from gradviz.autograd.engine import set_max_recursion_depth

    watchdog(120)
    devices = ["cpu", "virtual:0", "virtual:1", "virtual:2"]
    done = [0] * 8
    slowest = [0.0] * 8

    def caller(k: int) -> Callable[[], None]:
        def run() -> None:
            r = random.Random(k)
            end = time.monotonic() + 2.5
            while time.monotonic() < end:
                fail = r.random() < 0.2
                x = gradviz.ones(2, device=r.choice(devices), requires_grad=True)
                y = _Mixed.apply(x.to(r.choice(devices)), r.randint(0, 6), r.choice(devices), fail)
                t0 = time.monotonic()
                try:
                    y.to(r.choice(devices)).sum().backward()
                    assert not fail and x.grad.tolist() == [2.0, 2.0]
                except _Boom:
                    assert fail and x.grad is None
                # A lost wake-up shows as a stall that something unrelated ends later.
                slowest[k] = max(slowest[k], time.monotonic() - t0)
                done[k] += 1

        return run

    with set_max_recursion_depth(max_depth):
        errors = _run_threads([caller(k) for k in range(8)], deadline=90)
    assert not errors, errors[:3]
    assert all(n > 0 for n in done)
    assert max(slowest) < 5, f"a backward stalled for {max(slowest):.1f}s"
    t0 = time.monotonic()
    assert ENGINE.shutdown(timeout=10)
    assert time.monotonic() - t0 < 2, "a thread was slow to stop: stranded in a queue?"
    assert _engine_threads() == []
