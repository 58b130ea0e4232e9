"""Issue 14's reductions and selection against torch 2.13: values, dtypes, graphs, gradients and
errors (norm, prod, cumsum, cumprod, var, std, var_mean, std_mean, logsumexp, argmax/argmin,
numpy's axis=/keepdims=, sum(dtype=), topk, sort, argsort, unique)."""

from __future__ import annotations

import pytest
from _surface import G, distinct, same, same_error, x64

CASES = {
    "norm": lambda T: (lambda x: G(x.norm(), (x,)))(x64(T, 3, 4)),
    "norm_fn_fro": lambda T: (lambda x: G(T.norm(x, p="fro"), (x,)))(x64(T, 3, 4)),
    "norm_dim": lambda T: (lambda x: G(x.norm(dim=1), (x,)))(x64(T, 3, 4)),
    "norm_p1_keepdim": lambda T: (lambda x: G(x.norm(p=1, dim=0, keepdim=True), (x,)))(x64(T, 3, 4)),
    "norm_p3": lambda T: (lambda x: G(x.norm(3), (x,)))(x64(T, 3, 4)),
    "norm_inf": lambda T: (lambda x: G(x.norm(float("inf"), dim=1), (x,)))(distinct(T, 3, 4)),
    "norm_float32": lambda T: (lambda x: G(x.norm(dim=(0, 1)), (x,)))(x64(T, 2, 3).float().detach().requires_grad_()),
    "prod": lambda T: (lambda x: G(x.prod(), (x,)))(x64(T, 2, 3)),
    "prod_dim": lambda T: (lambda x: G(x.prod(1, keepdim=True), (x,)))(x64(T, 2, 3)),
    "prod_zero": lambda T: (lambda x: G(x.prod(0), (x,)))(T.tensor([[1.5, 0.0], [2.0, -1.0]], requires_grad=True)),
    "prod_int": lambda T: T.tensor([[1, 2], [3, 4]], dtype=T.int32).prod(1),
    "prod_fn": lambda T: T.prod(T.tensor([1.5, 2.0]), dtype=T.float64),
    "cumsum": lambda T: (lambda x: G(x.cumsum(1), (x,)))(x64(T, 2, 4)),
    "cumsum_fn_dtype": lambda T: T.cumsum(T.tensor([1, 2, 3], dtype=T.int8), 0),
    "cumsum_bool": lambda T: T.tensor([True, False, True]).cumsum(0),
    "cumprod": lambda T: (lambda x: G(x.cumprod(0), (x,)))(x64(T, 4, 2)),
    "cumprod_zero": lambda T: (lambda x: G(x.cumprod(1), (x,)))(T.tensor([[1.5, 0.0, 2.0, -1.0]], requires_grad=True)),
    "var": lambda T: (lambda x: G(x.var(1), (x,)))(x64(T, 3, 4)),
    "std_correction": lambda T: (lambda x: G(x.std(0, correction=0), (x,)))(x64(T, 3, 4)),
    "var_mean": lambda T: (lambda x: G(T.var_mean(x, 1), (x,)))(x64(T, 3, 4)),
    "var_mean_all": lambda T: (lambda x: G(T.var_mean(x), (x,)))(x64(T, 3, 4)),
    "std_mean_keepdim": lambda T: (lambda x: G(T.std_mean(x, 0, keepdim=True), (x,)))(x64(T, 3, 4)),
    "std_mean_unbiased_false": lambda T: (lambda x: G(T.std_mean(x, False), (x,)))(x64(T, 3, 4)),
    "var_mean_mean_only": lambda T: (lambda x: G(T.var_mean(x, 1)[1], (x,)))(x64(T, 3, 4)),
    "logsumexp": lambda T: (lambda x: G(x.logsumexp(1), (x,)))(x64(T, 3, 4)),
    "logsumexp_keepdim_fn": lambda T: (lambda x: G(T.logsumexp(x, 0, keepdim=True), (x,)))(x64(T, 3, 4)),
    "logsumexp_large": lambda T: T.tensor([1000.0, 1000.0, -5.0]).logsumexp(0),
    "argmax_keepdim": lambda T: distinct(T, 3, 4, grad=False).argmax(1, keepdim=True),
    "argmin_keepdim_nodim": lambda T: distinct(T, 3, 4, grad=False).argmin(keepdim=True),
    "argmax_axis": lambda T: distinct(T, 3, 4, grad=False).argmax(axis=0),
    "sum_keepdims": lambda T: (lambda x: G(x.sum(1, keepdims=True), (x,)))(x64(T, 3, 4)),
    "sum_axis": lambda T: (lambda x: G(T.sum(x, axis=0), (x,)))(x64(T, 3, 4)),
    "mean_axis_keepdims": lambda T: (lambda x: G(x.mean(axis=1, keepdims=True), (x,)))(x64(T, 3, 4)),
    "max_axis": lambda T: (lambda x: G(x.max(axis=1), (x,)))(distinct(T, 3, 4)),
    "sum_dtype": lambda T: (lambda x: G(x.sum(dtype=T.float32), (x,)))(x64(T, 3, 4)),
    "sum_int8": lambda T: T.tensor([100, 100, 100], dtype=T.int8).sum(),
    "sum_uint8": lambda T: T.tensor([200, 100], dtype=T.uint8).sum(),
    "sum_int32_dtype": lambda T: T.tensor([1, 2], dtype=T.int32).sum(dtype=T.float64),
    "topk": lambda T: (lambda x: G(x.topk(2), (x,)))(distinct(T, 3, 5)),
    "topk_smallest_dim0": lambda T: (lambda x: G(x.topk(2, dim=0, largest=False), (x,)))(distinct(T, 3, 5)),
    "topk_values_only": lambda T: (lambda x: G(T.topk(x, 3).values, (x,)))(distinct(T, 5)),
    "sort": lambda T: (lambda x: G(x.sort(1), (x,)))(distinct(T, 3, 4)),
    "sort_descending": lambda T: (lambda x: G(T.sort(x, 0, descending=True), (x,)))(distinct(T, 3, 4)),
    "sort_ties_stable": lambda T: T.tensor([3, 1, 2, 1, 3]).sort(stable=True),
    "sort_nan": lambda T: T.tensor([2.0, float("nan"), -1.0]).sort(),
    "sort_nan_descending": lambda T: T.tensor([2.0, float("nan"), -1.0]).sort(descending=True),
    "argsort": lambda T: distinct(T, 3, 4, grad=False).argsort(1),
    "argsort_descending": lambda T: T.argsort(distinct(T, 6, grad=False), descending=True),
    "unique": lambda T: T.tensor([3, 1, 2, 1, 3]).unique(),
    "unique_all": lambda T: T.unique(T.tensor([[3, 1], [1, 3]]), return_inverse=True, return_counts=True),
    "unique_float": lambda T: T.tensor([1.5, -1.0, 1.5]).unique(),
    "unique_dim": lambda T: T.unique(T.tensor([[1, 2], [0, 1], [1, 2]]), dim=0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_as_torch(name):
    same(CASES[name])


ERRORS = {
    "topk_k_too_large": lambda T: T.ones(3).topk(4),
    "prod_dim_out_of_range": lambda T: T.ones(3).prod(1),
    "cumsum_dim_out_of_range": lambda T: T.ones(2, 3).cumsum(2),
    "norm_int": lambda T: T.tensor([1, 2]).norm(),
    "var_int": lambda T: T.tensor([1, 2]).var(),
    "sort_dim_out_of_range": lambda T: T.ones(3).sort(1),
    "logsumexp_dim_out_of_range": lambda T: T.ones(3).logsumexp(-2),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_same_error_as_torch(name):
    same_error(ERRORS[name])
