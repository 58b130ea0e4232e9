"""Writing through indices (issue 34's coverage): index_copy/fill/put/reduce, scatter_reduce,
masked_scatter, the *_scatter ops, put, and their in-place forms, against torch."""

from __future__ import annotations

import pytest
from _fns_diff import check

X = [[0.5, -1.25, 2.0, 0.1], [1.5, 0.75, -0.5, 3.0], [0.25, 1.0, -2.0, -0.3]]
Y = [[1.0, 2.0, -0.5, 0.7], [0.25, -3.0, 1.0, 0.4]]
V = [0.5, -1.0, 2.0]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


def _i(T, *v):
    return T.tensor(list(v))


CASES = {
    "index_copy": lambda T: T.index_copy(_x(T), 0, _i(T, 2, 0), _x(T, Y)),
    "index_copy dim 1": lambda T: _x(T).index_copy(1, _i(T, 3, 1, 0), _x(T, [[1.0, 2, 3], [4, 5, 6], [7, 8, 9]])),
    "index_copy_": lambda T: (_x(T) * 1).index_copy_(0, _i(T, 1, 2), _x(T, Y)),
    "index_fill": lambda T: T.index_fill(_x(T), 1, _i(T, 1, 3), 2.0),
    "index_fill tensor": lambda T: _x(T).index_fill(1, _i(T, 1), _x(T, 2.5)),
    "index_fill_": lambda T: (_x(T) * 1).index_fill_(0, _i(T, 0, 2), -1.0),
    "index_put": lambda T: T.index_put(_x(T), (_i(T, 0, 2),), _x(T, Y)),
    "index_put broadcast": lambda T: _x(T).index_put((_i(T, 0, 2), _i(T, 1, 3)), _x(T, [7.0])),
    "index_put accumulate": lambda T: T.index_put(_x(T), (_i(T, 0, 0),), _x(T, Y), accumulate=True),
    "index_put_": lambda T: T.index_put_(_x(T) * 1, (_i(T, 1),), _x(T, [Y[0]])),
    "Tensor.index_put_ accumulate": lambda T: (_x(T) * 1).index_put_((_i(T, 1, 1), _i(T, 0, 0)), _x(T, [1.0, 2.0]),
                                                                    accumulate=True),
    "index_put mask": lambda T: _x(T).index_put((T.tensor([True, False, True]),), _x(T, Y)),
    # prod over zeros: a single zero's gradient is the product of the others
    "index_reduce prod zeros": lambda T: T.index_reduce(_x(T, [[0.0, 1.0], [2.0, 0.5]]), 0, _i(T, 0, 1, 0),
                                                        _x(T, [[2.0, 0.0], [0.0, 1.5], [3.0, 2.0]]), "prod"),
    "scatter_reduce prod zeros": lambda T: _x(T, [0.0, 2.0, 1.0]).scatter_reduce(
        0, _i(T, 0, 0, 1, 1, 2), _x(T, [1.5, 0.0, 0.0, 3.0, 0.0]), "prod", include_self=False),
    **{f"index_reduce {r}": (lambda red: lambda T: T.index_reduce(_x(T), 0, _i(T, 0, 0), _x(T, Y), red))(r)
       for r in ("prod", "mean", "amax", "amin")},
    **{f"index_reduce {r} exclude self": (lambda red: lambda T: _x(T).index_reduce(
        1, _i(T, 1, 1, 2), _x(T, [[1.0, 2, 3], [4, 5, 6], [7, 8, 9]]), red, include_self=False))(r)
       for r in ("prod", "mean", "amax", "amin")},
    "index_reduce_": lambda T: (_x(T) * 1).index_reduce_(0, _i(T, 2, 0), _x(T, Y), "amax"),
    **{f"scatter_reduce {r}": (lambda red: lambda T: T.scatter_reduce(
        _x(T), 1, T.tensor([[0, 0], [1, 1], [2, 0]]), _x(T, [[1.0, 2], [4, 5], [7, 8]]), red))(r)
       for r in ("sum", "prod", "mean", "amax", "amin")},
    **{f"scatter_reduce {r} exclude self": (lambda red: lambda T: _x(T).scatter_reduce(
        0, T.tensor([[0, 1, 2, 0], [0, 1, 1, 2]]), _x(T, Y), red, include_self=False))(r)
       for r in ("sum", "prod", "mean", "amax", "amin")},
    "scatter_reduce_": lambda T: (_x(T) * 1).scatter_reduce_(1, T.tensor([[3, 3], [0, 1], [2, 2]]),
                                                            _x(T, [[1.0, 2], [3, 4], [5, 6]]), "sum"),
    "masked_scatter": lambda T: T.masked_scatter(_x(T), T.tensor(X) > 0, _x(T, Y)),
    "masked_scatter broadcast": lambda T: _x(T).masked_scatter(T.tensor([True, False, False, True]), _x(T, Y)),
    "masked_scatter_": lambda T: (_x(T) * 1).masked_scatter_(T.tensor(X) < 0, _x(T, Y)),
    "select_scatter": lambda T: T.select_scatter(_x(T), _x(T, V), 1, 2),
    "select_scatter negative": lambda T: _x(T).select_scatter(_x(T, Y[0]), 0, -1),
    "slice_scatter": lambda T: T.slice_scatter(_x(T), _x(T, [[1.0, 2], [3, 4], [5, 6]]), 1, 0, 4, 2),
    "slice_scatter dim 0": lambda T: _x(T).slice_scatter(_x(T, Y), start=1),
    "diagonal_scatter": lambda T: T.diagonal_scatter(_x(T), _x(T, V)),
    "diagonal_scatter offset": lambda T: _x(T).diagonal_scatter(_x(T, V), 1),
    "diagonal_scatter negative offset": lambda T: _x(T).diagonal_scatter(_x(T, [1.0, 2.0]), -1),
    "diagonal_scatter 3d": lambda T: T.diagonal_scatter(_x(T, [X, Y + [V + [1.0]]]), _x(T, [[1.0, 2], [3, 4], [5, 6],
                                                                                      [7, 8]]), 0, 0, 1),
    "put": lambda T: T.put(_x(T), _i(T, 1, 5, -1), _x(T, V)),
    "put accumulate": lambda T: _x(T).put(T.tensor([[0, 0], [3, 11]]), _x(T, [[1.0, 2], [3, 4]]), accumulate=True),
    "put_": lambda T: (_x(T) * 1).put_(_i(T, 1, 1), _x(T, [1.0, 2.0]), accumulate=True),
    "fill_diagonal_": lambda T: (_x(T) * 1).fill_diagonal_(2.0),
    "fill_diagonal_ tall wrap": lambda T: (_x(T, X + Y + Y) * 1).fill_diagonal_(-1.0, wrap=True),
    "fill_diagonal_ transposed": lambda T: T.zeros(3, 4).t().fill_diagonal_(5.0),
    "fill_diagonal_ tall": lambda T: (T.zeros(7, 3)).fill_diagonal_(5.0),
    "fill_diagonal_ cube": lambda T: (T.zeros(3, 3, 3)).fill_diagonal_(5.0),
}


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name])
