"""Errors in any engine thread reach the caller, with their type, message and traceback.

As torch: the first error sets the GraphTask's error and completes its future; the task's
remaining NodeTasks are skipped as they are popped (no new work is made), final callbacks do not
run, and other GraphTasks, even on the same device thread, carry on.
"""

from __future__ import annotations

import faulthandler
import threading
import time
import traceback
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import gradviz
from gradviz.autograd import Variable, _state
from gradviz.autograd.engine import get_default_engine, set_max_recursion_depth

ENGINE = get_default_engine()


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    faulthandler.dump_traceback_later(120, exit=True)  # a hang fails loudly
    yield
    faulthandler.cancel_dump_traceback_later()


class Boom(ValueError):
    pass


class Interrupt(BaseException):
    """Not an Exception: the engine must carry BaseExceptions too (KeyboardInterrupt, say)."""


def failing(exc_factory, where: list | None = None):
    class Fails(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            if where is not None:
                where.append(threading.current_thread().name)
            raise exc_factory()

    return Fails


def test_error_in_a_backward_on_a_virtual_worker_reaches_the_caller() -> None:
    where: list[str] = []
    Fails = failing(lambda: Boom("boom on the worker"), where)
    x = gradviz.ones(3, device="virtual:0", requires_grad=True)
    loss = Fails.apply(x * 2).to("cpu").sum()
    with pytest.raises(Boom, match="boom on the worker") as info:
        loss.backward()
    assert where == ["gradviz-virtual:0"]
    # The original traceback: it reaches into the backward that raised, on the worker.
    # (Where the engine is compiled, its entries carry the qualified name: ...Engine.evaluate_function.)
    frames = [f.name.rpartition(".")[2] for f in traceback.extract_tb(info.value.__traceback__)]
    assert "backward" in frames and "evaluate_function" in frames
    assert x.grad is None
    # The device thread lives on: the next backward there works.
    y = gradviz.tensor([1.0, 2.0], device="virtual:0", requires_grad=True)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 4.0])
    assert ENGINE.device_threads["virtual:0"].is_alive()


def test_base_exceptions_keep_their_type() -> None:
    Fails = failing(Interrupt)
    x = gradviz.ones(2, device="virtual:1", requires_grad=True)
    with pytest.raises(Interrupt):
        Fails.apply(x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_error_in_hooks_on_a_worker() -> None:
    x = gradviz.ones(2, requires_grad=True)
    v = x.to("virtual:0")
    h = v * 2

    def bad_pre(grads):
        raise KeyError("pre-hook failed")

    h.grad_fn.register_prehook(bad_pre)
    with pytest.raises(KeyError, match="pre-hook failed"):
        h.sum().backward()

    w = gradviz.ones(2, device="virtual:1", requires_grad=True)
    out = w * 5

    def bad_tensor_hook(grad):
        raise ArithmeticError("tensor hook failed on " + threading.current_thread().name)

    out.register_hook(bad_tensor_hook)
    with pytest.raises(ArithmeticError, match="tensor hook failed on gradviz-virtual:1"):
        out.sum().backward()

    def bad_post(grad_inputs, grad_outputs):
        raise TypeError("post-hook failed")

    z = w * 7
    z.grad_fn.register_hook(bad_post)
    with pytest.raises(TypeError, match="post-hook failed"):
        z.sum().backward()


def test_anomaly_on_a_worker_names_the_node_and_shows_the_forward() -> None:
    x = gradviz.tensor([0.0, 1.0], device="virtual:0", requires_grad=True)
    with gradviz.detect_anomaly():
        y = x.sqrt()  # d/dx sqrt(0) = inf; times 0 below -> nan
        loss = (y * gradviz.tensor([0.0, 1.0], device="virtual:0")).sum()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match="returned nan values"):
                loss.backward()
    assert any("Traceback of forward call" in str(w.message) for w in caught)
    assert any("x.sqrt()" in str(w.message) for w in caught)
    (x * 1).sum().backward()  # the worker carries on


def test_an_error_stops_the_tasks_remaining_work() -> None:
    # The root fans out to two devices. virtual:0 fails; virtual:1 waits (in a node) until the
    # task has its error, then returns gradients: the nodes it feeds must never run.
    ran: list[str] = []
    failed = threading.Event()

    class FailsAfterSignal(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            failed.set()
            raise Boom("first branch failed")

    class WaitsForTheError(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            task = _state.tls.current_graph_task
            assert failed.wait(10)
            deadline = time.monotonic() + 10
            while not task.has_error and time.monotonic() < deadline:
                time.sleep(0.001)
            assert task.has_error
            return g

    a = gradviz.ones(2, device="virtual:0", requires_grad=True)
    b = gradviz.ones(2, device="virtual:1", requires_grad=True)
    pb = b * 3
    pb.grad_fn.register_prehook(lambda grads: ran.append("after the error"))
    loss = FailsAfterSignal.apply(a).to("cpu").sum() + WaitsForTheError.apply(pb).to("cpu").sum()
    with pytest.raises(Boom):
        loss.backward()
    time.sleep(0.05)  # anything still queued for the task would have run by now
    assert ran == []
    assert b.grad is None


def test_final_callbacks_do_not_run_after_an_error() -> None:
    called: list[str] = []

    class QueuesThenFails(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            Variable._execution_engine.queue_callback(lambda: called.append("callback"))
            raise Boom("after queueing a callback")

    x = gradviz.ones(2, device="virtual:0", requires_grad=True)
    with pytest.raises(Boom):
        QueuesThenFails.apply(x).sum().backward()
    time.sleep(0.05)
    assert called == []


def test_final_callbacks_may_queue_more_callbacks() -> None:
    called: list[str] = []

    def first() -> None:
        called.append("first")
        Variable._execution_engine.queue_callback(lambda: called.append("second"))

    class Queues(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            Variable._execution_engine.queue_callback(first)
            return g

    x = gradviz.ones(2, device="virtual:0", requires_grad=True)
    Queues.apply(x).sum().backward()
    assert called == ["first", "second"]


def test_other_tasks_on_the_same_device_thread_carry_on() -> None:
    Fails = failing(lambda: Boom("always"))
    n = 100
    good: list[bool] = []
    bad: list[str] = []

    def failing_caller() -> None:
        for _ in range(n):
            x = gradviz.ones(2, device="virtual:0", requires_grad=True)
            try:
                Fails.apply(x * 2).sum().backward()
            except Boom as exc:
                bad.append(str(exc))

    def good_caller() -> None:
        for i in range(n):
            x = gradviz.tensor([float(i), 1.0], dtype=gradviz.float64, device="virtual:0", requires_grad=True)
            (x * x).to("cpu").sum().backward()
            good.append(x.grad.tolist() == [2.0 * i, 2.0])

    threads = [threading.Thread(target=failing_caller), threading.Thread(target=good_caller)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert bad == ["always"] * n
    assert good == [True] * n


def test_error_on_the_callers_thread_while_device_work_is_in_flight() -> None:
    # The caller fails on CPU while virtual:0 still runs a slow node of the same task: the caller
    # raises at once, the worker's leftovers are skipped, nothing hangs, the next pass works.
    release = threading.Event()

    class Slow(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            release.wait(10)
            return g

    Fails = failing(lambda: Boom("cpu branch"))
    a = gradviz.ones(2, requires_grad=True)
    b = gradviz.ones(2, device="virtual:0", requires_grad=True)
    loss = Fails.apply(a).sum() + Slow.apply(b * 2).to("cpu").sum()
    with pytest.raises(Boom, match="cpu branch"):
        loss.backward()
    release.set()
    for _ in range(3):
        c = gradviz.ones(2, device="virtual:0", requires_grad=True)
        (c * 4).to("cpu").sum().backward()
        np.testing.assert_allclose(c.grad.numpy(), [4.0, 4.0])
    assert b.grad is None


def test_error_in_a_nested_backward_on_a_pool_thread_reaches_the_outer_caller() -> None:
    class Reentrant(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x, level):
            ctx.level = level
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if ctx.level == 0:
                raise Boom(f"deepest level, on {threading.current_thread().name}")
            with gradviz.enable_grad():
                y = gradviz.ones(2, requires_grad=True)
                Reentrant.apply(y, ctx.level - 1).sum().backward()
            return g * 2, None

    x = gradviz.ones(2, requires_grad=True)
    with set_max_recursion_depth(2), pytest.raises(Boom, match="deepest level, on gradviz-reentrant-"):
        Reentrant.apply(x, 5).sum().backward()
    assert x.grad is None
    y = gradviz.ones(2, requires_grad=True)
    (y * 2).sum().backward()
    assert y.grad.tolist() == [2.0, 2.0]


def test_errors_from_many_threads_at_once() -> None:
    Fails = failing(lambda: Boom(threading.current_thread().name))
    seen: list[str] = []
    lock = threading.Lock()

    def run(k: int) -> None:
        for _ in range(25):
            x = gradviz.ones(2, device=f"virtual:{k % 2}", requires_grad=True)
            try:
                Fails.apply(x).sum().backward()
            except Boom as exc:
                with lock:
                    seen.append(str(exc))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert len(seen) == 200
    assert set(seen) == {"gradviz-virtual:0", "gradviz-virtual:1"}


def test_caller_interrupted_while_waiting_stops_the_tasks_work() -> None:
    # A signal (think Ctrl-C) interrupts the caller asleep in pop() while virtual:0 runs a slow
    # node: the caller raises, and the rest of the task is skipped instead of running later.
    import signal

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are delivered to the main thread only")
    release, stopped = threading.Event(), threading.Event()
    ran: list[str] = []
    raised: list[bool] = []

    class Slow(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            # CPython runs a signal handler when the main thread next wakes up; a signal landing
            # just before it blocks in a lock is only seen later. So knock until it is heard.
            deadline = time.monotonic() + 10
            while not release.is_set() and time.monotonic() < deadline:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
                release.wait(0.05)
            stopped.set()
            return g

    def handler(signum, frame):
        if not raised:
            raised.append(True)
            raise Interrupt("interrupted")

    prev = signal.signal(signal.SIGUSR1, handler)
    try:
        a = gradviz.ones(2, device="virtual:0", requires_grad=True)
        after = a * 2
        after.grad_fn.register_prehook(lambda grads: ran.append("ran"))
        loss = Slow.apply(after).to("cpu").sum()
        with pytest.raises(Interrupt):
            loss.backward()
    finally:
        release.set()
        stopped.wait(10)
        signal.signal(signal.SIGUSR1, prev)
    time.sleep(0.05)
    assert ran == [] and a.grad is None
    c = gradviz.ones(2, device="virtual:0", requires_grad=True)
    (c * 4).to("cpu").sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), [4.0, 4.0])


def test_a_failing_probe_on_pop_is_reported_and_backward_still_completes(monkeypatch) -> None:
    from gradviz.autograd.probe import Probe

    reported: list[BaseException] = []
    monkeypatch.setattr("sys.excepthook", lambda typ, exc, tb: reported.append(exc))

    class BrokenProbe(Probe):
        def queue_pop(self, queue, node_task, size) -> None:
            raise RuntimeError("probe bug")

    x = gradviz.ones(2, device="virtual:0", requires_grad=True)
    prev, ENGINE.probe = ENGINE.probe, BrokenProbe()
    try:
        (x * 3).to("cpu").sum().backward()
    finally:
        ENGINE.probe = prev
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert reported and all(str(e) == "probe bug" for e in reported)
