"""F.affine_grid and F.grid_sample against torch 2.13: the same outputs and gradients, backward
nodes (AffineGridGeneratorBackward0, GridSampler2DBackward0, GridSampler3DBackward0), next_functions, sequence numbers,
execution order, warnings and errors, for modes bilinear and nearest, every padding mode and both
align_corners, 4-d and 5-d input; gradviz's own finite differences agree too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import gradviz
from tests._diff import Case, check
from tests._nn_diff import check_fn, check_module, leaf, same_error

MODES = ["bilinear", "nearest"]
PADDINGS = ["zeros", "border", "reflection"]


def _grid(T, n, h, w, scale, seed=5, requires_grad=True):
    """Sample points in [-scale, scale]: past 1 they reach the padding."""
    data = (np.random.default_rng(seed).uniform(-1, 1, (n, h, w, 2)) * scale)
    return T.tensor(data, dtype=T.float64, requires_grad=requires_grad)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("scale", [0.9, 2.5])
def test_grid_sample(mode, padding_mode, align_corners, scale):
    def fn(T):
        x = leaf(T, 2, 3, 5, 6)
        g = _grid(T, 2, 4, 7, scale)
        out = T.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        return out, [x, g]

    check_fn(fn)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d(mode, padding_mode, align_corners):
    def fn(T):
        x = leaf(T, 2, 2, 3, 4, 5)
        g = T.tensor(np.random.default_rng(6).uniform(-1.6, 1.6, (2, 3, 2, 4, 3)), dtype=T.float64, requires_grad=True)
        out = T.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        return out, [x, g]

    check_fn(fn)


def test_volumetric_spatial_transformer():
    def fn(T):
        x = leaf(T, 2, 1, 3, 4, 5)
        theta = leaf(T, 2, 3, 4, seed=2)
        grid = T.nn.functional.affine_grid(theta * 0.5, x.size(), align_corners=False)
        return T.nn.functional.grid_sample(x, grid, align_corners=False), [x, theta]

    check_fn(fn)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (3, 1, 7, 2), (1, 2, 1, 4)])
def test_affine_grid(align_corners, size):
    def fn(T):
        theta = leaf(T, size[0], 2, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unit-size warning: compared in test_warnings
            return T.nn.functional.affine_grid(theta, size, align_corners=align_corners).exp(), [theta]

    check_fn(fn)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_3d(align_corners):
    def fn(T):
        theta = leaf(T, 2, 3, 4)
        return T.nn.functional.affine_grid(theta, (2, 3, 4, 2, 5), align_corners=align_corners).sin(), [theta]

    check_fn(fn)


@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_spatial_transformer_identity_float32(padding_mode, align_corners):
    """The spatial transformer tutorial's start: an identity theta (float32) puts every sample on
    a pixel centre, where the bilinear derivative jumps. Only torch's float32 arithmetic (its
    fused multiply-adds) puts each point on the same side of its pixel: the same output, bit for
    bit, and the same theta gradient up to the order of its sums."""
    res = []
    for T in (torch, gradviz):
        x = T.tensor(np.random.default_rng(3).standard_normal((3, 2, 9, 28)), dtype=T.float32, requires_grad=True)
        theta = T.tensor([[[1.0, 0, 0], [0, 1, 0]]] * 3, dtype=T.float32, requires_grad=True)
        grid = T.nn.functional.affine_grid(theta, x.size(), align_corners=align_corners)
        out = T.nn.functional.grid_sample(x, grid, padding_mode=padding_mode, align_corners=align_corners)
        g = T.tensor(np.random.default_rng(4).standard_normal(tuple(out.shape)), dtype=T.float32)
        out.backward(g)
        res.append((out.detach().numpy(), x.grad.numpy(), theta.grad.numpy(), out.grad_fn.name()))
    (ref, ref_x, ref_t, ref_name), (got, got_x, got_t, got_name) = res
    assert got_name == ref_name == "GridSampler2DBackward0"
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_allclose(got_x, ref_x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_t, ref_t, rtol=0, atol=1e-5 * np.abs(ref_t).max())


def test_affine_grid_float32_exact():
    for h, w in [(7, 8), (28, 28), (16, 100), (1, 33), (255, 3)]:
        for align in (False, True):
            theta = np.array([[[1.0, 0, 0], [0, 1, 0]]], dtype=np.float32)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = torch.nn.functional.affine_grid(torch.tensor(theta), (1, 1, h, w), align_corners=align)
                got = gradviz.nn.functional.affine_grid(gradviz.tensor(theta), (1, 1, h, w), align_corners=align)
            np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_only_one_side_requires_grad():
    def input_only(T):
        x = leaf(T, 2, 1, 4, 4)
        return T.nn.functional.grid_sample(x, _grid(T, 2, 3, 3, 1.2, requires_grad=False), align_corners=False), [x]

    def grid_only(T):
        g = _grid(T, 2, 3, 3, 1.2)
        x = leaf(T, 2, 1, 4, 4, requires_grad=False)
        return T.nn.functional.grid_sample(x, g, padding_mode="border", align_corners=True), [g]

    check_fn(input_only)
    check_fn(grid_only)


def test_stn_module():
    """A small spatial transformer: localisation net -> theta -> affine_grid -> grid_sample."""

    def make(nn):
        class STN(nn.Module):
            def __init__(self):
                super().__init__()
                self.loc = nn.Sequential(nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), nn.ReLU(True))
                self.fc = nn.Linear(4 * 3 * 3, 6)

            def forward(self, x):
                theta = self.fc(self.loc(x).view(-1, 36)).view(-1, 2, 3)
                grid = nn.functional.affine_grid(theta, x.size(), align_corners=False)
                return nn.functional.grid_sample(x, grid, align_corners=False)

        return STN()

    check_module(make, lambda T: (leaf(T, 2, 1, 8, 8),))


def test_saved_values_and_names():
    for T in (torch, gradviz):
        theta = T.zeros(1, 2, 3, requires_grad=True)
        g = T.nn.functional.affine_grid(theta, (1, 2, 3, 4), align_corners=True)
        assert g.grad_fn.name() == "AffineGridGeneratorBackward0"
        assert tuple(g.grad_fn._saved_size) == (1, 2, 3, 4) and g.grad_fn._saved_align_corners is True
        y = T.nn.functional.grid_sample(T.ones(1, 2, 3, 4), g, mode="nearest", padding_mode="reflection",
                                        align_corners=True)
        fn = y.grad_fn
        assert fn.name() == "GridSampler2DBackward0"
        assert (fn._saved_interpolation_mode, fn._saved_padding_mode, fn._saved_align_corners) == (1, 2, True)
        assert fn.next_functions[0] == (None, 0)


def test_nearest_gives_the_grid_zero_gradient():
    for T in (torch, gradviz):
        g = _grid(T, 1, 2, 2, 1.0)
        x = T.ones(1, 1, 3, 3, dtype=T.float64)
        T.nn.functional.grid_sample(x, g, mode="nearest", align_corners=False).sum().backward()
        assert g.grad is not None and not g.grad.abs().sum().item()


def test_gradcheck():
    rng = np.random.default_rng(0)
    x = gradviz.tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    # points away from pixel centres and borders, where the sampling is smooth
    g = gradviz.tensor(rng.uniform(-1.3, 1.3, (1, 3, 2, 2)) + 0.013, requires_grad=True)
    for pad in PADDINGS:
        for align in (False, True):
            assert gradviz.autograd.gradcheck(
                lambda x, g, pad=pad, align=align: gradviz.nn.functional.grid_sample(
                    x, g, padding_mode=pad, align_corners=align), (x, g))
    x3 = gradviz.tensor(rng.standard_normal((1, 2, 2, 3, 4)), requires_grad=True)
    g3 = gradviz.tensor(rng.uniform(-1.3, 1.3, (1, 2, 1, 2, 3)) + 0.013, requires_grad=True)
    for pad in PADDINGS:
        assert gradviz.autograd.gradcheck(
            lambda x, g, pad=pad: gradviz.nn.functional.grid_sample(x, g, padding_mode=pad, align_corners=True),
            (x3, g3))
    theta = gradviz.tensor(rng.standard_normal((2, 2, 3)), requires_grad=True)
    assert gradviz.autograd.gradcheck(lambda t: gradviz.nn.functional.affine_grid(t, (2, 1, 3, 4), False), (theta,))


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


def test_warnings():
    for case in (
        lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), (1, 1, 2, 2)),
        lambda T: T.nn.functional.grid_sample(T.zeros(1, 1, 2, 2), T.zeros(1, 1, 1, 2)),
        lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), (1, 1, 1, 2), align_corners=True),
    ):
        assert _warnings_of(lambda c=case: c(gradviz)) == _warnings_of(lambda c=case: c(torch))


@pytest.mark.parametrize("case", [
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 3, 3), T.zeros(1, 2, 2, 2), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 3, 3), T.zeros(2, 2, 2, 3), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 3, 3), T.zeros(2, 2, 2, 5, 3), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(1, 3, 3), T.zeros(2, 2, 2), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 0, 3), T.zeros(2, 2, 2, 2), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 3, 3), T.zeros(2, 2, 2, 2, dtype=T.float64),
                                          align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 3, 3), T.zeros(2, 2, 2, 2), mode="cubic"),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 3, 3), T.zeros(2, 2, 2, 2), padding_mode="wrap"),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 3, 4), T.zeros(2, 5, 1), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 3, 4, 5, 6), T.zeros(2, 2, 3, 3), align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 3, 4, 5, 6), T.zeros(2, 1, 2, 3, 3), mode="bicubic",
                                          align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 3, 4, 5, 6, dtype=T.int32), T.zeros(2, 1, 2, 3, 3),
                                          align_corners=False),
    lambda T: T.nn.functional.grid_sample(T.zeros(2, 3, 4, 5), T.zeros(2, 2, 3, 2, dtype=T.float64),
                                          align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (2, 3, 4), align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (2, 3, 0, 4), align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(3, 2, 3), (2, 3, 4, 4), align_corners=False),
])
def test_errors(case):
    same_error(case)


@pytest.mark.parametrize("case", [
    lambda T: T.nn.functional.affine_grid(T.zeros(2, 3, 3), (2, 3, 4, 5), align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (2, 3, 4, 5, 6), align_corners=False),
    lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3, dtype=T.int64), (2, 3, 4, 5), align_corners=False),
])
def test_errors_naming_a_shape_or_dtype(case):
    """The same errors, up to the module name in a shape's or dtype's repr (gradviz.Size)."""
    errs = []
    for T in (torch, gradviz):
        with pytest.raises(ValueError) as info:
            case(T)
        errs.append(str(info.value).replace("gradviz.", "torch."))
    assert errs[0] == errs[1]


def test_empty_batch_channels_and_grid():
    for x_shape, g_shape in [((0, 3, 4, 5), (0, 2, 2, 2)), ((2, 0, 4, 5), (2, 2, 2, 2)), ((2, 3, 4, 5), (2, 0, 3, 2))]:
        outs = []
        for T in (torch, gradviz):
            x = T.zeros(*x_shape, requires_grad=True)
            g = T.zeros(*g_shape, requires_grad=True)
            y = T.nn.functional.grid_sample(x, g, align_corners=False)
            y.sum().backward()
            outs.append((tuple(y.shape), tuple(x.grad.shape), tuple(g.grad.shape)))
        assert outs[0] == outs[1]


def test_affine_grid_double_backward():
    """torch composes affine_grid's backward of ops: under create_graph=True its gradient has a
    graph (TransposeBackward0 <- BmmBackward0 <- ViewBackward0) that a second backward walks."""

    def prog(T):
        theta = leaf(T, 2, 2, 3)
        w = leaf(T, 2, 3, 4, 2, seed=1)
        grid = T.nn.functional.affine_grid(theta, (2, 1, 3, 4), align_corners=False)
        (gt,) = T.autograd.grad((grid * w).sum(), theta, create_graph=True)
        loss = (gt**2).sum()
        return Case(roots=[loss], run=lambda: loss.backward(), grads_of=[w])

    check(prog)


def test_grid_sample_double_backward_is_refused():
    """torch has GridSampler2DBackwardBackward0; gradviz says it lacks it rather than give a
    gradient with no graph."""
    x = gradviz.randn(1, 1, 3, 3, dtype=gradviz.float64, requires_grad=True)
    g = gradviz.zeros(1, 2, 2, 2, dtype=gradviz.float64, requires_grad=True)
    y = gradviz.nn.functional.grid_sample(x, g, align_corners=False)
    with pytest.raises(NotImplementedError, match="GridSampler2DBackward0"):
        gradviz.autograd.grad(y.sum(), (x, g), create_graph=True)
