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
    "einsum_diag_float32": lambda T: (lambda a: G(T.einsum("bii->bi", a), (a,)))(
        x64(T, 2, 3, 3).detach().float().requires_grad_()),
    "einsum_ellipsis_int64": lambda T: T.einsum("...ij,...jk->...ik", T.arange(12).reshape(2, 2, 3),
                                                T.arange(6).reshape(3, 2)),
    "einsum_trace_int64": lambda T: T.einsum("ii", T.arange(9).reshape(3, 3)),
    "einsum_diag_ellipsis": lambda T: (lambda a: G(T.einsum("...ii->...i", a), (a,)))(x64(T, 2, 3, 3)),
}

_INF = float("inf")
_MATRIX_NORMS = {
    "fro": dict(ord="fro"), "nuc": dict(ord="nuc"), "inf": dict(ord=_INF), "neg_inf": dict(ord=-_INF),
    "one": dict(ord=1), "neg_one": dict(ord=-1), "two": dict(ord=2), "neg_two": dict(ord=-2),
    "default": dict(), "dims_keep": dict(ord=1, dim=(2, 0), keepdim=True),
    "nuc_dims_keep": dict(ord="nuc", dim=(0, 2), keepdim=True), "two_dims": dict(ord=2, dim=(2, 0)),
    "inf_dims": dict(ord=_INF, dim=(0, 2)), "fro_dims_keep": dict(ord="fro", dim=(1, 2), keepdim=True),
}
for _k, _kw in _MATRIX_NORMS.items():
    _shape = (2, 3, 4) if "dim" in _kw else (3, 4)
    CASES[f"linalg_norm_{_k}"] = (lambda kw, shape: lambda T: (lambda a: G(T.linalg.norm(a, **kw), (a,)))(
        x64(T, *shape)))(_kw, _shape)
    CASES[f"matrix_norm_{_k}"] = (lambda kw, shape: lambda T: (lambda a: G(T.linalg.matrix_norm(a, **kw), (a,)))(
        x64(T, *shape)))(_kw, _shape)
CASES.update({
    "norm_nuc": lambda T: (lambda a: G(T.norm(a, "nuc"), (a,)))(x64(T, 3, 4)),
    "norm_nuc_method_dims": lambda T: (lambda a: G(a.norm(p="nuc", dim=(0, 2), keepdim=True), (a,)))(x64(T, 2, 3, 4)),
    "norm_fro_dims": lambda T: (lambda a: G(T.norm(a, "fro", dim=(0, 1)), (a,)))(x64(T, 3, 4)),
    "norm_inf_dims": lambda T: (lambda a: G(T.norm(a, _INF, dim=(0, 1)), (a,)))(x64(T, 3, 4)),
    "norm_neg_one_dims": lambda T: (lambda a: G(T.norm(a, -1, dim=(0, 1)), (a,)))(x64(T, 3, 4)),
    "linalg_norm_vector": lambda T: (lambda a: G(T.linalg.norm(a, 3, dim=1), (a,)))(x64(T, 3, 4)),
    "linalg_norm_1d_inf": lambda T: (lambda a: G(T.linalg.norm(a, _INF), (a,)))(x64(T, 5)),
    "linalg_norm_all": lambda T: (lambda a: G(T.linalg.norm(a), (a,)))(x64(T, 2, 3, 4)),
    "matrix_norm_dtype_kw": lambda T: (lambda a: G(T.linalg.matrix_norm(a, "nuc", dtype=T.float64), (a,)))(
        x64(T, 3, 4).detach().float().requires_grad_()),
    "linalg_norm_inf_dtype_kw": lambda T: (lambda a: G(T.linalg.norm(a, _INF, dtype=T.float64), (a,)))(
        x64(T, 3, 4).detach().float().requires_grad_()),
    "norm_dtype_kw": lambda T: (lambda a: G(a.norm(3, dim=1, dtype=T.float64), (a,)))(
        x64(T, 3, 4).detach().float().requires_grad_()),
    "matrix_norm_fro_dtype_kw": lambda T: (lambda a: G(T.linalg.matrix_norm(a, dtype=T.float64), (a,)))(
        x64(T, 3, 4).detach().float().requires_grad_()),
    "matrix_norm_float32": lambda T: (lambda a: G(T.linalg.matrix_norm(a, "nuc"), (a,)))(
        x64(T, 3, 4).detach().float().requires_grad_()),
})


def _mf_(T, a_grad, v_grad, shape=(2, 3), mask=(True, False, True), value_dtype=None):
    a = x64(T, *shape, grad=a_grad)
    v = T.tensor(1.5, dtype=value_dtype or T.float64, requires_grad=v_grad)
    x = a.clone() if a_grad else a
    x.masked_fill_(T.tensor(mask), v)
    return G(x, tuple(t for t, g in ((a, a_grad), (v, v_grad)) if g))


CASES.update({
    "masked_fill__value_grad": lambda T: _mf_(T, True, True),
    "masked_fill__value_grad_only": lambda T: _mf_(T, False, True),
    "masked_fill__self_grad_only": lambda T: _mf_(T, True, False),
    "masked_fill__value_grad_float32": lambda T: _mf_(T, True, True, value_dtype=T.float32),
    "masked_fill__full_mask": lambda T: _mf_(T, True, True, mask=((True, False, True), (False, True, True))),
    "masked_fill__view": lambda T: (lambda a, v: (lambda x: (x[0].masked_fill_(T.tensor([True, False, True]), v),
                                                             G(x, (a, v)))[1])(a.clone()))(
        x64(T, 2, 3), T.tensor(0.5, dtype=T.float64, requires_grad=True)),
})


def _avg(T, shape, **kw):
    x = x64(T, *shape)
    return G(T.nn.functional.avg_pool2d(x, **kw), (x,))


_AVG_CEIL = {
    "k2s2": ((1, 2, 5, 5), dict(kernel_size=2, stride=2)),
    "k3s2": ((2, 1, 6, 7), dict(kernel_size=3, stride=2)),
    "k3s2_pad": ((1, 2, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    "k3s2_pad_exclude": ((1, 2, 6, 5), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    "k2s3_pad": ((1, 1, 7, 8), dict(kernel_size=2, stride=3, padding=1)),
    "rect": ((1, 1, 5, 7), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 0))),
    "divisor": ((1, 1, 5, 5), dict(kernel_size=2, stride=2, divisor_override=3)),
    "unbatched": ((2, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
    "exact_fit": ((1, 1, 6, 6), dict(kernel_size=2, stride=2)),
    "one_pixel": ((1, 1, 1, 1), dict(kernel_size=3)),
    "overlap": ((1, 1, 6, 6), dict(kernel_size=3, stride=1, padding=1, count_include_pad=False)),
}
for _k, (_shape, _kw) in _AVG_CEIL.items():
    CASES[f"avg_pool2d_ceil_{_k}"] = (lambda shape, kw: lambda T: _avg(T, shape, ceil_mode=True, **kw))(_shape, _kw)
CASES["avg_pool2d_ceil_module"] = lambda T: (lambda x: G(T.nn.AvgPool2d(3, 2, 1, ceil_mode=True)(x), (x,)))(
    x64(T, 1, 2, 6, 6))


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
    "matrix_norm_1d": lambda T: T.linalg.matrix_norm(T.zeros(3)),
    "matrix_norm_same_dims": lambda T: T.linalg.matrix_norm(T.zeros(2, 3, 4), dim=(1, 1)),
    "matrix_norm_bad_ord": lambda T: T.linalg.matrix_norm(T.zeros(2, 3), 3),
    "matrix_norm_bad_str": lambda T: T.linalg.matrix_norm(T.zeros(2, 3), "abc"),
    "matrix_norm_int": lambda T: T.linalg.matrix_norm(T.zeros(2, 2, dtype=T.long)),
    "masked_fill__value_1d": lambda T: T.zeros(2, 3).masked_fill_(T.tensor([True, False, True]),
                                                                   T.ones(1, requires_grad=True)),
    "masked_fill__mask_bigger": lambda T: T.zeros(3).masked_fill_(T.ones(2, 3, dtype=T.bool),
                                                                  T.tensor(1.0, requires_grad=True)),
    "masked_fill__leaf": lambda T: T.zeros(3, requires_grad=True).masked_fill_(T.ones(3, dtype=T.bool),
                                                                               T.tensor(1.0, requires_grad=True)),
    "avg_pool2d_ceil_too_small": lambda T: T.nn.functional.avg_pool2d(T.zeros(1, 1, 2, 5), 3, 1, ceil_mode=True),
    "avg_pool2d_ceil_big_pad": lambda T: T.nn.functional.avg_pool2d(T.zeros(1, 1, 4, 4), 2, padding=2, ceil_mode=True),
    "avg_pool2d_ceil_unbatched_small": lambda T: T.nn.functional.avg_pool2d(T.zeros(1, 2, 2), 3, 1, ceil_mode=True),
    "linalg_norm_3d_ord": lambda T: T.linalg.norm(T.zeros(2, 3, 4), 2),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_same_as_torch(name):
    same_error(ERRORS[name])


def _double_backward(T, eq, *shapes):
    ops = [x64(T, *sh, seed=i) for i, sh in enumerate(shapes)]
    out = T.einsum(eq, *[o * o for o in ops])  # squared: the first gradients depend on the inputs
    w = x64(T, *out.shape, seed=9, grad=False)
    grads = T.autograd.grad((out * w).sum(), ops, create_graph=True)
    total = sum((g * g).sum() for g in grads)
    return [t.detach().numpy() for t in T.autograd.grad(total, ops, allow_unused=True, materialize_grads=True)]


@pytest.mark.parametrize("eq,shapes", [("bii->bi", [(2, 3, 3)]), ("ii,ij->j", [(3, 3), (3, 2)]),
                                       ("ibi->b", [(3, 2, 3)])])
def test_einsum_diagonal_double_backward_same_as_torch(eq, shapes):
    import numpy as np
    import torch

    import gradviz

    for a, b in zip(_double_backward(torch, eq, *shapes), _double_backward(gradviz, eq, *shapes), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
