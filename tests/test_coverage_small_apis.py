"""Small torch APIs added for coverage (issue 34 item 1), each compared with torch:
DistributedSampler, nn.init.dirac_, autograd.graph's GradientEdge/get_gradient_edge/
increment_version, autograd.inference_mode and set_multithreading_enabled."""

from __future__ import annotations

import pytest
import torch

import gradviz


@pytest.mark.parametrize("n, replicas, shuffle, drop_last", [
    (10, 3, True, False), (10, 3, False, False), (10, 3, True, True), (2, 5, True, False), (9, 3, True, True),
])  # fmt: skip
def test_distributed_sampler_gives_each_rank_torchs_indices(n, replicas, shuffle, drop_last):
    for epoch in (0, 3):
        for rank in range(replicas):
            want = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                                                       drop_last=drop_last)  # fmt: skip
            got = gradviz.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                                                        drop_last=drop_last)  # fmt: skip
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
