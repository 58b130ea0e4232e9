"""InstanceNorm1d/2d/3d and F.instance_norm against torch 2.13: outputs, gradients, the graph torch
builds (a view of the input folded to (1, N*C, ...), RepeatBackward0 for the affine parameters,
NativeBatchNormBackward0, a view back), execution order, running statistics, repr and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from tests._nn_diff import check_fn, check_module, leaf, same_error


@pytest.mark.parametrize("kw", [{}, {"affine": True}, {"affine": True, "bias": False},
                                {"track_running_stats": True}, {"affine": True, "track_running_stats": True,
                                                                "momentum": None}], ids=str)
@pytest.mark.parametrize("dims,shape", [(1, (2, 3, 6)), (1, (3, 6)), (2, (2, 3, 4, 5)), (2, (3, 4, 5)),
                                        (3, (2, 3, 2, 3, 4))], ids=str)
@pytest.mark.parametrize("train", [True, False])
def test_modules(kw: dict, dims: int, shape: tuple, train: bool) -> None:
    check_module(lambda nn: getattr(nn, f"InstanceNorm{dims}d")(3, **kw), lambda T: (leaf(T, *shape, seed=3),),
                 train=train)


def test_running_statistics_over_steps() -> None:
    stats = []
    for T in (torch, gradviz):
        m = T.nn.InstanceNorm2d(2, track_running_stats=True, momentum=0.3).double()
        for s in range(3):
            m(leaf(T, 4, 2, 3, 3, seed=s))
        m.eval()
        out = m(leaf(T, 1, 2, 3, 3, seed=9))
        stats.append([m.running_mean.numpy(), m.running_var.numpy(), int(m.num_batches_tracked), out.detach().numpy()])
    for a, b in zip(*stats):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_functional_with_running_stats() -> None:
    def fn(T):
        x = leaf(T, 2, 3, 5, seed=1)
        w, b = leaf(T, 3, seed=2), leaf(T, 3, seed=3)
        rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
        out = T.nn.functional.instance_norm(x, rm, rv, w, b, use_input_stats=True, momentum=0.5)
        return out + rm.sum() + rv.sum(), [x, w, b]

    check_fn(fn)


def test_repr_and_state_dict() -> None:
    for kw in ({}, {"affine": True}, {"affine": True, "bias": False, "track_running_stats": True}):
        t, g = torch.nn.InstanceNorm2d(4, **kw), gradviz.nn.InstanceNorm2d(4, **kw)
        assert repr(g) == repr(t)
        assert list(g.state_dict()) == list(t.state_dict())


@pytest.mark.parametrize("call", [
    lambda T: T.nn.InstanceNorm2d(3)(T.ones(2, 3)),
    lambda T: T.nn.InstanceNorm1d(3, affine=True)(T.ones(2, 4, 5)),
    lambda T: T.nn.InstanceNorm2d(3)(T.ones(2, 3, 1, 1)),
    lambda T: T.nn.functional.instance_norm(T.ones(2, 3, 4), use_input_stats=False),
])
def test_errors_as_torch(call) -> None:
    same_error(call)


def test_a_size_mismatch_without_affine_warns_as_torch() -> None:
    for T in (torch, gradviz):
        with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
            T.nn.InstanceNorm1d(3)(T.ones(2, 4, 5))
