"""Devices: cpu, virtual:N and cuda:N; moving tensors between them; where the engine runs nodes.

A graph that crosses cpu, virtual:0 and virtual:1 must give the gradients the same graph gives
on cpu alone (and that torch gives on cpu), and each node must run on the thread torch would
use: the thread of the device of its incoming gradient (InputBuffer.device(): the first non-CPU
one), i.e. the device worker for virtual:N and the calling thread for cpu.
"""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

import gradviz
from gradviz.device import array_module, as_device

HAVE_CUPY = importlib.util.find_spec("cupy") is not None


def _cuda_missing() -> str | None:
    """What is missing for cuda:N, in words; None when cupy and a GPU are both there."""
    if not HAVE_CUPY:
        return "cupy is not installed (pip install cupy-cuda12x), so cuda:N devices cannot exist here"
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy's CUDA errors have their own types
        return f"cupy is installed but finds no usable NVIDIA GPU ({exc})"
    return None if n > 0 else "cupy is installed but finds no NVIDIA GPU"


CUDA_MISSING = _cuda_missing()
needs_cuda = pytest.mark.skipif(CUDA_MISSING is not None, reason=f"needs cuda: {CUDA_MISSING}")
needs_no_cuda = pytest.mark.skipif(CUDA_MISSING is None, reason="cupy and a GPU are present here")


# -- device objects ---------------------------------------------------------------------------


def test_device_parsing_and_equality() -> None:
    assert str(gradviz.device("cpu")) == "cpu"
    v = gradviz.device("virtual:1")
    assert (v.type, v.index, str(v)) == ("virtual", 1, "virtual:1")
    assert str(gradviz.device("virtual")) == "virtual:0"
    assert gradviz.device("cuda:2").index == 2
    assert repr(v) == "device(type='virtual', index=1)"
    assert v.is_accelerator and not gradviz.device("cpu").is_accelerator
    assert len({gradviz.device("virtual:0"), gradviz.device("virtual:0"), gradviz.device("cpu")}) == 2
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, virtual device type"):
        gradviz.device("tpu:0")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        gradviz.device("virtual:x")


def test_array_module_is_chosen_per_device_in_one_place() -> None:
    assert array_module(as_device("cpu")) is np
    assert array_module(as_device("virtual:3")) is np


def test_input_buffer_device_is_the_first_non_cpu_gradient() -> None:
    from gradviz.autograd.engine import InputBuffer

    buf = InputBuffer(3)
    assert buf.device() == "cpu"
    buf.add(0, gradviz.ones(1))
    assert buf.device() == "cpu"
    buf.add(2, gradviz.ones(1, device="virtual:1"))
    assert buf.device() == "virtual:1"
    buf.add(1, gradviz.ones(1, device="virtual:0"))
    assert buf.device() == "virtual:0"  # slot order, not arrival order, as torch
    assert buf.add(1, gradviz.ones(1, device="virtual:0")) == "accumulate"
    assert buf.add(1, None) == "undefined"


# -- tensors on devices -----------------------------------------------------------------------


def test_tensor_device_to_and_cpu() -> None:
    x = gradviz.tensor([1.0, 2.0], device="virtual:0", requires_grad=True)
    assert x.device == gradviz.device("virtual:0")
    y = x.to("virtual:1")
    assert str(y.device) == "virtual:1" and y.grad_fn.name() == "ToCopyBackward0"
    z = y.cpu()
    assert str(z.device) == "cpu" and z.grad_fn.name() == "ToCopyBackward0"
    assert x.to("virtual:0") is x  # no copy, no node, as torch
    (z * z).sum().backward()
    assert str(x.grad.device) == "virtual:0"
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_ops_on_different_devices_raise_torchs_error() -> None:
    a = gradviz.ones(2, device="virtual:0")
    b = gradviz.ones(2, device="virtual:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a * gradviz.ones(2)


# -- must-show 1: the same gradients, on the threads torch would use ---------------------------


def _program(T, devs: tuple[str, str, str]):  # noqa: N803 - T is the module: gradviz or torch
    """x (cpu) -> a on devs[0] -> b on devs[1] -> c on devs[2], with a diamond and a leaf per
    device; returns the leaves and the loss."""
    d0, d1, d2 = devs
    x = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    w0 = T.tensor([0.3, -0.2, 0.1], device=d0, requires_grad=True) if T is gradviz else \
        T.tensor([0.3, -0.2, 0.1], requires_grad=True)
    w1 = T.tensor([[1.0, 0.5], [-0.5, 2.0], [0.25, 1.0]], device=d1, requires_grad=True) if T is gradviz \
        else T.tensor([[1.0, 0.5], [-0.5, 2.0], [0.25, 1.0]], requires_grad=True)
    to = (lambda t, d: t.to(d)) if T is gradviz else (lambda t, d: t)
    a = to(x, d0) * w0  # MulBackward0 on d0
    a = a.tanh() + a.sin()  # a diamond on d0
    b = to(a, d1).matmul(w1)  # MmBackward0 on d1
    b = b.exp() * b  # another diamond, on d1
    c = to(b, d2).sigmoid()
    loss = (c * c).sum() + to(x, d2).sum()  # x reaches the loss on two paths
    return (x, w0, w1), loss


def _thread_of(device: str) -> str:
    return "MainThread" if device == "cpu" else f"gradviz-{device}"


def _all_nodes(root) -> list:
    seen, stack, out = set(), [root], []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn)
        stack.extend(f for f, _ in fn.next_functions)
    return out


def test_cross_device_graph_matches_cpu_and_torch_and_runs_on_torchs_threads() -> None:
    torch = pytest.importorskip("torch")
    devs = ("virtual:0", "virtual:1", "cpu")
    leaves, loss = _program(gradviz, devs)
    ran: dict[int, tuple[str, str]] = {}
    expected: dict[int, str] = {}
    lock = threading.Lock()
    for fn in _all_nodes(loss.grad_fn):
        # The device of the node's incoming gradient: the device of its forward output.
        dev = fn.device if fn.name() != "AccumulateGrad" else str(fn.variable.device)
        expected[id(fn)] = _thread_of(dev)

        def pre(grads, fn=fn):
            with lock:
                ran[id(fn)] = (fn.name(), threading.current_thread().name)

        fn.register_prehook(pre)
    assert threading.current_thread().name == "MainThread"
    loss.backward()

    assert set(ran) == set(expected), "every node ran once"
    wrong = {name: (thread, expected[k]) for k, (name, thread) in ran.items() if thread != expected[k]}
    assert not wrong, f"nodes on unexpected threads (ran on, expected): {wrong}"
    threads = {thread for _, thread in ran.values()}
    assert threads == {"MainThread", "gradviz-virtual:0", "gradviz-virtual:1"}
    # Leaves keep their device; gradients arrive there.
    assert [str(t.grad.device) for t in leaves] == ["cpu", "virtual:0", "virtual:1"]

    cpu_leaves, cpu_loss = _program(gradviz, ("cpu", "cpu", "cpu"))
    cpu_loss.backward()
    t_leaves, t_loss = _program(torch, ("cpu", "cpu", "cpu"))
    t_loss.backward()
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-6)
    for mine, cpu, ref in zip(leaves, cpu_leaves, t_leaves, strict=True):
        np.testing.assert_array_equal(mine.grad.numpy(), cpu.grad.numpy())
        np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_device_workers_start_lazily_once_per_device() -> None:
    engine = gradviz.autograd.get_default_engine()
    engine.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("gradviz-")]
    x = gradviz.ones(3, requires_grad=True)
    (x * 2).sum().backward()  # cpu only: no worker
    assert not [t for t in threading.enumerate() if t.name.startswith("gradviz-")]
    for _ in range(3):
        x.to("virtual:5").sum().backward()
    workers = [t for t in threading.enumerate() if t.name.startswith("gradviz-")]
    assert [t.name for t in workers] == ["gradviz-virtual:5"]
    assert workers[0].gv_role == "device_worker" and workers[0].gv_device == "virtual:5"
    assert engine.device_ready_queues["virtual:5"].owner == workers[0].ident
    assert engine.shutdown()
    assert not workers[0].is_alive()


# -- cuda ---------------------------------------------------------------------------------------


@needs_no_cuda
def test_cuda_without_cupy_or_gpu_names_what_is_missing() -> None:
    with pytest.raises(RuntimeError, match="cuda devices need") as info:
        gradviz.tensor([1.0], device="cuda:0")
    msg = str(info.value)
    assert ("cupy is not installed" in msg) or ("NVIDIA GPU" in msg)
    assert "virtual" in msg  # and says what to use instead
    x = gradviz.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="cuda devices need"):
        x.to("cuda:0")
    assert gradviz.cuda.is_available() is False


@needs_cuda
def test_cuda_end_to_end() -> None:
    import cupy

    x = gradviz.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = gradviz.tensor([[0.5], [-1.0]], device="cuda:0", requires_grad=True)
    assert isinstance(w._data, cupy.ndarray)
    y = x.to("cuda:0").matmul(w).tanh()
    assert str(y.device) == "cuda:0" and isinstance(y._data, cupy.ndarray)
    ran = {}

    def pre(grads):
        ran["thread"] = threading.current_thread().name

    y.grad_fn.register_prehook(pre)
    y.cpu().sum().backward()
    assert ran["thread"] == "gradviz-cuda:0"
    assert str(w.grad.device) == "cuda:0" and isinstance(w.grad._data, cupy.ndarray)
    xv = np.array([[1.0, 2.0], [3.0, 4.0]])
    wv = np.array([[0.5], [-1.0]])
    s = 1 - np.tanh(xv @ wv) ** 2
    np.testing.assert_allclose(w.grad.cpu().numpy(), xv.T @ s, rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), s @ wv.T, rtol=1e-5)


@needs_cuda
def test_cuda_and_virtual_devices_in_one_graph() -> None:
    ref_leaves, ref_loss = _program(gradviz, ("cpu", "cpu", "cpu"))
    ref_loss.backward()
    mine, loss2 = _program(gradviz, ("cuda:0", "virtual:0", "cpu"))
    loss2.backward()
    for a, b in zip(mine, ref_leaves, strict=True):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


def _stand_in_cupy(used: list[tuple[str, int]]):
    """A module that answers as cupy would, with numpy arrays, and records Device(n).use()."""
    import types

    class Device:
        def __init__(self, index: int = 0) -> None:
            self.index = index

        def use(self) -> None:
            used.append((threading.current_thread().name, self.index))

        def __enter__(self) -> Device:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    runtime = types.SimpleNamespace(getDeviceCount=lambda: 2)
    cuda = types.SimpleNamespace(Device=Device, runtime=runtime)
    fake = types.ModuleType("cupy")
    fake.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    fake.cuda = cuda
    return fake


@needs_no_cuda
def test_cuda_devices_get_their_own_worker_that_selects_the_gpu(monkeypatch) -> None:
    # Where no GPU exists, a stand-in cupy (numpy underneath) checks the engine's side of cuda:N:
    # one worker thread per cuda device, which makes its GPU current before running nodes, and
    # gradients that cross cpu <-> cuda:1 <-> virtual:0.
    used: list[tuple[str, int]] = []
    monkeypatch.setitem(__import__("sys").modules, "cupy", _stand_in_cupy(used))
    engine = gradviz.autograd.get_default_engine()
    try:
        x = gradviz.tensor([1.0, 2.0], requires_grad=True)
        w = gradviz.tensor([3.0, -1.0], device="cuda:1", requires_grad=True)
        ran: dict[str, str] = {}
        y = x.to("cuda:1") * w
        y.grad_fn.register_prehook(lambda g: ran.setdefault("mul", threading.current_thread().name) and None)
        z = y.to("virtual:0").sin()
        z.cpu().sum().backward()
        assert ran["mul"] == "gradviz-cuda:1"
        assert ("gradviz-cuda:1", 1) in used
        c = np.cos(np.array([3.0, -2.0]))
        np.testing.assert_allclose(x.grad.numpy(), c * [3.0, -1.0], rtol=1e-6)
        np.testing.assert_allclose(w.grad.cpu().numpy(), c * [1.0, 2.0], rtol=1e-6)
        assert str(w.grad.device) == "cuda:1"
    finally:
        assert engine.shutdown(timeout=10)  # the cuda:1 worker must not outlive the stand-in
