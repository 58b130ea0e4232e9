"""Optimizers on cuda:0 under cupy's conversion rules: the same updates as on cpu, and nothing
hands a device array to numpy. Real cupy where a GPU is present, else the strict stand-in
(tests/fakecupy.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import fakecupy
import numpy as np
import pytest

import gradviz


@pytest.fixture
def cp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    try:
        import cupy  # type: ignore[import-not-found]

        real = cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # not installed, or no GPU
        real = None
    mod = real if real is not None else fakecupy.install(device_count=1, strict_indices=True)
    if real is None:
        monkeypatch.setitem(sys.modules, "cupy", mod)
    engine = gradviz.autograd.get_default_engine()
    try:
        yield mod
    finally:
        assert engine.shutdown(timeout=10)


def _host(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy()) if hasattr(t, "cpu") else np.asarray(t)


CASES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adadelta", {"weight_decay": 0.1}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_updates_on_cuda_equal_cpu(name: str, kwargs: dict, cp: Any) -> None:
    rng = np.random.default_rng(0)
    init = rng.standard_normal((4, 3)).astype(np.float32)
    out = {}
    for dev in ("cpu", "cuda:0"):
        p = gradviz.tensor(init, device=dev, requires_grad=True)
        opt = getattr(gradviz.optim, name)([p], **kwargs)
        for _ in range(4):
            opt.zero_grad()  # noqa: B023
            (p * p * p).sum().backward()
            opt.step()
        assert p.device == gradviz.device(dev)
        for v in opt.state[p].values():
            if isinstance(v, gradviz.Tensor) and v.ndim:
                assert v.device == p.device
        out[dev] = _host(p)
    np.testing.assert_array_equal(out["cuda:0"], out["cpu"])


def test_lbfgs_on_cuda_equals_cpu(cp: Any) -> None:
    out = {}
    for dev in ("cpu", "cuda:0"):
        p = gradviz.tensor(np.array([1.5, -0.5, 2.0], np.float64), device=dev, requires_grad=True)
        q = gradviz.tensor(np.array([0.3], np.float64), device=dev, requires_grad=True)
        opt = gradviz.optim.LBFGS([p, q], lr=1, max_iter=6, line_search_fn="strong_wolfe")

        def closure() -> Any:
            opt.zero_grad()  # noqa: B023
            loss = (p * p * p * p).sum() + (p * p).sum()  # noqa: B023
            loss.backward()
            return loss

        opt.step(closure)
        out[dev] = _host(p)
    np.testing.assert_allclose(out["cuda:0"], out["cpu"], rtol=1e-12)
