"""nn.init.sparse_ and nn.utils' convert_conv*_weight_memory_format against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


@pytest.mark.parametrize("shape,sparsity,std", [((6, 4), 0.5, 0.01), ((5, 3), 0.1, 1.0), ((4, 2), 0.0, 0.3)])
def test_init_sparse_matches_torch(shape, sparsity, std):
    def run(mod, fn):
        mod.manual_seed(3)
        t = mod.empty(*shape)
        getattr(mod.nn.init, fn)(t, sparsity, std=std)
        return t.numpy().copy()

    assert np.array_equal(run(gradviz, "sparse_"), run(torch, "sparse_"))
    assert np.array_equal(run(gradviz, "sparse"), run(torch, "sparse_"))


def test_init_sparse_refuses_other_ranks_as_torch():
    for mod in (torch, gradviz):
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            mod.nn.init.sparse_(mod.empty(2, 3, 4), 0.5)


@pytest.mark.parametrize("fn,conv,fmt", [("convert_conv2d_weight_memory_format", "Conv2d", "channels_last"),
                                         ("convert_conv3d_weight_memory_format", "Conv3d", "channels_last_3d")])
def test_convert_conv_weight_memory_format_matches_torch(fn, conv, fmt):
    def run(mod):
        mod.manual_seed(0)
        net = mod.nn.Sequential(getattr(mod.nn, conv)(3, 4, 2), mod.nn.ReLU(), mod.nn.Linear(2, 2))
        out = getattr(mod.nn.utils, fn)(net, getattr(mod, fmt))
        w = out[0].weight
        return out is net, w.stride(), w.detach().numpy().copy(), out[2].weight.stride()

    a, b = run(gradviz), run(torch)
    assert a[0] and b[0] and a[1] == b[1] and a[3] == b[3]
    assert np.array_equal(a[2], b[2])
