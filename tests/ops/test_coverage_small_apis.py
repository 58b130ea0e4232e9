"""Small torch APIs added for coverage (issue 34 item 1), each compared with torch:
DistributedSampler, nn.init.dirac_, autograd.graph's GradientEdge/get_gradient_edge/
increment_version, autograd.inference_mode and set_multithreading_enabled, nn.utils.fuse_*_bn_*
and clip_grads_with_norm_."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


@pytest.mark.parametrize("n, replicas, shuffle, drop_last", [
    (10, 3, True, False), (10, 3, False, False), (10, 3, True, True), (2, 5, True, False), (9, 3, True, True),
])
def test_distributed_sampler_gives_each_rank_torchs_indices(n, replicas, shuffle, drop_last):
    for epoch in (0, 3):
        for rank in range(replicas):
            want = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                                                       drop_last=drop_last)
            got = gradviz.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                                                        drop_last=drop_last)
            want.set_epoch(epoch)
            got.set_epoch(epoch)
            assert list(got) == list(want) and len(got) == len(want)


def test_distributed_sampler_errors():
    with pytest.raises(RuntimeError, match="distributed package"):
        gradviz.utils.data.DistributedSampler(range(4))
    msgs = []
    for T in (torch, gradviz):
        with pytest.raises(ValueError) as info:
            T.utils.data.DistributedSampler(range(4), 2, 2)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("shape, groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((2, 3, 3, 3, 3), 1), ((3, 5, 2, 2), 1)])
def test_dirac_as_torch(shape, groups):
    want = torch.nn.init.dirac_(torch.empty(shape), groups)
    got = gradviz.nn.init.dirac_(gradviz.empty(shape), groups)
    assert got.tolist() == want.tolist()


def test_gradient_edges_and_versions():
    for T in (torch, gradviz):
        from_t = T.autograd.graph
        x = T.ones(2, requires_grad=True)
        y = x * 2
        e = from_t.get_gradient_edge(y)
        assert isinstance(e, from_t.GradientEdge) and e.node is y.grad_fn and e.output_nr == 0
        assert from_t.get_gradient_edge(x).node.name() == "torch::autograd::AccumulateGrad"
        v = x._version
        from_t.increment_version(x)
        assert x._version == v + 1
        with pytest.raises(RuntimeError, match="does not require gradients"):
            from_t.get_gradient_edge(T.ones(1))


def test_autograd_inference_mode_and_multithreading_flag():
    assert gradviz.autograd.inference_mode is gradviz.inference_mode
    with gradviz.autograd.set_multithreading_enabled(False):
        x = gradviz.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def _bn_trained(T, bn, shape):
    T.manual_seed(1)
    bn.train()
    for _ in range(3):
        bn(T.randn(*shape) * 3 + 1)
    bn.eval()
    return bn


@pytest.mark.parametrize("kind", ["conv", "conv transpose", "linear"])
def test_fuse_bn_into_the_layer_as_torch(kind):
    outs = []
    for T in (torch, gradviz):
        T.manual_seed(0)
        if kind == "linear":
            layer, bn, shape = T.nn.Linear(4, 3), T.nn.BatchNorm1d(3), (5, 3)
            x = T.randn(2, 4)
        elif kind == "conv":
            layer, bn, shape = T.nn.Conv2d(2, 3, 3), T.nn.BatchNorm2d(3), (4, 3, 5, 5)
            x = T.randn(1, 2, 6, 6)
        else:
            layer, bn, shape = T.nn.ConvTranspose2d(2, 3, 2), T.nn.BatchNorm2d(3), (4, 3, 5, 5)
            x = T.randn(1, 2, 4, 4)
        bn = _bn_trained(T, bn, shape)
        layer.eval()
        utils = T.nn.utils
        if kind == "linear":
            fused = utils.fuse_linear_bn_eval(layer, bn)
        else:
            fused = utils.fuse_conv_bn_eval(layer, bn, transpose=kind == "conv transpose")
        with T.no_grad():
            outs.append((fused(x).tolist(), bn(layer(x)).tolist(), type(fused.weight).__name__))
    assert outs[1][2] == outs[0][2] == "Parameter"

    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1][0], outs[1][1], rtol=1e-4, atol=1e-5)


def test_clip_grads_with_norm_as_torch():
    grads = []
    for T in (torch, gradviz):
        T.manual_seed(0)
        m = T.nn.Linear(3, 2)
        m(T.randn(4, 3)).pow(2).sum().backward()
        total = T.nn.utils.get_total_norm([p.grad for p in m.parameters()])
        T.nn.utils.clip_grads_with_norm_(m.parameters(), 0.5, total)
        grads.append([p.grad.tolist() for p in m.parameters()])

    for g, w in zip(grads[1], grads[0], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {"mode": "triangular"}, {"mode": "triangular2", "step_size_down": 3}, {"mode": "exp_range", "gamma": 0.9},
    {"scale_fn": lambda x: 0.5 ** x, "scale_mode": "iterations"}, {"cycle_momentum": False},
])
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_cyclic_lr_as_torch(kwargs, opt):
    runs = []
    for T in (torch, gradviz):
        p = T.nn.Parameter(T.ones(2))
        o = T.optim.SGD([p], lr=0.1, momentum=0.9) if opt == "SGD" else T.optim.Adam([p], lr=0.1)
        s = T.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=2, **kwargs)
        seen = []
        for _ in range(9):
            o.step()
            s.step()
            g = o.param_groups[0]
            seen.append((s.get_last_lr(), g.get("momentum"), g.get("betas")))
        runs.append(seen)
    for got, want in zip(runs[1], runs[0], strict=True):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert (got[1] is None) == (want[1] is None) and (got[2] is None) == (want[2] is None)
        if want[1] is not None:
            assert got[1] == pytest.approx(want[1], rel=1e-12)
        if want[2] is not None:
            assert got[2] == pytest.approx(want[2], rel=1e-12)
