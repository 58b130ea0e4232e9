"""Channel-wise dropout (F.dropout1d/2d/3d, nn.Dropout1d/2d/3d) against torch 2.13: seeded, the
masks are torch's draw for draw, so outputs and gradients are compared as values, with the
backward nodes (MulBackward0 with an empty noise edge; Unsqueeze/Squeeze around it for unbatched
1d/3d inputs, their in-place forms with inplace=True), next_functions, execution order, warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import gradviz
from tests._diff import Case, check
from tests._nn_diff import check_fn, check_module, leaf, same_error

SHAPES = {
    "dropout1d": [(3, 5), (4, 3, 5)],
    "dropout2d": [(6, 4), (2, 3, 5), (2, 3, 4, 5)],
    "dropout3d": [(3, 2, 4, 2), (2, 3, 2, 3, 2)],
}
MODULES = {"dropout1d": "Dropout1d", "dropout2d": "Dropout2d", "dropout3d": "Dropout3d"}
CASES = [(name, shape) for name, shapes in SHAPES.items() for shape in shapes]


def quiet(fn):
    """Run fn with the deprecation warnings of 2-D/3-D inputs silenced (compared in their own test)."""

    def run(*a, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*a, **kw)

    return run


@pytest.mark.parametrize("name,shape", CASES)
@pytest.mark.parametrize("p", [0.3, 0.5])
def test_functional(name, shape, p):
    def fn(T):
        x = leaf(T, *shape, seed=2)
        return getattr(T.nn.functional, name)(x * 2, p, training=True), [x]

    check_fn(quiet(fn))


@pytest.mark.parametrize("name,shape", CASES)
def test_module_train_and_eval(name, shape):
    make = lambda nn: getattr(nn, MODULES[name])(0.4)  # noqa: E731
    inputs = lambda T: (leaf(T, *shape, seed=3),)  # noqa: E731
    quiet(check_module)(make, inputs)
    quiet(check_module)(make, inputs, train=False)


BATCHED = [(n, s) for n, s in CASES if not (n == "dropout1d" and len(s) == 2 or n == "dropout3d" and len(s) == 4)]


@pytest.mark.parametrize("name,shape", BATCHED)
def test_inplace(name, shape):
    def prog(T):
        x = leaf(T, *shape, seed=4)
        y = x * 1
        out = getattr(T.nn.functional, name)(y, 0.5, training=True, inplace=True)
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        return Case(roots=[out], run=lambda: out.backward(g), grads_of=[x], values=[y])

    quiet(check)(prog)


@pytest.mark.parametrize("name,shape", CASES)
@pytest.mark.parametrize("p", [0.0, 1.0])
def test_p_zero_and_one(name, shape, p):
    check_fn(quiet(lambda T: (getattr(T.nn.functional, name)((x := leaf(T, *shape, seed=5)) * 3, p), [x])))


def test_masks_are_whole_channels():
    gradviz.manual_seed(7)
    y = gradviz.nn.functional.dropout2d(gradviz.ones(4, 8, 3, 3), 0.5)
    per_channel = y.numpy().reshape(4, 8, 9)
    assert (per_channel == per_channel[..., :1]).all()
    assert set(np.unique(per_channel)) <= {0.0, 2.0}


def test_mnist_rnn_layout_draws_as_torch():
    # examples/mnist_rnn applies Dropout2d to a (batch, features) output: a 2-D input, one draw
    # per element, after the LSTM's and the loader's draws
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        gradviz.manual_seed(seed)
        a = quiet(torch.nn.Dropout2d(0.25))(torch.ones(64, 64))
        b = quiet(gradviz.nn.Dropout2d(0.25))(gradviz.ones(64, 64))
        np.testing.assert_array_equal(b.numpy(), a.numpy())


@pytest.mark.parametrize("name,shape", [("dropout2d", (6, 4)), ("dropout2d", (2, 3, 5)), ("dropout3d", (3, 2, 4, 2)),
                                        ("dropout2d", (2, 3, 4, 5))])
def test_warnings(name, shape):
    msgs = []
    for T in (torch, gradviz):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            getattr(T.nn.functional, name)(T.ones(*shape), 0.5)
        msgs.append([(x.category, str(x.message), x.filename) for x in w])
    assert msgs[1] == msgs[0]


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.dropout1d(T.ones(2, 3, 4, 5), 0.5),
    lambda T: T.nn.functional.dropout1d(T.ones(5), 0.5),
    lambda T: T.nn.functional.dropout2d(T.ones(5), 0.5),
    lambda T: T.nn.functional.dropout2d(T.ones(2, 3), 1.5),
    lambda T: T.nn.functional.dropout3d(T.ones(2, 3, 4, 5), -0.1),
    lambda T: T.nn.Dropout1d(2.0),
    lambda T: T.nn.Dropout3d(-1),
])
def test_errors(call):
    same_error(quiet(call))


UNBATCHED = [(n, s) for n, s in CASES if (n, s) not in BATCHED]


@pytest.mark.parametrize("name,shape", UNBATCHED)
def test_inplace_unbatched(name, shape):
    # torch adds and removes the batch dimension with the in-place views unsqueeze_ and squeeze_
    # (UnsqueezeBackward1, SqueezeBackward4 around the in-place MulBackward0)
    def prog(T):
        x = leaf(T, *shape, seed=4)
        y = x * 1
        out = getattr(T.nn.functional, name)(y, 0.5, training=True, inplace=True)
        g = leaf(T, *out.shape, seed=99, requires_grad=False)
        return Case(roots=[out], run=lambda: out.backward(g), grads_of=[x], values=[y])

    quiet(check)(prog)


def test_repr():
    for cls in ("Dropout1d", "Dropout2d", "Dropout3d"):
        assert repr(getattr(gradviz.nn, cls)(0.2, inplace=True)) == repr(getattr(torch.nn, cls)(0.2, inplace=True))
        assert repr(getattr(gradviz.nn, cls)()) == repr(getattr(torch.nn, cls)())
