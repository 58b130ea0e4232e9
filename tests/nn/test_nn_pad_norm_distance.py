"""F.pad (constant, reflect, replicate, circular), F.normalize, cosine_similarity,
pairwise_distance, group_norm and their modules against torch: outputs, gradients, the graph
(node names, next_functions, execution order), errors for bad input, and module reprs."""

from __future__ import annotations

import pytest
import torch

import gradviz
from tests._nn_diff import check_fn, check_module, leaf, same_error

_PAD_CASES = [
    ((2, 3, 5), (1, 2)),
    ((3, 5), (2, 1)),
    ((2, 3, 4, 5), (1, 2, 2, 1)),
    ((3, 4, 5), (1, 0, 2, 1)),
    ((1, 2, 3, 4, 4), (1, 1, 2, 0, 1, 2)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(("shape", "pad"), _PAD_CASES)
def test_pad_modes(mode, shape, pad):
    check_fn(lambda T: (T.nn.functional.pad(x := leaf(T, *shape), pad, mode=mode), [x]))


@pytest.mark.parametrize("pad", [(-1, 2), (2, -3, 1, 1), (0, 0, -1, -1, 1, 0)])
def test_constant_pad_negative_and_value(pad):
    check_fn(lambda T: (T.nn.functional.pad(x := leaf(T, 2, 3, 5), pad, value=1.5), [x]))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_negative_non_constant(mode):
    check_fn(lambda T: (T.nn.functional.pad(x := leaf(T, 2, 3, 5), (-1, 2), mode=mode), [x]))


@pytest.mark.parametrize(("shape", "pad", "mode", "value"), [
    ((2, 3, 5), (1,), "constant", None),
    ((2, 3, 5), (1, 1, 1, 1, 1, 1, 1, 1), "constant", None),
    ((2, 3, 5), (-3, -3), "constant", None),
    ((2, 3, 5), (5, 1), "reflect", None),
    ((2, 3, 5), (1, 1, 1, 1, 1, 1), "reflect", None),
    ((5,), (1, 1), "replicate", None),
    ((2, 3, 5), (1, 1), "reflect", 1.0),
    ((2, 3, 5), (1, 1), "foo", None),
    ((2, 3, 5), (6, 1), "circular", None),
])
def test_pad_errors(shape, pad, mode, value):
    same_error(lambda T: T.nn.functional.pad(T.zeros(*shape), pad, mode=mode, value=value))


def test_replicate_takes_zero_value():
    check_fn(lambda T: (T.nn.functional.pad(x := leaf(T, 2, 3, 5), (1, 1), mode="replicate", value=0.0), [x]))


@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, -1), (3.0, 0)])
def test_normalize(p, dim):
    check_fn(lambda T: (T.nn.functional.normalize(x := leaf(T, 2, 3, 4), p=p, dim=dim), [x]))


def test_normalize_eps_clamps():
    check_fn(lambda T: (T.nn.functional.normalize(x := leaf(T, 2, 3) * 1e-3, eps=0.5), [x]))


@pytest.mark.parametrize(("s1", "s2", "dim"), [((4, 3), (4, 3), 1), ((2, 3, 4), (2, 3, 4), -1), ((2, 3), (3,), 1)])
def test_cosine_similarity(s1, s2, dim):
    def fn(T):
        a, b = leaf(T, *s1), leaf(T, *s2, seed=1)
        return T.nn.functional.cosine_similarity(a, b, dim=dim), [a, b]

    check_fn(fn)


def test_cosine_similarity_small_norm_clamped():
    def fn(T):
        a, b = leaf(T, 2, 3), leaf(T, 2, 3, seed=1)
        return T.nn.functional.cosine_similarity(a * 1e-9, b, eps=1e-3), [a, b]

    check_fn(fn)


def test_cosine_similarity_mismatch():
    same_error(lambda T: T.nn.functional.cosine_similarity(T.zeros(2, 3), T.zeros(4, 3)))


@pytest.mark.parametrize(("p", "keepdim", "s2"), [(2.0, False, (4, 3)), (1.0, True, (4, 3)), (3.0, False, (3,))])
def test_pairwise_distance(p, keepdim, s2):
    def fn(T):
        a, b = leaf(T, 4, 3), leaf(T, *s2, seed=1)
        return T.nn.functional.pairwise_distance(a, b, p=p, keepdim=keepdim), [a, b]

    check_fn(fn)


@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 6, 2, 3), (3, 4)])
def test_group_norm_functional(shape):
    def fn(T):
        x, w, b = leaf(T, *shape), leaf(T, shape[1], seed=1), leaf(T, shape[1], seed=2)
        return T.nn.functional.group_norm(x, 2, w, b, eps=1e-3), [x, w, b]

    check_fn(fn)


@pytest.mark.parametrize("kw", [{}, {"affine": False}, {"bias": False}, {"eps": 1e-2}])
def test_group_norm_module(kw):
    check_module(lambda nn: nn.GroupNorm(2, 6, **kw), lambda T: (leaf(T, 2, 6, 3),))


@pytest.mark.parametrize("fn", [
    lambda T: T.nn.functional.group_norm(T.zeros(2, 4, 3), 3),
    lambda T: T.nn.functional.group_norm(T.zeros(4), 2),
    lambda T: T.nn.functional.group_norm(T.zeros(2, 4), 2, T.ones(3)),
    lambda T: T.nn.GroupNorm(3, 4),
])
def test_group_norm_errors(fn):
    same_error(fn)


def test_group_norm_default_init():
    m = gradviz.nn.GroupNorm(2, 4)
    assert m.weight.tolist() == [1.0] * 4 and m.bias.tolist() == [0.0] * 4


_MODULES = [
    lambda nn: nn.ConstantPad1d(2, 3.5),
    lambda nn: nn.ConstantPad1d((1, 2), 0),
    lambda nn: nn.ConstantPad2d((1, 2, 3, 4), 0.0),
    lambda nn: nn.ConstantPad2d(1, 2),
    lambda nn: nn.ZeroPad2d(1),
    lambda nn: nn.ZeroPad2d((1, 0, 2, 1)),
    lambda nn: nn.ReflectionPad1d(2),
    lambda nn: nn.ReflectionPad2d((1, 0, 1, 0)),
    lambda nn: nn.ReplicationPad1d(1),
    lambda nn: nn.ReplicationPad2d(2),
    lambda nn: nn.CosineSimilarity(),
    lambda nn: nn.CosineSimilarity(dim=0, eps=1e-3),
    lambda nn: nn.PairwiseDistance(),
    lambda nn: nn.PairwiseDistance(1, 1e-3, True),
    lambda nn: nn.GroupNorm(2, 4),
    lambda nn: nn.GroupNorm(2, 4, affine=False),
    lambda nn: nn.GroupNorm(1, 4, bias=False),
]


@pytest.mark.parametrize("make", _MODULES)
def test_module_repr(make):
    assert repr(make(gradviz.nn)) == repr(make(torch.nn))


@pytest.mark.parametrize(("make", "shape"), [
    (lambda nn: nn.ConstantPad1d((1, 2), 0.5), (2, 3, 4)),
    (lambda nn: nn.ConstantPad2d(1, 2.0), (2, 3, 4, 4)),
    (lambda nn: nn.ZeroPad2d((1, 0, 2, 1)), (1, 2, 3, 3)),
    (lambda nn: nn.ReflectionPad1d(2), (2, 3, 4)),
    (lambda nn: nn.ReflectionPad2d((1, 0, 1, 2)), (1, 2, 4, 4)),
    (lambda nn: nn.ReplicationPad1d((3, 1)), (2, 4)),
    (lambda nn: nn.ReplicationPad2d(2), (1, 2, 3, 3)),
])
def test_pad_modules(make, shape):
    check_module(make, lambda T: (leaf(T, *shape),))


@pytest.mark.parametrize("make", [lambda nn: nn.CosineSimilarity(), lambda nn: nn.PairwiseDistance(p=1.0)])
def test_distance_modules(make):
    check_module(make, lambda T: (leaf(T, 3, 4), leaf(T, 3, 4, seed=1)))


def test_normalize_out():
    x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    res = []
    for T in (torch, gradviz):
        o = T.empty(2, 3, dtype=T.float64)
        T.nn.functional.normalize(T.tensor(x, dtype=T.float64), out=o)
        res.append(o.tolist())
    assert sum(res[0], []) == pytest.approx(sum(res[1], []))
    same_error(lambda T: T.nn.functional.normalize(T.ones(2, 3, requires_grad=True), out=T.empty(2, 3)))


def test_constant_pad_double_backward():
    def fn(T):
        x = leaf(T, 2, 3)
        y = T.nn.functional.pad(x, (1, 2), value=2.0)
        (g,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
        return g, [x]

    check_fn(fn)
