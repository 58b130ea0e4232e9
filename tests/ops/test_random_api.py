"""The random API's surface against torch 2.13: errors (type and message), backward node names
of the in-place samplers, generator objects, and argument forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz


def same_error(fn) -> None:
    with pytest.raises(Exception) as t_err:
        fn(torch)
    with pytest.raises(type(t_err.value)) as g_err:
        fn(gradviz)
    assert str(g_err.value) == str(t_err.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.multinomial(m.tensor([1, 2]), 1),
        lambda m: m.multinomial(m.tensor([0.1, 0.2]), 3),
        lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1),
        lambda m: m.multinomial(m.tensor([-1.0, 1.0]), 1),
        lambda m: m.multinomial(m.tensor([-1.0, 1.0]), 2, True),
        lambda m: m.multinomial(m.tensor([0.1, 0.2]), 0),
        lambda m: m.multinomial(m.zeros(2, 2, 2), 1),
        lambda m: m.randint(5, 3, (2,)),
        lambda m: m.rand(2).random_(3, 3),
        lambda m: m.randperm(-1),
        lambda m: m.normal(0.0, -1.0, (2,)),
        lambda m: m.rand(2).normal_(0, -1),
        lambda m: m.rand(2).bernoulli_(1.5),
        lambda m: m.rand(2).exponential_(-1),
        lambda m: m.rand(2).uniform_(2, 1),
        lambda m: m.bernoulli(m.tensor([1.5])),
        lambda m: m.manual_seed(2**64),
        lambda m: m.set_rng_state(m.zeros(10)),
        lambda m: m.rand(2, -1),
    ],
)
def test_errors_match_torch(call):
    same_error(call)


def test_set_state_of_wrong_size():
    with pytest.raises(RuntimeError) as t_err:
        torch.set_rng_state(torch.zeros(10, dtype=torch.uint8))
    with pytest.raises(RuntimeError) as g_err:
        gradviz.set_rng_state(gradviz.from_numpy(np.zeros(10, dtype=np.uint8)))
    assert str(g_err.value) == str(t_err.value)


@pytest.mark.parametrize(
    "call",
    ["uniform_()", "normal_()", "bernoulli_(0.5)", "bernoulli_(m.full((3,), 0.5))", "exponential_()", "random_()",
     "random_(5)", "random_(2, 5)", "cauchy_()", "log_normal_()", "geometric_(0.5)"],
)
def test_inplace_sampler_node_names(call):
    names = []
    for m in (torch, gradviz):
        x = m.zeros(3, requires_grad=True) * 1
        eval("x." + call, {"m": m, "x": x})
        names.append(x.grad_fn.name())
        x.sum().backward()
    assert names[0] == names[1]


def test_out_of_place_node_names_and_zero_gradients():
    for m in (torch, gradviz):
        mean = m.zeros(3, requires_grad=True)
        std = m.ones(3, requires_grad=True)
        outs = [m.normal(mean, 1.0), m.normal(1.0, std), m.normal(mean, std), m.bernoulli(m.full((3,), 0.5) * std)]
        assert [o.grad_fn.name() for o in outs] == ["NormalBackward1", "NormalBackward2", "NormalBackward3",
                                                     "BernoulliBackward0"]
        sum(o.sum() for o in outs).backward()
        assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3


def test_leaf_requiring_grad_refuses_inplace_but_no_grad_allows():
    same_error(lambda m: m.zeros(3, requires_grad=True).uniform_())
    for m in (torch, gradviz):
        w = m.zeros(3, requires_grad=True)
        with m.no_grad():
            w.normal_()
        assert w.requires_grad and w.grad_fn is None


def test_factories_arguments():
    g = gradviz.rand(2, 3, requires_grad=True, dtype=gradviz.float64)
    assert g.requires_grad and g.is_leaf and g.dtype is gradviz.float64
    assert tuple(gradviz.randn(size=(2, 5)).shape) == (2, 5)
    assert gradviz.randint(3, (2,), dtype=gradviz.float32).dtype is gradviz.float32
    assert gradviz.randint(low=1, high=4, size=(3,)).dtype is gradviz.int64
    out = gradviz.empty(4)
    assert gradviz.rand(4, out=out) is out
    gen = gradviz.Generator()
    assert gen.manual_seed(3) is gen and gen.initial_seed() == 3
    assert gradviz.manual_seed(3) is gradviz.default_generator
    assert repr(gen.device) == "device(type='cpu')"


def test_cuda_seeding_is_accepted():
    for m in (torch, gradviz):
        assert m.cuda.manual_seed(1) is None
        assert m.cuda.manual_seed_all(1) is None
