"""Transposed convolutions and pixel (un)shuffle against torch 2.13: the same outputs and
gradients (parameters copied from torch, or drawn from the same seed), backward nodes
(ConvolutionBackward0, PixelShuffleBackward0, PixelUnshuffleBackward0), next_functions, sequence
numbers, execution order and errors; gradviz's own finite differences agree too."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from tests._nn_diff import check_fn, check_module, leaf, same_error


def x_(*shape: int, seed: int = 1, rg: bool = True):
    return lambda T: (leaf(T, *shape, seed=seed, requires_grad=rg),)


@pytest.mark.parametrize("kw", [
    {}, {"stride": 2}, {"padding": 1}, {"dilation": 2}, {"groups": 2}, {"bias": False},
    {"stride": 2, "padding": 1, "output_padding": 1}, {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2)},
    {"stride": 1, "dilation": 2, "output_padding": 1}, {"groups": 2, "stride": 2, "dilation": 2, "padding": 2},
    {"kernel_size": (2, 4), "stride": (1, 2)},
])
def test_conv_transpose2d(kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    check_module(lambda nn: nn.ConvTranspose2d(4, 6, k, **kw), x_(2, 4, 5, 6))


def test_conv_transpose2d_unbatched_and_no_input_grad():
    check_module(lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2), x_(2, 4, 5))
    check_module(lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2), x_(2, 2, 4, 5, rg=False))


def test_conv_transpose2d_output_size():
    check_module(lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2), lambda T: (leaf(T, 1, 2, 4, 5), [10, 11]))
    check_module(lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2), lambda T: (leaf(T, 1, 2, 4, 5), [1, 3, 9, 12]))


@pytest.mark.parametrize("kw", [
    {}, {"stride": 2, "padding": 1, "output_padding": 1}, {"groups": 2, "dilation": 2}, {"bias": False, "stride": 3},
])
def test_conv_transpose1d(kw):
    check_module(lambda nn: nn.ConvTranspose1d(4, 6, 3, **kw), x_(2, 4, 7))
    check_module(lambda nn: nn.ConvTranspose1d(4, 6, 3, **kw), x_(4, 7))


def test_functional_conv_transpose_with_weight_grad_only():
    def fn(T):
        x = leaf(T, 2, 3, 4, 4, requires_grad=False)
        w = leaf(T, 3, 2, 2, 2, seed=2)
        b = leaf(T, 2, seed=3)
        return T.nn.functional.conv_transpose2d(x, w, b, stride=2).tanh(), [w, b]

    check_fn(fn)


def test_dcgan_generator_and_discriminator():
    """DCGAN's shapes: a 1x1 latent up to 16x16 through stride-2 transposed convolutions."""
    def make(nn):
        return nn.Sequential(
            nn.ConvTranspose2d(5, 8, 4, 1, 0, bias=False), nn.BatchNorm2d(8), nn.ReLU(True),
            nn.ConvTranspose2d(8, 4, 4, 2, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU(True),
            nn.ConvTranspose2d(4, 3, 4, 2, 1, bias=False), nn.Tanh(),
            nn.Conv2d(3, 4, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        )

    check_module(make, x_(3, 5, 1, 1))


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 3, 4, 2, 2), 2), ((1, 4, 1, 1), 1)])
def test_pixel_shuffle(shape, r):
    check_module(lambda nn: nn.PixelShuffle(r), x_(*shape))
    out_shape = list(shape)
    out_shape[-3] //= r * r
    out_shape[-2] *= r
    out_shape[-1] *= r
    check_module(lambda nn: nn.PixelUnshuffle(r), x_(*out_shape))


def test_pixel_shuffle_values_and_contiguity():
    x = np.arange(2 * 8 * 3 * 2, dtype=np.float32).reshape(2, 8, 3, 2)
    for fn, arg in (("pixel_shuffle", 2), ("pixel_unshuffle", 1)):
        a = getattr(torch.nn.functional, fn)(torch.tensor(x), arg)
        b = getattr(gradviz.nn.functional, fn)(gradviz.tensor(x), arg)
        np.testing.assert_array_equal(b.numpy(), a.numpy())
        assert b.is_contiguous() and b.dtype == gradviz.float32
    y = np.arange(2 * 2 * 4 * 6, dtype=np.float32).reshape(2, 2, 4, 6)
    a = torch.nn.functional.pixel_unshuffle(torch.tensor(y), 2)
    b = gradviz.nn.functional.pixel_unshuffle(gradviz.tensor(y), 2)
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_super_resolution_net():
    def make(nn):
        return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 9, 3, padding=1),
                             nn.PixelShuffle(3))

    check_module(make, x_(2, 1, 4, 5))


def test_pixel_shuffle_double_backward_records_the_other_op():
    """torch's PixelShuffleBackward0 runs pixel_unshuffle: under create_graph it is a node."""
    def fn(T):
        x = leaf(T, 1, 4, 2, 3)
        y = T.nn.functional.pixel_shuffle(x, 2)
        (g,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
        return g, [x]

    check_fn(fn)


def test_default_init_draws_torchs_numbers():
    for make in (lambda nn: nn.ConvTranspose2d(4, 6, (3, 2), groups=2), lambda nn: nn.ConvTranspose1d(3, 5, 4)):
        torch.manual_seed(7)
        a = make(torch.nn)
        gradviz.manual_seed(7)
        b = make(gradviz.nn)
        for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
            assert na == nb and tuple(pa.shape) == tuple(pb.shape)
            np.testing.assert_allclose(pb.detach().numpy(), pa.detach().numpy(), rtol=1e-6)
        assert repr(a) == repr(b)


def test_repr():
    for make in (lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2, dilation=2, bias=False),
                 lambda nn: nn.ConvTranspose1d(4, 6, 3, padding=1), lambda nn: nn.PixelShuffle(2),
                 lambda nn: nn.PixelUnshuffle(3)):
        assert repr(make(gradviz.nn)) == repr(make(torch.nn))


@pytest.mark.parametrize("kw", [{"stride": 2, "padding": 1, "output_padding": 1}, {"groups": 2, "dilation": 2}])
def test_gradcheck(kw):
    x = gradviz.tensor(np.random.default_rng(0).standard_normal((2, 4, 3, 3)), requires_grad=True)
    w = gradviz.tensor(np.random.default_rng(1).standard_normal((4, 2, 3, 3)), requires_grad=True)
    b = gradviz.tensor(np.random.default_rng(2).standard_normal(2 * kw.get("groups", 1)), requires_grad=True)
    assert gradviz.autograd.gradcheck(lambda x, w, b: gradviz.nn.functional.conv_transpose2d(x, w, b, **kw),
                                      (x, w, b))
    assert gradviz.autograd.gradcheck(lambda x: gradviz.nn.functional.pixel_shuffle(x, 2), (x,))
    assert gradviz.autograd.gradcheck(lambda x: gradviz.nn.functional.pixel_unshuffle(x, 3), (x,))


def test_conv_transpose_errors():
    z = lambda T, *s: T.zeros(*s)  # noqa: E731
    f = lambda T: T.nn.functional  # noqa: E731
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 5, 3, 3, 3)))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), groups=3))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), stride=2, output_padding=2))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), output_padding=1))
    same_error(lambda T: f(T).conv_transpose1d(z(T, 2, 4, 5), z(T, 4, 3, 3), stride=2, output_padding=2))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5).double(), z(T, 4, 3, 3, 3).double(), padding=5))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 5, 5), z(T, 4, 3, 3, 3)))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), bias=z(T, 4)))
    same_error(lambda T: f(T).conv_transpose1d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3)))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), padding="same"))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), stride=(1, 2, 3)))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), stride=0))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), padding=-1))
    same_error(lambda T: f(T).conv_transpose2d(z(T, 2, 4, 5, 5), z(T, 4, 3, 3, 3), output_padding=-1))
    same_error(lambda T: T.nn.ConvTranspose2d(4, 6, 3, groups=4))
    same_error(lambda T: T.nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect"))
    same_error(lambda T: T.nn.ConvTranspose2d(4, 6, 3, stride=2)(z(T, 1, 4, 5, 5), output_size=[14, 14]))
    same_error(lambda T: T.nn.ConvTranspose2d(4, 6, 3, stride=2)(z(T, 1, 4, 5, 5), output_size=[14]))


def test_pixel_shuffle_errors():
    f = lambda T: T.nn.functional  # noqa: E731
    same_error(lambda T: f(T).pixel_shuffle(T.zeros(2, 4, 5, 5), 3))
    same_error(lambda T: f(T).pixel_shuffle(T.zeros(5, 5), 2))
    same_error(lambda T: f(T).pixel_shuffle(T.zeros(2, 4, 5, 5), 0))
    same_error(lambda T: f(T).pixel_shuffle(T.zeros(2, 4, 5, 5), -1))
    same_error(lambda T: f(T).pixel_unshuffle(T.zeros(2, 4, 5, 5), 2))
    same_error(lambda T: f(T).pixel_unshuffle(T.zeros(2, 4, 4, 5), 2))
    same_error(lambda T: f(T).pixel_unshuffle(T.zeros(5, 5), 2))
    same_error(lambda T: f(T).pixel_unshuffle(T.zeros(2, 4, 4, 4), 0))


def test_leaky_relu_inplace():
    """DCGAN's nn.LeakyReLU(0.2, inplace=True): LeakyReluBackward1, saving the result."""
    def fn(T):
        x = leaf(T, 3, 4)
        y = T.nn.LeakyReLU(0.2, inplace=True)(x * 2)
        return y * y, [x]

    check_fn(fn)
    same_error(lambda T: T.nn.functional.leaky_relu(leaf(T, 3), 0.2, inplace=True))

    def negative(T):
        x = leaf(T, 3)
        T.nn.functional.leaky_relu(x * 1, -0.2, inplace=True).sum().backward()

    same_error(negative)


def test_device_arrays_stay_on_the_device(monkeypatch):
    """On cuda:0 (cupy, or the strict stand-in that refuses host arrays as cupy does) the ops give
    what they give on cpu, with gradients in device arrays."""
    from tests.engine.test_cuda_strict import _cupy

    gen = _cupy(monkeypatch, strict_indices=True)
    cp = next(gen)
    try:
        def run(dev):
            rng = np.random.default_rng(0)
            vals = [rng.standard_normal(s) for s in ((2, 4, 3, 3), (4, 2, 3, 3), (4,), (2, 4, 5))]
            x, w, b, s = (gradviz.tensor(v, device=dev, requires_grad=True) for v in vals)
            f = gradviz.nn.functional
            y = f.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
            y1 = f.conv_transpose1d(s, w[:, :, 0], None, stride=2)
            loss = (f.pixel_unshuffle(f.pixel_shuffle(y, 2), 2) ** 2).sum() + (y1 ** 2).sum()
            loss = loss + f.leaky_relu(x * 1, 0.2, inplace=True).sum()
            loss.backward()
            return [loss, x.grad, w.grad, b.grad, s.grad]

        got, want = run("cuda:0"), run("cpu")
        for g, v in zip(got, want, strict=True):
            assert str(g.device) == "cuda:0" and isinstance(g._data, cp.ndarray)
            np.testing.assert_allclose(g.detach().cpu().numpy(), v.detach().numpy(), rtol=1e-6, atol=1e-12)
    finally:
        gen.close()
