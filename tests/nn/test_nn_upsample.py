"""F.interpolate and the Upsample modules against torch 2.13: outputs, gradients, backward node
names, next_functions and order (float64, tests/_diff.py's tolerance), float32 values, shapes and
torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from tests._nn_diff import check_fn, check_module, leaf, same_error


def _interp(shape: tuple, **kw):
    def fn(T):
        x = leaf(T, *shape, seed=4)
        return T.nn.functional.interpolate(x, **kw), [x]

    return fn


CASES_2D = [
    {"scale_factor": 2}, {"scale_factor": 3}, {"size": (8, 9)}, {"size": 4}, {"scale_factor": (0.5, 2.3)},
    {"scale_factor": 1.7, "recompute_scale_factor": True}, {"size": (5, 7)},
    {"scale_factor": 2, "mode": "bilinear"}, {"scale_factor": 1.5, "mode": "bilinear"},
    {"size": (3, 11), "mode": "bilinear"}, {"scale_factor": 2, "mode": "bilinear", "align_corners": True},
    {"size": (9, 2), "mode": "bilinear", "align_corners": True},
    {"size": (1, 1), "mode": "bilinear", "align_corners": True},
    {"size": (4, 11), "mode": "nearest-exact"}, {"scale_factor": 0.6, "mode": "nearest-exact"},
    {"size": (3, 3), "mode": "area"}, {"scale_factor": 0.5, "mode": "area"},
    {"scale_factor": 2, "mode": "bicubic"}, {"scale_factor": (1.5, 0.6), "mode": "bicubic"},
    {"size": (9, 4), "mode": "bicubic", "align_corners": True}, {"size": (2, 3), "mode": "bicubic"},
    {"size": (5, 7), "mode": "bicubic"}, {"size": (1, 1), "mode": "bicubic", "align_corners": True},
    {"scale_factor": 1.7, "mode": "bicubic", "recompute_scale_factor": True},
]


@pytest.mark.parametrize("kw", CASES_2D, ids=str)
def test_interpolate_2d(kw: dict) -> None:
    check_fn(_interp((2, 3, 5, 7), **kw))


@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": 11}, {"scale_factor": 2.5, "mode": "linear"},
                                {"size": 4, "mode": "linear", "align_corners": True},
                                {"size": 8, "mode": "nearest-exact"}], ids=str)
def test_interpolate_1d(kw: dict) -> None:
    check_fn(_interp((2, 3, 6), **kw))


@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": (3, 5, 4), "mode": "trilinear"},
                                {"scale_factor": 1.5, "mode": "trilinear", "align_corners": True}], ids=str)
def test_interpolate_3d(kw: dict) -> None:
    check_fn(_interp((1, 2, 3, 4, 5), **kw))


@pytest.mark.parametrize("kw", [{"scale_factor": 1.5, "mode": "bilinear"}, {"size": (7, 3)},
                                {"scale_factor": 0.7, "mode": "nearest-exact"},
                                {"scale_factor": 2.5, "mode": "bicubic"}], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_interpolate_low_precision_values(kw: dict, dtype: str) -> None:
    """Positions and weights are computed in float, as torch's kernels do for these dtypes."""
    v = np.random.default_rng(5).standard_normal((2, 2, 6, 5))
    got = [T.nn.functional.interpolate(T.tensor(v, dtype=getattr(T, dtype)), **kw).float().numpy()
           for T in (torch, gradviz)]
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    if kw.get("mode") == "bicubic" and dtype == "float32":
        tol = 1e-5  # torch's vectorized bicubic kernel rounds its 16-term sums a few ulps apart
    np.testing.assert_allclose(got[1], got[0], rtol=tol, atol=tol)


def test_saved_attributes_as_torch_names_them() -> None:
    for T in (torch, gradviz):
        x = T.ones(1, 1, 3, 4, requires_grad=True)
        for mode in ("bilinear", "bicubic"):
            fn = T.nn.functional.interpolate(x, scale_factor=(2, 1.5), mode=mode).grad_fn
            got = (list(fn._saved_output_size), fn._saved_scales_h, fn._saved_scales_w,
                   list(fn._saved_self_sym_sizes), fn._saved_align_corners)
            assert got == ([6, 6], 2.0, 1.5, [1, 1, 3, 4], False), (T.__name__, mode)


@pytest.mark.parametrize("make", [
    lambda nn: nn.Upsample(scale_factor=2), lambda nn: nn.Upsample(size=(6, 8), mode="bilinear"),
    lambda nn: nn.UpsamplingNearest2d(scale_factor=2), lambda nn: nn.UpsamplingBilinear2d(size=(4, 9)),
    lambda nn: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Upsample(scale_factor=2, mode="bilinear"), nn.ReLU()),
])
def test_modules(make) -> None:
    check_module(make, lambda T: (leaf(T, 2, 3, 4, 5, seed=2),))
    assert repr(make(gradviz.nn)) == repr(make(torch.nn))


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), size=3, scale_factor=2),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4)),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), size=(3, 3, 3)),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), scale_factor=(2, 2, 2)),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), size=3, recompute_scale_factor=True),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), scale_factor=2, align_corners=True),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4), scale_factor=2, mode="bilinear"),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), scale_factor=2, mode="linear"),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), scale_factor=2, mode="linear", antialias=True),
    lambda T: T.nn.functional.interpolate(T.ones(4, 4), scale_factor=2, mode="bilinear"),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), scale_factor=0.1),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), size=(3.5, 2)),
    lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4), scale_factor=2, mode="bicubic"),
])
def test_errors_as_torch(call) -> None:
    same_error(call)


@pytest.mark.parametrize("kw", [
    {"size": (35, 35)}, {"size": (16, 13)}, {"scale_factor": 2}, {"size": (3, 5)}, {"scale_factor": (1.5, 0.6)},
    {"size": (9, 4), "align_corners": True}, {"size": (64, 17), "align_corners": True},
    {"scale_factor": 1.7, "recompute_scale_factor": True},
], ids=str)
def test_bicubic_float32_forward_is_torchs_to_the_bit(kw: dict) -> None:
    """torch's compiled bicubic kernel fuses multiply-adds (the source index, the cubic weights,
    the taps' sum); gradviz rounds those once too, so float32 outputs equal torch's exactly
    (CycleGAN-style pipelines resize with bicubic, and a last-bit difference grows through a net)."""
    x = np.random.default_rng(3).random((2, 3, 40, 37), dtype=np.float32)
    t = torch.nn.functional.interpolate(torch.from_numpy(x), mode="bicubic", **kw).numpy()
    g = gradviz.nn.functional.interpolate(gradviz.from_numpy(x), mode="bicubic", **kw).numpy()
    assert g.shape == t.shape
    assert np.array_equal(g, t)
