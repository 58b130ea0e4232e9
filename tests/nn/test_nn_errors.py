"""Bad input into nn layers gets torch's exception type and message."""

from __future__ import annotations

import pytest

from tests._nn_diff import same_error


@pytest.mark.parametrize("shape", [(4, 5), (2, 4, 5), (5,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_wrong_shape(shape, bias):
    same_error(lambda T: T.nn.Linear(3, 2, bias=bias)(T.zeros(*shape)))


def test_linear_wrong_dtype():
    same_error(lambda T: T.nn.Linear(3, 2)(T.zeros(4, 3, dtype=T.float64)))


def test_conv2d_errors():
    same_error(lambda T: T.nn.Conv2d(3, 4, 3)(T.zeros(1, 2, 5, 5)))
    same_error(lambda T: T.nn.Conv2d(3, 4, 3)(T.zeros(5, 5)))
    same_error(lambda T: T.nn.Conv2d(3, 4, 3)(T.zeros(1, 3, 2, 2)))
    same_error(lambda T: T.nn.Conv1d(3, 4, 3)(T.zeros(1, 2, 5)))
    same_error(lambda T: T.nn.Conv2d(3, 4, 3, groups=2))


def test_other_layer_errors():
    same_error(lambda T: T.nn.Embedding(3, 2)(T.tensor([0, 3])))
    same_error(lambda T: T.nn.Embedding(3, 2)(T.tensor([0.0, 1.0])))
    same_error(lambda T: T.nn.LayerNorm(4)(T.zeros(2, 3)))
    same_error(lambda T: T.nn.BatchNorm2d(3)(T.zeros(2, 3)))
    same_error(lambda T: T.nn.BatchNorm1d(3)(T.zeros(1, 3)))
    same_error(lambda T: T.nn.functional.gelu(T.zeros(2), approximate="foo"))
