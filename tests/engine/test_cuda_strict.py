"""gradviz on cuda:0 under cupy's conversion rules: forward and backward of the ops and losses
give what the same program gives on cpu, and nothing hands a device array to numpy or mixes
host arrays into device work.

With cupy and a GPU present these run on the real thing; elsewhere on ``fakecupy``, a strict
stand-in whose arrays refuse implicit conversion as cupy's do (a loose stand-in that handed
out numpy arrays let such bugs through: see tests/engine/test_devices.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import fakecupy
import numpy as np
import pytest

import gradviz
import gradviz.nn.functional as F
from gradviz.device import array_module, as_device


def _real_cupy() -> Any | None:
    try:
        import cupy  # type: ignore[import-not-found]

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # not installed, or cupy's CUDA errors: no GPU
        return None


def _cupy(monkeypatch: pytest.MonkeyPatch, strict_indices: bool, devices: int = 1) -> Iterator[Any]:
    real = _real_cupy()
    if real is not None and real.cuda.runtime.getDeviceCount() < devices:
        pytest.skip(f"needs {devices} GPUs")
    mod = real if real is not None else fakecupy.install(device_count=devices, strict_indices=strict_indices)
    if real is None:
        monkeypatch.setitem(sys.modules, "cupy", mod)
    engine = gradviz.autograd.get_default_engine()
    try:
        yield mod
    finally:
        assert engine.shutdown(timeout=10)  # the cuda:0 worker must not outlive the stand-in


@pytest.fixture
def cp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """cupy, or the stand-in refusing host arrays everywhere, indices included."""
    yield from _cupy(monkeypatch, strict_indices=True)


@pytest.fixture
def cp2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """cupy with two GPUs, or the strict stand-in with two."""
    yield from _cupy(monkeypatch, strict_indices=True, devices=2)


@pytest.fixture
def cp_host_indices(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """cupy, or the stand-in taking host index arrays as cupy does (a copy to the device)."""
    yield from _cupy(monkeypatch, strict_indices=False)


# -- the stand-in itself ------------------------------------------------------------------------


def test_stand_in_refuses_what_cupy_refuses(cp: Any) -> None:
    x = cp.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError):
        x + np.ones(3)  # a host array meeting a device array
    with pytest.raises(TypeError):
        np.where(x > 1, np.zeros((2, 3)), x)
    # what numpy's protocols route to the device type stays there
    assert isinstance(np.tanh(x), cp.ndarray)
    assert isinstance(np.add.reduce(x, axis=1), cp.ndarray)
    assert isinstance(x.sum(), cp.ndarray)  # a 0-d device array, not a numpy scalar
    assert isinstance(np.take_along_axis(x, cp.asarray(np.array([[0], [2]])), axis=1), cp.ndarray)
    np.testing.assert_array_equal(x.get(), np.arange(6.0).reshape(2, 3))
    assert array_module(as_device("cuda:0")) is cp


# -- cpu vs cuda:0 ------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 4))
W = RNG.standard_normal((4, 5))
B = RNG.standard_normal(5)
Y = RNG.standard_normal((6, 5))
TARGET = np.array([0, 4, 2, 2, 1, 3])
CLASS_W = np.array([0.5, 1.0, 2.0, 1.5, 0.25])


def _leaves(dev: str) -> tuple[gradviz.Tensor, ...]:
    return tuple(gradviz.tensor(a, dtype=gradviz.float64, device=dev, requires_grad=True) for a in (X, W, B))


def _target(dev: str, values: np.ndarray = TARGET) -> gradviz.Tensor:
    return gradviz.tensor(values, dtype=gradviz.int64, device=dev)


def _logits(x: gradviz.Tensor, w: gradviz.Tensor, b: gradviz.Tensor) -> gradviz.Tensor:
    return x.matmul(w) + b  # broadcast bias


def _host(t: gradviz.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


PROGRAMS: dict[str, Callable[[str], gradviz.Tensor]] = {}


def program(fn: Callable[..., gradviz.Tensor]) -> Callable[..., gradviz.Tensor]:
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def mm_add_tanh_sum(dev, x, w, b):
    return (x.mm(w) + b).tanh().sum()


@program
def mul_sub_div_mean(dev, x, w, b):
    h = _logits(x, w, b)
    return ((h * h - h * 0.5) / (b * b + 1.0)).mean()


@program
def broadcasting(dev, x, w, b):
    h = x.matmul(w)  # (6, 5)
    col = h[:, :1]  # (6, 1) against (5,)
    return (col * b - h * b.reshape(1, 5) + col).sum()


@program
def log_softmax_sum(dev, x, w, b):
    return (F.log_softmax(_logits(x, w, b), dim=1) * gradviz.tensor(Y, dtype=gradviz.float64, device=dev)).sum()


@program
def softmax_sigmoid_relu(dev, x, w, b):
    h = _logits(x, w, b)
    return (F.softmax(h, dim=1) * h.sigmoid() + F.relu(h)).sum()


@program
def exp_log_sqrt_pow(dev, x, w, b):
    h = _logits(x, w, b)
    return ((h * h + 1.0).log() + (h.abs() + 1.0).sqrt() + (h * 0.1).exp() + h.pow(3)).mean()


@program
def reductions(dev, x, w, b):
    h = _logits(x, w, b)
    return h.sum(dim=1).mean() + h.max(dim=1)[0].sum() + h.mean(dim=0).sum() + h.var(dim=1).sum()


@program
def cross_entropy(dev, x, w, b):
    return F.cross_entropy(_logits(x, w, b), _target(dev))


@program
def cross_entropy_sum(dev, x, w, b):
    return F.cross_entropy(_logits(x, w, b), _target(dev), reduction="sum")


@program
def cross_entropy_weight_ignore(dev, x, w, b):
    weight = gradviz.tensor(CLASS_W, dtype=gradviz.float64, device=dev)
    return F.cross_entropy(_logits(x, w, b), _target(dev), weight=weight, ignore_index=2)


@program
def nll_loss_plain(dev, x, w, b):
    return F.nll_loss(F.log_softmax(_logits(x, w, b), dim=1), _target(dev))


@program
def nll_loss_weight(dev, x, w, b):
    weight = gradviz.tensor(CLASS_W, dtype=gradviz.float64, device=dev)
    return F.nll_loss(F.log_softmax(_logits(x, w, b), dim=1), _target(dev), weight=weight)


@program
def nll_loss_ignore_index(dev, x, w, b):
    return F.nll_loss(F.log_softmax(_logits(x, w, b), dim=1), _target(dev), ignore_index=2)


@program
def nll_loss_none(dev, x, w, b):
    losses = F.nll_loss(F.log_softmax(_logits(x, w, b), dim=1), _target(dev), reduction="none", ignore_index=4)
    return (losses * losses).sum()


@program
def nll_loss_single_sample(dev, x, w, b):
    logp = F.log_softmax(_logits(x, w, b)[0], dim=0)
    return F.nll_loss(logp, gradviz.tensor(3, dtype=gradviz.int64, device=dev))


@program
def mse_loss_mean(dev, x, w, b):
    return F.mse_loss(_logits(x, w, b), gradviz.tensor(Y, dtype=gradviz.float64, device=dev))


@program
def mse_loss_sum_none(dev, x, w, b):
    y = gradviz.tensor(Y, dtype=gradviz.float64, device=dev)
    h = _logits(x, w, b)
    return F.mse_loss(h, y, reduction="sum") + F.mse_loss(h, y * 2.0, reduction="none").mean()


@program
def indexing_and_joins(dev, x, w, b):
    h = _logits(x, w, b)
    idx = gradviz.tensor([0, 2, 2, 5], dtype=gradviz.int64, device=dev)
    picked = h[idx]  # index with repeats: IndexBackward0 accumulates
    rows = h[[1, 3]]  # a list index
    return (gradviz.cat([picked, rows], 0).sum() + gradviz.stack([h[0], h[1]]).mean()
            + h.gather(1, gradviz.tensor([[1], [0], [4], [3], [2], [2]], device=dev)).sum())


@program
def where_clamp_masked(dev, x, w, b):
    h = _logits(x, w, b)
    return (gradviz.where(h > 0, h, h * 0.1) + h.clamp(-0.5, 0.5) + h.masked_fill(h < -1.0, 0.0)).sum()


@program
def more_pointwise(dev, x, w, b):
    h = _logits(x, w, b)
    return (h.sin() * h.cos() + (h * h).log1p() + gradviz.maximum(h, b) - gradviz.minimum(h, h * 0.5)
            + 1.0 / (h * h + 1.0) + (2.0 - h) * h.sign()).sum()


@program
def more_reductions(dev, x, w, b):
    h = _logits(x, w, b)
    return (h.amax(dim=1).sum() + h.max() + h.min() + h.std(dim=0).sum() + h.min(dim=0, keepdim=True)[0].sum()
            + h[h.argmax(dim=1) > 1].sum() + h.sum(dim=(0, 1)))


@program
def shapes_and_views(dev, x, w, b):
    h = _logits(x, w, b)  # (6, 5)
    t = h.t().reshape(30)  # not a view of h: clone and unsafe view
    parts = h.split(2, dim=0)
    p0, p1 = h.chunk(2, dim=1)[0], h.unbind(1)[3]
    e = b.unsqueeze(0).expand(6, 5)
    return ((t * t).sum() + parts[1].sum() * parts[2].mean() + p0.permute(1, 0).flatten().sum()
            + (p1.unsqueeze(1) * e).squeeze().sum() + h.transpose(0, 1).contiguous().view(-1)[3:9].sum())


@program
def products(dev, x, w, b):
    a3 = x.reshape(2, 3, 4)
    m = a3.matmul(w)  # folded: one mm
    bm = gradviz.bmm(a3, a3.transpose(1, 2))
    v = x.mv(w[:, 0]) + x[0].dot(w[:, 1])
    return m.sum() + bm.mean() + (v * v).sum() + b.matmul(w.t()).sum()


@program
def scatter_ops(dev, x, w, b):
    h = _logits(x, w, b)
    idx = gradviz.tensor([[0, 1], [2, 0], [4, 4], [1, 3], [2, 2], [3, 0]], dtype=gradviz.int64, device=dev)
    src = h[:, :2] * 2.0
    return (h.scatter(1, idx[:, :1], src[:, :1]) ** 2).sum() + (h.scatter_add(1, idx, src) ** 2).sum()


# The programs below were found failing on a real GPU (scripts/gpu_check.py, H100, cupy 14.2),
# each where the stand-in had no case yet.


@program
def nn_layers(dev, x, w, b):
    h = F.linear(x, w.t(), b)  # Linear's addmm
    h = F.gelu(h) + F.silu(h) + F.gelu(h, approximate="tanh")
    h = F.layer_norm(h, (5,), b, b)
    return (F.batch_norm(h, None, None, b, b, training=True) ** 2).sum()


@program
def conv_and_pools(dev, x, w, b):
    img = x.reshape(1, 1, 6, 4)
    k = w[:3, :3].reshape(1, 1, 3, 3)
    y = F.conv2d(img, k, padding=1)
    pools = F.max_pool2d(y, 2).sum() + F.avg_pool2d(y, 2).sum() + (F.adaptive_avg_pool2d(y, 1) ** 2).sum()
    return pools + (b * b).sum()


@program
def embedding_and_index(dev, x, w, b):
    idx = gradviz.tensor(np.array([[0, 2], [3, 2]]), device=dev)
    looked_up = (F.embedding(idx, x) ** 2).sum() + (x[idx] * 3.0).sum() + x.gather(1, idx[:, :1].repeat(3, 1)).sum()
    return looked_up + (w.index_select(0, idx[0]) * b).sum()


def _assert_matches(loss: np.ndarray, grads: list[np.ndarray], want_loss: np.ndarray,
                    want_grads: list[np.ndarray]) -> None:
    """A device run's loss and gradients against the cpu run's."""
    np.testing.assert_allclose(loss, want_loss, rtol=1e-6)
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def _run(name: str, dev: str) -> tuple[np.ndarray, list[np.ndarray], list[gradviz.Tensor]]:
    leaves = _leaves(dev)
    loss = PROGRAMS[name](dev, *leaves)
    loss.backward()
    return _host(loss), [_host(t.grad) for t in leaves], [t.grad for t in leaves]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cuda_forward_and_backward_match_cpu(cp: Any, name: str) -> None:
    want_loss, want_grads, _ = _run(name, "cpu")
    loss, grads, raw = _run(name, "cuda:0")
    _assert_matches(loss, grads, want_loss, want_grads)
    for g in raw:  # gradients stay on the device, in device arrays
        assert str(g.device) == "cuda:0" and isinstance(g._data, cp.ndarray)


def test_cuda_float32_cross_entropy_step_matches_cpu(cp: Any) -> None:
    # float32 and the batch shape of an MLP step: nll_loss's plain-targets path on cpu.
    def step(dev: str) -> list[np.ndarray]:
        x = gradviz.tensor(X, device=dev)
        w = gradviz.tensor(W, device=dev, requires_grad=True)
        b = gradviz.tensor(B, device=dev, requires_grad=True)
        loss = F.cross_entropy((x.mm(w) + b).tanh(), _target(dev))
        loss.backward()
        return [_host(loss), _host(w.grad), _host(b.grad)]

    for got, want in zip(step("cuda:0"), step("cpu"), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_cuda_double_backward_of_losses_matches_cpu(cp: Any) -> None:
    # create_graph: NllLossBackwardBackward0 and MseLossBackwardBackward0 run on the device.
    def run(dev: str) -> list[np.ndarray]:
        x, w, b = _leaves(dev)
        h = _logits(x, w, b)
        y = gradviz.tensor(Y, dtype=gradviz.float64, device=dev)
        loss = F.cross_entropy(h, _target(dev), ignore_index=2) + F.mse_loss(h, y)
        (gw,) = gradviz.autograd.grad(loss, (w,), create_graph=True)
        (gw * gw).sum().backward()
        return [_host(t.grad) for t in (x, w, b)]

    for got, want in zip(run("cuda:0"), run("cpu"), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_cross_device_graph_cpu_cuda_cpu_matches_cpu(cp: Any) -> None:
    def run(dev: str) -> tuple[np.ndarray, list[np.ndarray]]:
        x = gradviz.tensor(X, dtype=gradviz.float64, requires_grad=True)  # cpu
        w = gradviz.tensor(W, dtype=gradviz.float64, device=dev, requires_grad=True)
        b = gradviz.tensor(B, dtype=gradviz.float64, requires_grad=True)  # cpu
        h = (x.to(dev).matmul(w)).tanh()  # cpu -> dev
        logits = h.to("cpu") + b  # dev -> cpu
        loss = F.cross_entropy(logits, _target("cpu")) + F.mse_loss(h, h.detach() * 0.5).to("cpu")
        loss.backward()
        assert str(w.grad.device) == dev and str(x.grad.device) == "cpu"
        return _host(loss), [_host(t.grad) for t in (x, w, b)]

    loss, grads = run("cuda:0")
    want_loss, want_grads = run("cpu")
    _assert_matches(loss, grads, want_loss, want_grads)


def test_cuda_nll_loss_reports_a_bad_target(cp: Any) -> None:
    logp = F.log_softmax(gradviz.tensor(X, device="cuda:0"), dim=1)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(logp, _target("cuda:0", np.array([0, 1, 7, 1, 0, 2])))


def test_cpu_scalar_tensor_meets_cuda_tensor_as_torch_allows(cp: Any) -> None:
    # A 0-dim cpu tensor may meet a tensor on any device; its value joins that device, and so
    # does the result (its gradient comes back to cpu).
    def run(dev: str) -> tuple[str, list[np.ndarray]]:
        x, w, b = _leaves(dev)
        s = gradviz.tensor(1.5, dtype=gradviz.float64, requires_grad=True)  # cpu, 0-dim
        h = _logits(x, w, b)
        y = (h * s + s) / (s + 1.0) - s * h.sum() - h.mean() / s
        loss = y.sum()
        loss.backward()
        return str(y.device), [_host(t.grad) for t in (x, w, b, s)]

    dev, grads = run("cuda:0")
    assert dev == "cuda:0"
    for got, want in zip(grads, run("cpu")[1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_cuda_inplace_on_views_matches_cpu(cp: Any) -> None:
    # CopySlices and AsStridedBackward0 index the gradient with the view's element positions
    # (ops.core.view_index), which must be made on the device: the strict stand-in refuses host
    # index arrays, which cupy would copy to the device at every use.
    def run(dev: str) -> list[np.ndarray]:
        x, w, b = _leaves(dev)
        h = _logits(x, w, b)
        h[1].mul_(b)  # an in-place op on a view: h's history becomes CopySlices
        h[:, 2:4].add_(1.5)
        col = h[:, 0]
        h.mul_(0.5)  # col is stale now: its history is regenerated as AsStridedBackward0
        ht = (x.mm(w) + b).t().clone()  # a base that is not C-contiguous (clone keeps the layout)
        ht[1:3].mul_(b[:2].unsqueeze(1))
        ((h * h).sum() + (col * col).sum() + (ht * ht).sum()).backward()
        return [_host(t.grad) for t in (x, w, b)]

    for got, want in zip(run("cuda:0"), run("cpu"), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_cuda_setitem_with_tensor_indices_matches_cpu(cp: Any) -> None:
    # x[index] = value with tensor, list and mask indices: index_put_, whose backward masks the
    # written positions (a mask that must be made on the device).
    def run(dev: str) -> tuple[np.ndarray, list[np.ndarray]]:
        x, w, b = _leaves(dev)
        h = _logits(x, w, b)
        h[gradviz.tensor([0, 3], device=dev)] = b * 2.0
        h[[1, 4], [2, 0]] = 0.25
        h[h > 1.0] = -1.0
        h[gradviz.tensor([5], device=dev), 1] = w[0, 1]
        loss = (h * h).sum()
        loss.backward()
        return _host(loss), [_host(t.grad) for t in (x, w, b)]

    loss, grads = run("cuda:0")
    want_loss, want_grads = run("cpu")
    _assert_matches(loss, grads, want_loss, want_grads)


def test_cuda_views_of_expanded_tensors_share_memory_as_on_cpu(cp: Any) -> None:
    # torch views expanded tensors where computeStride allows it; a copy would not see later
    # in-place changes of the base.
    def run(dev: str) -> list[np.ndarray]:
        base = gradviz.tensor([[1.0], [2.0]], dtype=gradviz.float64, device=dev)
        p = base.expand(2, 3).unbind(0)[1].expand(2, 3).t().reshape(2, 3)
        q = base.expand(2, 6).view(2, 2, 3)
        r = base.expand(2, 3).reshape(3, 2)  # no view possible: a copy, as torch
        base.mul_(10.0)
        return [_host(p), _host(q), _host(r)]

    for got, want in zip(run("cuda:0"), run("cpu"), strict=True):
        np.testing.assert_array_equal(got, want)


def _is_stand_in(cp: Any) -> bool:
    return hasattr(cp, "transfers")


def test_cuda_to_copy_stays_on_the_device(cp2: Any) -> None:
    # dtype casts on a GPU and copies between GPUs are made there (cupy: astype, and asarray
    # under the target's Device), not through host memory; gradients come back the same way.
    def run(dev0: str, dev1: str) -> tuple[list[gradviz.Tensor], list[np.ndarray]]:
        x, w, b = _leaves(dev0)
        h = _logits(x, w, b)
        before = dict(cp2.transfers) if _is_stand_in(cp2) else None
        h32 = h.to(gradviz.float32)
        moved = h.to(dev1)
        both = h32.to(dev1, gradviz.float64)
        same = h.to(dev0)
        if before is not None and dev0 != "cpu":
            assert cp2.transfers == before, "a cuda->cuda copy or a cast went through the host"
        assert same is h
        loss = (h32.double() * 2.0).sum() + ((moved * moved).sum() + both.mean()).to(dev0)
        loss.backward()
        return [h32, moved, both], [_host(t.grad) for t in (x, w, b)]

    outs, grads = run("cuda:0", "cuda:1")
    want_outs, want_grads = run("cpu", "cpu")
    assert [str(t.device) for t in outs] == ["cuda:0", "cuda:1", "cuda:1"]
    assert [t._data.device.id for t in outs] == [0, 1, 1]  # where the memory is, not only the label
    assert [t.dtype for t in outs] == [t.dtype for t in want_outs]
    for got, want in zip([_host(t) for t in outs] + grads, [_host(t) for t in want_outs] + want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


# torch 2.13's message for a device mismatch caught by a CUDA kernel's wrapper (the device check
# generated for nll_loss_forward, ATen's common_device_check_failure): it cannot be raised by
# torch without a GPU, so it is spelled out here.
def _torch_device_message(arg: str, got: str, common: str, method: str) -> str:
    return (f"Expected all tensors to be on the same device, but got {arg} is on {got}, different from "
            f"other tensors on {common} (when checking argument in method wrapper_CUDA_{method})")


def test_nll_loss_and_cross_entropy_check_the_target_device(cp: Any) -> None:
    logits = gradviz.tensor(X @ W + B, dtype=gradviz.float64, device="cuda:0", requires_grad=True)
    logp = F.log_softmax(logits, dim=1)
    want = _torch_device_message("target", "cpu", "cuda:0", "nll_loss_forward")
    with pytest.raises(RuntimeError) as e:
        F.nll_loss(logp, _target("cpu"))
    assert str(e.value) == want
    with pytest.raises(RuntimeError) as e:
        F.cross_entropy(logits, _target("cpu"))
    assert str(e.value) == want
    with pytest.raises(RuntimeError) as e:
        F.cross_entropy(logits.detach().cpu(), _target("cuda:0"))
    assert str(e.value) == _torch_device_message("target", "cuda:0", "cpu", "nll_loss_forward")
    with pytest.raises(RuntimeError) as e:
        F.nll_loss(logp, _target("cuda:0"), weight=gradviz.tensor(CLASS_W, dtype=gradviz.float64))
    assert str(e.value) == _torch_device_message("weight", "cpu", "cuda:0", "nll_loss_forward")
    with pytest.raises(RuntimeError) as e:  # input of more than 2 dims: torch's nll_loss2d
        F.nll_loss(logp.reshape(2, 3, 5), gradviz.tensor(np.zeros((2, 5)), dtype=gradviz.int64))
    assert str(e.value) == _torch_device_message("target", "cpu", "cuda:0", "nll_loss2d_forward")
    # the same device, however spelled, is no mismatch
    F.nll_loss(logp, gradviz.tensor(TARGET, dtype=gradviz.int64, device=gradviz.device("cuda", 0)))


def test_tensor_from_a_device_array_keeps_its_device(cp: Any) -> None:
    # torch.tensor/as_tensor of a GPU array (__cuda_array_interface__): a copy on that GPU unless
    # a device is given.
    a = cp.asarray(X)
    t = gradviz.tensor(a)
    assert str(t.device) == "cuda:0" and t.dtype is gradviz.float64 and isinstance(t._data, cp.ndarray)
    np.testing.assert_array_equal(_host(t), X)
    t.add_(1.0)  # a copy: the array is not changed
    np.testing.assert_array_equal(cp.asnumpy(a), X)
    c = gradviz.tensor(a, dtype=gradviz.float32, device="cpu", requires_grad=True)
    assert str(c.device) == "cpu" and c.dtype is gradviz.float32 and c.requires_grad
    np.testing.assert_allclose(c.detach().numpy(), X.astype(np.float32))
    i = gradviz.tensor(cp.asarray(TARGET.astype(np.int32)))  # int32 stays int32, as torch's
    assert i.dtype is gradviz.int32 and str(i.device) == "cuda:0"
    # the same program with numpy arrays on cpu
    assert gradviz.tensor(TARGET.astype(np.int32)).dtype is gradviz.int32


def test_tensor_of_cuda_tensors_copies_as_torch(cp: Any) -> None:
    import warnings

    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.tensor(torch.ones(2))
    (torch_warning,) = caught
    src = gradviz.tensor(X, dtype=gradviz.float64, device="cuda:0", requires_grad=True)
    with pytest.warns(UserWarning) as got:
        t = gradviz.tensor(src)
    assert [str(w.message) for w in got] == [str(torch_warning.message)]
    assert got[0].filename == __file__  # pointing at the caller, as torch's does
    assert str(t.device) == "cuda:0" and t.is_leaf and not t.requires_grad and t._data is not src._data
    np.testing.assert_array_equal(_host(t), X)
    with pytest.warns(UserWarning):
        moved = gradviz.tensor(src, dtype=gradviz.float32, device="cpu")
    assert str(moved.device) == "cpu" and moved.dtype is gradviz.float32
    # A list of one-element tensors: their values, on the default device (cpu) as torch's.
    items = [gradviz.tensor(1.0, device="cuda:0"), gradviz.tensor(2.5, device="cuda:0")]
    want = torch.tensor([torch.tensor(1.0), torch.tensor(2.5)])
    got_list = gradviz.tensor(items)
    assert str(got_list.device) == "cpu" and got_list.dtype.name == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got_list.numpy(), want.numpy())
    on_dev = gradviz.tensor(items, device="cuda:0")
    assert str(on_dev.device) == "cuda:0"
    np.testing.assert_array_equal(_host(on_dev), want.numpy())


def test_copies_of_a_second_gpus_data_stay_on_it(cp2: Any) -> None:
    # cupy makes new arrays (astype, copy) on the thread's current GPU, 0 here: a cast or a copy
    # of cuda:1's data must be made with cuda:1 current.
    x = gradviz.tensor(X, dtype=gradviz.float64, device="cuda:1")
    with cp2.cuda.Device(1):
        a = cp2.asarray(X)
    made = [x.to(gradviz.float32), x.to(gradviz.float32).to("cuda:1", gradviz.float64), gradviz.tensor(a),
            gradviz.tensor(a, dtype=gradviz.float32)]
    with pytest.warns(UserWarning):
        made += [gradviz.tensor(x), gradviz.tensor(x, dtype=gradviz.float32)]
    assert [str(t.device) for t in made] == ["cuda:1"] * len(made)
    assert [t._data.device.id for t in made] == [1] * len(made)
    for t in made:
        np.testing.assert_allclose(_host(t), X, rtol=1e-6)


def test_cuda_mlp_training_steps_match_cpu(cp: Any) -> None:
    # Modules moved with .to(), cross-entropy, SGD with momentum: five steps on the device give
    # the cpu's parameters (found failing on a real GPU: Linear's backward handed cupy's arrays
    # to numpy).
    def train(dev: str) -> list[np.ndarray]:
        gradviz.manual_seed(0)
        net = gradviz.nn.Sequential(gradviz.nn.Linear(4, 8), gradviz.nn.ReLU(), gradviz.nn.Linear(8, 5)).to(dev)
        opt = gradviz.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        x = gradviz.tensor(X, dtype=gradviz.float32, device=dev)
        for _ in range(5):
            opt.zero_grad()
            F.cross_entropy(net(x), _target(dev)).backward()
            opt.step()
        return [_host(p) for p in net.parameters()]

    for got, want in zip(train("cuda:0"), train("cpu"), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_stand_in_refuses_a_tuple_of_indices_through_numpys_ufunc_at(cp: Any) -> None:
    # cupy's __array_ufunc__ takes arrays and scalars only: np.add.at(device, (rows, cols), v)
    # ends in numpy's "returned NotImplemented"; cupy.add.at itself takes the tuple.
    a = cp.zeros((3, 3))
    rows = cp.asarray(np.array([0, 2, 2]))
    with pytest.raises(TypeError, match="NotImplemented"):
        np.add.at(a, (rows, slice(None)), cp.ones((3, 3)))
    cp.add.at(a, (rows, slice(None)), cp.ones((3, 3)))
    np.testing.assert_array_equal(cp.asnumpy(a), [[1, 1, 1], [0, 0, 0], [2, 2, 2]])


# -- more of torch's surface on the device (each program its own case: a failure names its op) --

SURFACE: dict[str, Callable[[str], list[gradviz.Tensor]]] = {}


def surface(fn: Callable[[str], list[gradviz.Tensor]]) -> Callable[[str], list[gradviz.Tensor]]:
    SURFACE[fn.__name__] = fn
    return fn


def _leaf(a: np.ndarray, dev: str) -> gradviz.Tensor:
    return gradviz.tensor(a, dtype=gradviz.float64, device=dev, requires_grad=True)


@surface
def addmm_baddbmm(dev):
    i, a, b = _leaf(B, dev), _leaf(X, dev), _leaf(W, dev)
    bb = _leaf(np.random.default_rng(3).standard_normal((2, 3, 4)), dev)
    out = gradviz.addmm(i, a, b, beta=0.5, alpha=2.0).sum() + gradviz.baddbmm(
        gradviz.zeros(2, 3, 3, dtype=gradviz.float64, device=dev), bb, bb.transpose(1, 2), alpha=0.5).sum()
    return [out, i, a, b, bb]


@surface
def clamp_sort_topk(dev):
    a = _leaf(X, dev)
    lo = gradviz.tensor(-0.5, dtype=gradviz.float64, device=dev)
    hi = gradviz.tensor([0.7, 0.2, 0.9, 0.4], dtype=gradviz.float64, device=dev)
    out = a.clamp(lo, hi).sum() + a.sort(1).values[:, :2].sum() + a.topk(2, 1).values.sum() + a.cumprod(1).sum()
    return [out, a]


@surface
def losses_with_options(dev):
    a = _leaf(Y, dev)
    t = _target(dev)
    out = (F.cross_entropy(a, t, label_smoothing=0.1) + F.cross_entropy(a, t, ignore_index=2)
           + F.binary_cross_entropy_with_logits(a, (a.detach() > 0).double())
           + F.smooth_l1_loss(a, a.detach() * 0.5)
           + F.kl_div(a.log_softmax(1), a.detach().softmax(1), reduction="batchmean"))
    return [out, a]


@surface
def norms_and_linalg(dev):
    a = _leaf(X, dev)
    out = gradviz.linalg.vector_norm(a, 3) + gradviz.linalg.matrix_norm(a) + a.norm(dim=1).sum()
    return [out + gradviz.linalg.norm(a), a]


@surface
def recurrent_and_attention(dev):
    gradviz.manual_seed(0)
    lstm = gradviz.nn.LSTM(4, 3, batch_first=True).double().to(dev)
    attn = gradviz.nn.MultiheadAttention(4, 2, batch_first=True).double().to(dev)
    x = _leaf(X.reshape(2, 3, 4), dev)
    y, _ = lstm(x)
    z, _ = attn(x, x, x, need_weights=False)
    return [y.sum() + (z * z).sum(), x]


@surface
def clip_and_adam(dev):
    gradviz.manual_seed(0)
    net = gradviz.nn.Linear(4, 5).double().to(dev)
    opt = gradviz.optim.Adam(net.parameters(), lr=0.01)
    x = gradviz.tensor(X, dtype=gradviz.float64, device=dev)
    for _ in range(3):
        opt.zero_grad()
        F.mse_loss(net(x), gradviz.tensor(Y, dtype=gradviz.float64, device=dev)).backward()
        gradviz.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        opt.step()
    w = net.weight
    return [(w * w).sum(), w]


@pytest.mark.parametrize("name", sorted(SURFACE))
def test_cuda_surface_matches_cpu(cp: Any, name: str) -> None:
    got = SURFACE[name]("cuda:0")
    want = SURFACE[name]("cpu")
    got[0].backward()
    want[0].backward()
    np.testing.assert_allclose(_host(got[0]), _host(want[0]), rtol=1e-6)
    for g, w in zip(got[1:], want[1:], strict=True):
        assert isinstance(g.grad._data, cp.ndarray)
        np.testing.assert_allclose(_host(g.grad), _host(w.grad), rtol=1e-6, atol=1e-12)
