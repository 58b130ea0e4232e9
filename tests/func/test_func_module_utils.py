"""torch.func.replace_all_batch_norm_modules_ and debug_unwrap against torch 2.13."""

from __future__ import annotations

import numpy as np
import torch

import gradviz


def test_replace_all_batch_norm_modules_matches_torch():
    def run(mod):
        mod.manual_seed(0)
        net = mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.BatchNorm1d(4), mod.nn.Sequential(mod.nn.BatchNorm1d(4)))
        assert mod.func.replace_all_batch_norm_modules_(net) is net
        bns = [net[1], net[2][0]]
        flags = [(m.running_mean, m.running_var, m.num_batches_tracked, m.track_running_stats) for m in bns]
        y = net(mod.ones(5, 3) * mod.arange(3.0))  # batch statistics, no buffers to update
        return flags, y.detach().numpy().copy(), sorted(net.state_dict())

    (fa, ya, ka), (fb, yb, kb) = run(gradviz), run(torch)
    assert fa == fb == [(None, None, None, False)] * 2
    np.testing.assert_allclose(ya, yb, rtol=1e-6, atol=1e-6)
    assert ka == kb


def test_debug_unwrap_of_a_plain_tensor_is_itself():
    for mod in (gradviz, torch):
        t = mod.ones(2)
        assert mod.func.debug_unwrap(t) is t
