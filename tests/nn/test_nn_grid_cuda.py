"""F.affine_grid and F.grid_sample on cuda:0 give what they give on cpu, with device arrays
throughout: on cupy and a GPU where present, else on tests/fakecupy.py's strict stand-in."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradviz
import gradviz.nn.functional as F
from tests.engine.test_cuda_strict import cp  # noqa: F401 - the fixture

PADDINGS = ["zeros", "border", "reflection"]


def _run(dev: str, mode: str, padding_mode: str, align: bool) -> list[Any]:
    rng = np.random.default_rng(0)
    x = gradviz.tensor(rng.standard_normal((2, 3, 5, 6)).astype(np.float32), device=dev, requires_grad=True)
    theta = gradviz.tensor(rng.standard_normal((2, 2, 3)).astype(np.float32) * 0.8 + np.eye(2, 3, dtype=np.float32),
                           device=dev, requires_grad=True)
    grid = F.affine_grid(theta, (2, 3, 4, 7), align_corners=align)
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align)
    (out * out).sum().backward()
    return [out, x.grad, theta.grad]


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_grid_ops_on_cuda_match_cpu(cp: Any, mode: str, padding_mode: str, align: bool) -> None:  # noqa: F811
    want = _run("cpu", mode, padding_mode, align)
    got = _run("cuda:0", mode, padding_mode, align)
    for g, w in zip(got, want, strict=True):
        assert str(g.device) == "cuda:0" and isinstance(g._data, cp.ndarray)
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_volumetric_grid_sample_on_cuda_matches_cpu(cp: Any, padding_mode: str) -> None:  # noqa: F811
    def run(dev: str) -> list[Any]:
        rng = np.random.default_rng(1)
        x = gradviz.tensor(rng.standard_normal((2, 2, 3, 4, 5)), device=dev, requires_grad=True)
        g = gradviz.tensor(rng.uniform(-1.4, 1.4, (2, 2, 3, 2, 3)), device=dev, requires_grad=True)
        out = F.grid_sample(x, g, padding_mode=padding_mode, align_corners=False)
        (out * out).sum().backward()
        return [out, x.grad, g.grad]

    for got, want in zip(run("cuda:0"), run("cpu"), strict=True):
        assert str(got.device) == "cuda:0" and isinstance(got._data, cp.ndarray)
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
