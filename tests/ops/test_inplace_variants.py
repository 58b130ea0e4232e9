"""In-place variants and *_copy ops (issue 34's coverage): values, node names, gradients vs torch."""

from __future__ import annotations

import pytest
import torch
from _fns_diff import check

import gradviz

X = [[0.5, -1.25, 2.0], [1.5, 0.75, -0.5], [0.25, 1.0, -2.0]]
Y = [[1.0, 2.0, -0.5], [0.25, -3.0, 1.0], [2.0, 0.5, 1.5]]
V = [0.5, -1.0, 2.0]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "tan_": lambda T: (_x(T) * 1).tan_(),
    "torch.tan_": lambda T: T.tan_(_x(T) * 1),
    "exp2_": lambda T: T.exp2_(_x(T) * 1),
    "deg2rad_": lambda T: (_x(T) * 1).deg2rad_(),
    "rad2deg_": lambda T: T.rad2deg_(_x(T) * 1),
    "absolute_": lambda T: (_x(T) * 1).absolute_(),
    "arctan2_": lambda T: (_x(T) * 1).arctan2_(_x(T, Y)),
    "cumsum_": lambda T: (_x(T) * 1).cumsum_(1),
    "cumprod_": lambda T: (_x(T) * 1).cumprod_(0),
    "tril_": lambda T: (_x(T) * 1).tril_(),
    "triu_ diagonal": lambda T: (_x(T) * 1).triu_(1),
    "pow_": lambda T: (_x(T).abs() + 1).pow_(_x(T, Y)),
    "pow_ number": lambda T: (_x(T) * 1).pow_(3),
    "fmod_": lambda T: (_x(T) * 1).fmod_(0.75),
    "remainder_": lambda T: (_x(T) * 1).remainder_(_x(T, Y)),
    "floor_divide_": lambda T: (_x(T) * 1).floor_divide_(0.5).detach(),
    "copysign_": lambda T: (_x(T) * 1).copysign_(_x(T, Y)),
    "float_power_": lambda T: (_x(T).abs() * 1).float_power_(_x(T, Y)),
    "addcmul_": lambda T: (_x(T) * 1).addcmul_(_x(T, Y), _x(T, [V]), value=0.5),
    "addcdiv_": lambda T: (_x(T) * 1).addcdiv_(_x(T, Y), _x(T, [V])),
    "addmm_": lambda T: (_x(T) * 1).addmm_(_x(T, Y), _x(T), beta=0.5, alpha=2),
    "baddbmm_": lambda T: (_x(T).unsqueeze(0) * 1).baddbmm_(_x(T, [Y]), _x(T, [X])),
    "eq_": lambda T: (_x(T) * 1).eq_(_x(T, Y)),
    "ge_ number": lambda T: (_x(T) * 1).ge_(0.5),
    "lt_ broadcast": lambda T: (_x(T) * 1).lt_(_x(T, V)),
    "ne_": lambda T: (_x(T) * 1).ne_(0.5),
    "le_": lambda T: (_x(T) * 1).le_(_x(T, Y)),
    "gt_": lambda T: (_x(T) * 1).gt_(_x(T, Y)),
    "greater_": lambda T: (_x(T) * 1).greater_(_x(T, Y)),
    "greater_equal_": lambda T: (_x(T) * 1).greater_equal_(0.0),
    "less_": lambda T: (_x(T) * 1).less_(0.0),
    "less_equal_": lambda T: (_x(T) * 1).less_equal_(_x(T, Y)),
    "not_equal_": lambda T: (_x(T) * 1).not_equal_(0.5),
    "eq_ no grad": lambda T: T.tensor([1, 2, 3]).eq_(2),
    "logical_and_": lambda T: (_x(T) * 1).logical_and_(T.tensor([[1.0, 0.0, 1.0]])),
    "logical_or_": lambda T: T.tensor([0.0, 1.0, 0.0]).logical_or_(T.tensor([0.0, 0.0, 2.0])),
    "logical_xor_": lambda T: T.tensor([True, False]).logical_xor_(T.tensor([True, True])),
    "logical_not_": lambda T: T.tensor([0, 3, 0]).logical_not_(),
    "bitwise_and_": lambda T: T.tensor([5, 6, 7]).bitwise_and_(T.tensor([3, 3, 3])),
    "bitwise_or_": lambda T: T.tensor([5, 6, 7]).bitwise_or_(1),
    "bitwise_xor_": lambda T: T.tensor([5, 6, 7]).bitwise_xor_(T.tensor([1, 2, 3])),
    "bitwise_not_": lambda T: T.tensor([True, False]).bitwise_not_(),
    "in place on a view": lambda T: (lambda b: (b[1].tan_(), b)[1])(_x(T) * 1),
    "view_copy": lambda T: T.view_copy(_x(T), (9,)),
    "permute_copy": lambda T: T.permute_copy(_x(T), (1, 0)),
    "t_copy": lambda T: T.t_copy(_x(T)),
    "transpose_copy": lambda T: T.transpose_copy(_x(T), 0, 1),
    "expand_copy": lambda T: T.expand_copy(_x(T, V), (2, 3)),
    "select_copy": lambda T: T.select_copy(_x(T), 0, 1),
    "slice_copy": lambda T: T.slice_copy(_x(T), 1, 0, 2),
    "diagonal_copy": lambda T: T.diagonal_copy(_x(T)),
    "squeeze_copy": lambda T: T.squeeze_copy(_x(T, [V])),
    "unsqueeze_copy": lambda T: T.unsqueeze_copy(_x(T), 1),
    "unbind_copy": lambda T: T.unbind_copy(_x(T), 1),
    "split_copy": lambda T: T.split_copy(_x(T), 2),
    "split_with_sizes_copy": lambda T: T.split_with_sizes_copy(_x(T), [1, 2], 1),
    "alias_copy": lambda T: T.alias_copy(_x(T)),
    "detach_copy": lambda T: T.detach_copy(_x(T)).detach(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name])


def test_cast_refused():
    for T in (torch, gradviz):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            T.tensor([1, 2]).tan_()
