"""Reentrant backward: a backward called from inside a backward.

As torch: the nested call runs on the same thread (current_depth + 1) while current_depth is below
max_recursion_depth (60); the next one is handed to a reentrant pool thread, which serves the
owner's ready queue with a fresh stack, while the owner blocks on the task's future. That hand-off
is what bounds the stack of each thread, so 200 levels work under Python's default recursion
limit, which 200 levels on one thread would overflow.
"""

from __future__ import annotations

import faulthandler
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

import gradviz
from gradviz import _compiled
from gradviz.autograd import _state
from gradviz.autograd.engine import (
    MAX_DEPTH,
    get_default_engine,
    get_max_recursion_depth,
    set_max_recursion_depth,
)
from gradviz.autograd.probe import Probe

ENGINE = get_default_engine()


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    faulthandler.dump_traceback_later(120, exit=True)  # a hang fails loudly
    yield
    faulthandler.cancel_dump_traceback_later()


class Level:
    """(level, thread name, thread role, worker_device, current_depth, total_depth)."""

    def __init__(self, level: int) -> None:
        t = threading.current_thread()
        tls = _state.tls
        self.level = level
        self.thread = t.name
        self.role = getattr(t, "gv_role", None)
        self.worker_device = tls.worker_device
        self.current_depth = tls.current_depth
        self.total_depth = tls.total_depth


def make_reentrant(device: str = "cpu"):
    """A Function whose backward runs backward on a fresh graph holding the next level."""
    log: list[Level] = []
    lock = threading.Lock()

    class Reentrant(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x, level):
            ctx.level = level
            return x * 2

        @staticmethod
        def backward(ctx, g):
            with lock:
                log.append(Level(ctx.level))
            if ctx.level > 0:
                with gradviz.enable_grad():
                    y = gradviz.tensor([1.0, -1.0], device=device, requires_grad=True)
                    Reentrant.apply(y, ctx.level - 1).sum().backward()
                # Every nested backward got its own gradients right.
                assert y.grad.tolist() == [2.0, 2.0]
            return g * 2, None

    return Reentrant, log


def test_default_max_recursion_depth_is_torchs() -> None:
    assert MAX_DEPTH == 60
    assert get_max_recursion_depth() == 60 == ENGINE.max_recursion_depth


def test_200_deep_hands_off_to_pool_threads_past_max_recursion_depth() -> None:
    limit = sys.getrecursionlimit()
    Reentrant, log = make_reentrant()
    x = gradviz.tensor([3.0, 4.0], requires_grad=True)
    Reentrant.apply(x, 200).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert sys.getrecursionlimit() == limit, "no test may raise the recursion limit"
    assert len(log) == 201 and sorted(e.level for e in log) == list(range(201))
    by_level = {e.level: e for e in log}

    # The caller runs the outer backward and 60 nested ones (current_depth 0..60): torch nests
    # while current_depth < max_recursion_depth, so the 61st reentrant call goes to the pool.
    main = [e for e in log if e.thread == "MainThread"]
    assert len(main) == 61
    assert [e.current_depth for e in sorted(main, key=lambda e: -e.level)] == list(range(61))
    assert by_level[139].thread != "MainThread" and by_level[139].role == "reentrant_pool"

    # Each pool thread starts at current_depth 0 and total_depth = the task's reentrant_depth,
    # nests 60 more, then hands the next level to another pool thread.
    pool = [e for e in log if e.role == "reentrant_pool"]
    counts = Counter(e.thread for e in pool)
    assert sorted(counts.values()) == [18, 61, 61]
    assert all(name.startswith("gradviz-reentrant-") for name in counts)
    assert max(e.current_depth for e in log) == 60
    assert [by_level[200 - d].total_depth for d in range(201)] == list(range(201))
    assert by_level[139].current_depth == 0 and by_level[139].total_depth == 61
    # Pool threads serve the owner's queue: the owner here is the caller's CPU thread.
    assert {e.worker_device for e in pool} == {"cpu"}


def test_without_the_depth_limit_the_stack_room_still_hands_levels_to_the_pool() -> None:
    # Python's recursion limit bounds a thread's stack too: a level that might not fit under it
    # goes to a pool thread whatever max_recursion_depth says.
    Reentrant, log = make_reentrant()
    x = gradviz.tensor([3.0, 4.0], requires_grad=True)
    # Levels enough to outgrow the recursion limit at two Python frames a level (the user's
    # backward and the Function's apply: fewer than any level costs, compiled engine or not).
    levels = sys.getrecursionlimit() // 2
    with set_max_recursion_depth(100_000):
        Reentrant.apply(x, levels).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert get_max_recursion_depth() == 60
    assert any(e.role == "reentrant_pool" for e in log)


def _stack_depth() -> int:
    frame, n = sys._getframe(1), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def _at_stack_depth(frames: int, run):  # type: ignore[no-untyped-def]
    """run() called with ``frames`` Python frames on the stack below it."""
    def down(n: int):  # type: ignore[no-untyped-def]
        return run() if n <= 0 else down(n - 1)

    return down(frames - _stack_depth() - 1)


def _torch_nested(depth: int) -> list[float]:
    import torch

    class Reentrant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, level):  # type: ignore[no-untyped-def]
            ctx.level = level
            return x * 2

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            if ctx.level > 0:
                with torch.enable_grad():
                    y = torch.tensor([1.0, -1.0], requires_grad=True)
                    Reentrant.apply(y, ctx.level - 1).sum().backward()
            return g * 2, None

    x = torch.tensor([3.0, 4.0], requires_grad=True)
    Reentrant.apply(x, depth).sum().backward()
    return x.grad.tolist()


@pytest.mark.parametrize("depth", [60, 200])
def test_a_nested_backward_from_a_600_frame_stack_works_as_in_torch(depth: int) -> None:
    # torch spends about 5 Python frames a level and nests 60 levels a thread; gradviz spends 6
    # (user backward, Tensor.backward, execute, thread_main, evaluate_function, the Function's
    # apply) and moves a level to the pool once the thread's stack room runs short, so both get
    # through.
    assert sys.getrecursionlimit() == 1000
    assert _at_stack_depth(600, lambda: _torch_nested(depth)) == [2.0, 2.0]
    Reentrant, log = make_reentrant()
    x = gradviz.tensor([3.0, 4.0], requires_grad=True)

    def run() -> list[float]:
        Reentrant.apply(x, depth).sum().backward()
        return x.grad.tolist()

    assert _at_stack_depth(600, run) == [2.0, 2.0]
    assert len(log) == depth + 1


def test_a_reentrant_level_costs_6_python_frames_3_compiled() -> None:
    depths: dict[int, int] = {}

    class Probe(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x, level):  # type: ignore[no-untyped-def]
            ctx.level = level
            return x * 2

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def]
            depths[ctx.level] = _stack_depth()
            if ctx.level > 0:
                with gradviz.enable_grad():
                    y = gradviz.tensor([1.0], requires_grad=True)
                    Probe.apply(y, ctx.level - 1).sum().backward()
            return g * 2, None

    x = gradviz.tensor([1.0], requires_grad=True)
    Probe.apply(x, 4).sum().backward()
    # torch: 5 (user backward, Tensor.backward, autograd.backward, _engine_run_backward, the
    # Function's apply); gradviz's engine loop and evaluate_function are Python frames, torch's C++.
    # Compiled (gradviz._compiled), the engine's functions are C frames, as torch's: 3.
    frames = 6 if _compiled.status()["gradviz.autograd.engine"] == "python" else 3
    assert [depths[k] - depths[k + 1] for k in range(4)] == [frames] * 4


def test_reentrant_from_a_device_worker_nests_there_then_pool_serves_the_device_queue() -> None:
    Reentrant, log = make_reentrant(device="virtual:0")
    x = gradviz.tensor([3.0, 4.0], device="virtual:0", requires_grad=True)
    with set_max_recursion_depth(3):
        Reentrant.apply(x, 10).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    on_worker = [e for e in log if e.thread == "gradviz-virtual:0"]
    assert len(on_worker) == 4  # the outer node and 3 nested on the device worker
    pool = [e for e in log if e.role == "reentrant_pool"]
    assert len(pool) == 7
    # A pool thread taking over a device worker's task works as that device.
    assert {e.worker_device for e in pool} == {"virtual:0"}
    assert {e.worker_device for e in on_worker} == {"virtual:0"}


def test_max_recursion_depth_zero_sends_every_reentrant_call_to_the_pool() -> None:
    Reentrant, log = make_reentrant()
    x = gradviz.tensor([3.0, 4.0], requires_grad=True)
    with set_max_recursion_depth(0):
        Reentrant.apply(x, 4).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert [e.role for e in sorted(log, key=lambda e: -e.level)] == [None] + ["reentrant_pool"] * 4
    assert all(e.current_depth == 0 for e in log)


def test_set_max_recursion_depth_sets_at_once_and_restores_as_a_context_manager() -> None:
    assert get_max_recursion_depth() == 60
    with set_max_recursion_depth(7) as s:
        assert s.depth == 7 and ENGINE.max_recursion_depth == 7
    assert ENGINE.max_recursion_depth == 60
    setter = set_max_recursion_depth(9)
    try:
        assert ENGINE.max_recursion_depth == 9
    finally:
        setter.__exit__(None, None, None)
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="max_recursion_depth"):
            set_max_recursion_depth(bad)  # type: ignore[arg-type]
    assert ENGINE.max_recursion_depth == 60


def test_probe_hears_the_pool_hand_off() -> None:
    events: list[tuple] = []
    lock = threading.Lock()

    class P(Probe):
        def pool_push(self, task, depth) -> None:
            with lock:
                events.append(("push", task.id, depth, threading.current_thread().name))

        def pool_take(self, task) -> None:
            with lock:
                events.append(("take", task.id, task.reentrant_depth, threading.current_thread().name))

        def thread_start(self, role, device) -> None:
            with lock:
                events.append(("start", role, device, threading.current_thread().name))

    Reentrant, _ = make_reentrant()
    x = gradviz.tensor([3.0, 4.0], requires_grad=True)
    ENGINE.shutdown()  # fresh pool threads, so their thread_start is heard
    prev, ENGINE.probe = ENGINE.probe, P()
    try:
        with set_max_recursion_depth(2):
            Reentrant.apply(x, 6).sum().backward()
    finally:
        ENGINE.probe = prev
    pushes = [e for e in events if e[0] == "push"]
    takes = [e for e in events if e[0] == "take"]
    assert len(pushes) == len(takes) == 2  # levels 3 and 6 go to the pool (depth 2 each time)
    assert pushes[0][3] == "MainThread" and takes[0][3].startswith("gradviz-reentrant-")
    assert [e[1] for e in pushes] == [e[1] for e in takes]
    assert [e[2] for e in takes] == [3, 6]  # the tasks' reentrant_depth
    starts = [e for e in events if e[0] == "start"]
    assert {e[1] for e in starts} == {"reentrant_pool"}
    ENGINE.shutdown()


def test_reentrant_grad_inside_backward_checkpoint_style() -> None:
    # A checkpoint-like Function: forward without a graph, backward recomputes under
    # enable_grad and differentiates the recomputation with autograd.grad (reentrant).
    class Checkpoint(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.sin() * x).detach()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with gradviz.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd.sin() * xd
                (gx,) = gradviz.autograd.grad(y, [xd], g)
            return gx

    xv = np.array([0.3, -1.2, 2.0])
    x = gradviz.tensor(xv, dtype=gradviz.float64, requires_grad=True)
    v = x.to("virtual:1")
    Checkpoint.apply(v).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)


def test_many_threads_deep_reentrant_share_the_pool() -> None:
    results: list[list[float]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(k: int) -> None:
        try:
            Reentrant, _ = make_reentrant(device="virtual:0" if k % 2 else "cpu")
            x = gradviz.tensor([1.0, 1.0], device="virtual:0" if k % 2 else "cpu", requires_grad=True)
            Reentrant.apply(x, 40).sum().backward()
            with lock:
                results.append(x.grad.tolist())
        except BaseException as exc:  # noqa: BLE001
            with lock:
                errors.append(exc)

    with set_max_recursion_depth(4):
        threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not any(t.is_alive() for t in threads), "reentrant backward hung"
    assert not errors, errors
    assert results == [[2.0, 2.0]] * 6
    assert ENGINE.shutdown(timeout=10)
    assert ENGINE.pool_threads == []


@pytest.mark.slow
def test_after_a_pooled_task_fails_the_pool_thread_leaves_the_owners_queue() -> None:
    # The pooled task fails on virtual:0 while another of its nodes still runs on virtual:1. The
    # owner's wait returns at once; the pool thread, asleep in the owner's queue, must be gone
    # before the owner goes on, or it would take the owner's next backward's nodes (and finish
    # that task without the wake-up its owner needs).
    class Boom(Exception):
        pass

    release = threading.Event()

    class Fails(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise Boom("pooled task fails")

    class Slow(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            release.wait(5)
            return g

    class Outer(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            with gradviz.enable_grad():
                a = gradviz.ones(2, device="virtual:0", requires_grad=True)
                b = gradviz.ones(2, device="virtual:1", requires_grad=True)
                (Fails.apply(a).to("cpu").sum() + Slow.apply(b).to("cpu").sum()).backward()
            return g

    for _ in range(5):
        release.clear()
        x = gradviz.ones(2, requires_grad=True)
        with set_max_recursion_depth(0), pytest.raises(Boom):
            Outer.apply(x).sum().backward()
        # Every pool thread is back waiting in the pool, none left in this thread's queue.
        shared = ENGINE.thread_pool_shared
        deadline = time.monotonic() + 2
        while shared.num_workers != len(ENGINE.pool_threads) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert shared.num_workers == len(ENGINE.pool_threads)
        # The next backward on this thread hops to virtual:0 and back: its last node (y's
        # AccumulateGrad) is pushed to this thread's queue while this thread sleeps. It must run
        # here, and the backward must end while the failed task's slow node still holds
        # virtual:1 (a stray pool thread would run it and send no wake-up: a stall).
        ran: list[str] = []
        y = gradviz.ones(3, requires_grad=True)
        z = (y.to("virtual:0") * 2).to("cpu").sin()
        acc = z.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions[0][0]
        assert acc.name() == "torch::autograd::AccumulateGrad"
        acc.register_prehook(lambda grads, ran=ran: ran.append(threading.current_thread().name))
        t0 = time.monotonic()
        z.sum().backward()
        assert time.monotonic() - t0 < 3
        assert ran == ["MainThread"]
        release.set()
    assert ENGINE.shutdown(timeout=10)
