"""Issue 14's shape and indexing ops against torch 2.13: values, dtypes, graphs, gradients and
errors (repeat, repeat_interleave, movedim, narrow, index_select, gather, scatter_add, masked_fill,
one-argument where, tril, triu, flip, roll, chunk, split, one_hot)."""

from __future__ import annotations

import pytest
import torch
from _surface import G, same, same_error, x64

import gradviz


def one_hot(T):
    return torch.nn.functional.one_hot if T is torch else gradviz.nn.functional.one_hot


CASES = {
    "repeat": lambda T: (lambda x: G(x.repeat(2, 3), (x,)))(x64(T, 2, 3)),
    "repeat_new_dims": lambda T: (lambda x: G(x.repeat(2, 1, 2), (x,)))(x64(T, 2, 3)),
    "repeat_tuple": lambda T: (lambda x: G(x.repeat((1, 2)), (x,)))(x64(T, 3)),
    "repeat_int": lambda T: T.tensor([[1, 2]], dtype=T.int32).repeat(2, 2),
    "repeat_interleave": lambda T: (lambda x: G(x.repeat_interleave(2, dim=0), (x,)))(x64(T, 2, 3)),
    "repeat_interleave_flat": lambda T: (lambda x: G(x.repeat_interleave(3), (x,)))(x64(T, 2, 2)),
    "repeat_interleave_tensor": lambda T: (lambda x: G(x.repeat_interleave(T.tensor([1, 0, 2]), dim=1), (x,)))(
        x64(T, 2, 3)),
    "repeat_interleave_fn": lambda T: T.repeat_interleave(T.tensor([1, 2]), 2),
    "narrow": lambda T: (lambda x: G(x.narrow(1, 1, 2), (x,)))(x64(T, 2, 4)),
    "narrow_negative_start": lambda T: (lambda x: G(T.narrow(x, 0, -2, 2), (x,)))(x64(T, 3, 2)),
    "index_select": lambda T: (lambda x: G(x.index_select(1, T.tensor([2, 0, 2])), (x,)))(x64(T, 2, 3)),
    "index_select_fn": lambda T: (lambda x: G(T.index_select(x, 0, T.tensor([1])), (x,)))(x64(T, 2, 3)),
    "index_add": lambda T: (lambda x, s: G(x.index_add(0, T.tensor([1, 1]), s), (x, s)))(x64(T, 2, 3),
                                                                                       x64(T, 2, 3, seed=1)),
    "gather": lambda T: (lambda x: G(x.gather(1, T.tensor([[2, 0], [1, 1]])), (x,)))(x64(T, 2, 3)),
    "scatter_add": lambda T: (lambda x, s: G(x.scatter_add(0, T.tensor([[1, 0, 1]]), s), (x, s)))(
        x64(T, 2, 3), x64(T, 1, 3, seed=1)),
    "masked_fill": lambda T: (lambda x: G(x.masked_fill(x > 0, 0.5), (x,)))(x64(T, 2, 3)),
    "where_one_arg": lambda T: T.where(T.tensor([[True, False], [False, True]])),
    "where_one_arg_float": lambda T: T.where(T.tensor([0.0, 1.5, -2.0])),
    "nonzero": lambda T: T.tensor([[0, 1], [2, 0]]).nonzero(),
    "nonzero_tuple": lambda T: T.nonzero(T.tensor([0, 3, 0, 4]), as_tuple=True),
    "where_method": lambda T: (lambda x: G(x.where(x > 0, 0.0), (x,)))(x64(T, 2, 3)),
    "tril": lambda T: (lambda x: G(x.tril(), (x,)))(x64(T, 3, 4)),
    "tril_diag": lambda T: (lambda x: G(T.tril(x, -1), (x,)))(x64(T, 2, 3, 3)),
    "triu": lambda T: (lambda x: G(x.triu(1), (x,)))(x64(T, 4, 3)),
    "flip": lambda T: (lambda x: G(x.flip(0), (x,)))(x64(T, 3, 2)),
    "flip_dims": lambda T: (lambda x: G(T.flip(x, [0, -1]), (x,)))(x64(T, 2, 3, 2)),
    "roll": lambda T: (lambda x: G(x.roll(1, 0), (x,)))(x64(T, 3, 2)),
    "roll_flat": lambda T: (lambda x: G(x.roll(-2), (x,)))(x64(T, 3, 2)),
    "roll_dims": lambda T: (lambda x: G(T.roll(x, (1, 2), (0, 1)), (x,)))(x64(T, 3, 4)),
    "chunk": lambda T: (lambda x: G(x.chunk(3, 1), (x,)))(x64(T, 2, 7)),
    "split": lambda T: (lambda x: G(x.split([1, 3], 1), (x,)))(x64(T, 2, 4)),
    "split_int": lambda T: (lambda x: G(T.split(x, 2), (x,)))(x64(T, 5, 2)),
    "one_hot": lambda T: one_hot(T)(T.tensor([0, 2, 1])),
    "one_hot_classes": lambda T: one_hot(T)(T.tensor([[0], [3]]), 5),
    "movedim": lambda T: (lambda x: G(x.movedim(0, 2), (x,)))(x64(T, 2, 3, 4)),
    "movedim_same": lambda T: (lambda x: G(x.movedim(1, 1), (x,)))(x64(T, 2, 3)),
    "movedim_tuples": lambda T: (lambda x: G(T.movedim(x, (0, 1), (2, 0)), (x,)))(x64(T, 2, 3, 4)),
    "movedim_negative": lambda T: (lambda x: G(x.movedim(-1, 0), (x,)))(x64(T, 2, 3, 4)),
    "moveaxis": lambda T: (lambda x: G(T.moveaxis(x, 0, 1), (x,)))(x64(T, 2, 3)),
    "movedim_0d": lambda T: (lambda x: G(x.movedim(0, 0) * 2, (x,)))(x64(T)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_as_torch(name):
    same(CASES[name])


ERRORS = {
    "repeat_too_few": lambda T: T.ones(2, 3).repeat(2),
    "narrow_start": lambda T: T.ones(2, 4).narrow(1, 5, 1),
    "narrow_length": lambda T: T.ones(2, 4).narrow(1, 1, 4),
    "index_select_float_index": lambda T: T.ones(2, 3).index_select(1, T.tensor([0.0])),
    "index_select_out_of_range": lambda T: T.ones(2, 3).index_select(1, T.tensor([3])),
    "index_select_matrix_index": lambda T: T.ones(2, 3).index_select(1, T.tensor([[0]])),
    "tril_1d": lambda T: T.ones(3).tril(),
    "triu_1d": lambda T: T.ones(3).triu(),
    "roll_mismatch": lambda T: T.ones(3, 2).roll((1, 2), 0),
    "one_hot_float": lambda T: one_hot(T)(T.tensor([0.0, 1.0])),
    "one_hot_negative": lambda T: one_hot(T)(T.tensor([-1, 1])),
    "one_hot_too_large": lambda T: one_hot(T)(T.tensor([0, 3]), 3),
    "masked_fill_int_mask": lambda T: T.ones(2).masked_fill(T.tensor([1, 0]), 0.0),
    "chunk_zero": lambda T: T.ones(2).chunk(0),
    "movedim_repeated": lambda T: T.ones(2, 3, 4).movedim((0, 0), (1, 2)),
    "movedim_lengths": lambda T: T.ones(2, 3, 4).movedim((0, 1), (1,)),
    "movedim_range": lambda T: T.ones(2, 3, 4).movedim(3, 0),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_same_error_as_torch(name):
    same_error(ERRORS[name])
