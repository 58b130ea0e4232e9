"""Issue 14's elementwise and linear-algebra ops against torch 2.13: values, dtypes, graphs,
gradients and errors (in-place activations and clamp variants, //, %, fmod, log10/log2/log1p/
expm1, isclose/allclose, einsum, bmm, baddbmm, addmm)."""

from __future__ import annotations

import pytest
from _surface import G, same, same_error, x64


def _inplace(op):
    # the in-place op on a non-leaf (a leaf that requires grad refuses in-place ops)
    return lambda T: (lambda x: G(op(x * 1), (x,)))(x64(T, 2, 3))


CASES = {
    "relu_": _inplace(lambda y: y.relu_()),
    "sigmoid_": _inplace(lambda y: y.sigmoid_()),
    "tanh_": _inplace(lambda y: y.tanh_()),
    "exp_": _inplace(lambda y: y.exp_()),
    "neg_": _inplace(lambda y: y.neg_()),
    "sqrt_": lambda T: (lambda x: G((x * 1).sqrt_(), (x,)))(x64(T, 2, 3, low=0.5)),
    "clamp_": _inplace(lambda y: y.clamp_(-0.5, 0.5)),
    "clamp_min_only_": _inplace(lambda y: y.clamp_(min=0.1)),
    "clip_": _inplace(lambda y: y.clip_(max=0.2)),
    "clamp_min_": _inplace(lambda y: y.clamp_min_(0.0)),
    "clamp_max_": _inplace(lambda y: y.clamp_max_(0.0)),
    "masked_fill_": _inplace(lambda y: y.masked_fill_(y > 0, 2.0)),
    "relu_on_view": lambda T: (lambda x: G((lambda y: (y[0].relu_(), y)[1])(x * 1), (x,)))(x64(T, 2, 3)),
    "relu_then_use": _inplace(lambda y: y.relu_() * y),
    "clamp_min": lambda T: (lambda x: G(x.clamp_min(0.1), (x,)))(x64(T, 2, 3)),
    "clamp_max": lambda T: (lambda x: G(T.clamp_max(x, -0.1), (x,)))(x64(T, 2, 3)),
    "clamp_tensor_min": lambda T: (lambda x, lo: G(T.clamp(x, min=lo), (x, lo)))(x64(T, 2, 3), x64(T, 3, seed=1)),
    "clamp_tensor_both": lambda T: (lambda x, lo, hi: G(x.clamp(lo, hi), (x, lo, hi)))(
        x64(T, 2, 3), x64(T, 2, 3, seed=1) - 0.5, x64(T, 1, 3, seed=2) + 0.5),
    "clamp_tensor_max_const": lambda T: (lambda x: G(x.clamp(max=T.tensor(0.2, dtype=T.float64)), (x,)))(
        x64(T, 2, 3)),
    "clamp_int": lambda T: T.tensor([-3, 0, 5], dtype=T.int32).clamp(-1, 2),
    "floordiv": lambda T: x64(T, 2, 3, grad=False) * 5 // 2,
    "floordiv_int": lambda T: T.tensor([7, -7, 5]) // 2,
    "floordiv_int_tensor": lambda T: T.tensor([7, -7, 5]) // T.tensor([2, 3, -2]),
    "rfloordiv": lambda T: 7 // T.tensor([2, -3]),
    "floordiv_float_by_int": lambda T: T.tensor([1, 2]) // 2.5,
    "floordiv_node": lambda T: x64(T, 2, 3) // 2,
    "floor_divide_fn": lambda T: T.floor_divide(T.tensor([5.0, -5.0]), 2),
    "mod": lambda T: (lambda x: G(x * 3 % 2, (x,)))(x64(T, 2, 3)),
    "mod_tensor": lambda T: (lambda x, y: G(x * 3 % y, (x, y)))(x64(T, 2, 3), x64(T, 3, seed=1, low=1.0)),
    "mod_int": lambda T: T.tensor([7, -7, 5]) % 3,
    "mod_negative_divisor": lambda T: T.tensor([7, -7, 5]) % -3,
    "rmod": lambda T: 5 % T.tensor([2, 3]),
    "remainder_fn": lambda T: T.remainder(T.tensor([-3.0, 3.0]), 2),
    "fmod": lambda T: (lambda x: G(x.fmod(0.7), (x,)))(x64(T, 2, 3)),
    "fmod_int": lambda T: T.fmod(T.tensor([-7, 7]), 3),
    "log10": lambda T: (lambda x: G(x.log10(), (x,)))(x64(T, 2, 3, low=0.1)),
    "log2": lambda T: (lambda x: G(T.log2(x), (x,)))(x64(T, 2, 3, low=0.1)),
    "log1p": lambda T: (lambda x: G(x.log1p(), (x,)))(x64(T, 2, 3, low=0.1)),
    "expm1": lambda T: (lambda x: G(x.expm1(), (x,)))(x64(T, 2, 3)),
    "log10_int": lambda T: T.tensor([1, 10, 1000]).log10(),
    "log2_float32": lambda T: T.tensor([1.0, 8.0, 3.0]).log2(),
    "expm1_small": lambda T: T.tensor([1e-10, -1e-8], dtype=T.float64).expm1(),
    "isclose": lambda T: T.isclose(T.tensor([1.0, 2.0, float("nan")]), T.tensor([1.0 + 1e-9, 2.1, float("nan")])),
    "isclose_equal_nan": lambda T: T.tensor([1.0, float("nan")]).isclose(T.tensor([1.0, float("nan")]),
                                                                          equal_nan=True),
    "isclose_tolerances": lambda T: T.isclose(T.tensor([1.0, 100.0]), T.tensor([1.05, 101.0]), rtol=0.02, atol=0.1),
    "allclose": lambda T: (T.allclose(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.0 + 1e-7])),
                           T.tensor([1.0]).allclose(T.tensor([1.1]))),
    "einsum_mm": lambda T: (lambda a, b: G(T.einsum("ij,jk->ik", a, b), (a, b)))(x64(T, 2, 3), x64(T, 3, 4, seed=1)),
    "einsum_batch": lambda T: (lambda a, b: G(T.einsum("bij,bjk->bik", a, b), (a, b)))(x64(T, 2, 2, 3),
                                                                                         x64(T, 2, 3, 2, seed=1)),
    "einsum_outer_implicit": lambda T: (lambda a, b: G(T.einsum("i,j", a, b), (a, b)))(x64(T, 3), x64(T, 2, seed=1)),
    "einsum_sum": lambda T: (lambda a: G(T.einsum("ij->j", a), (a,)))(x64(T, 2, 3)),
    "einsum_list": lambda T: (lambda a, b: G(T.einsum("i,i->", [a, b]), (a, b)))(x64(T, 3), x64(T, 3, seed=1)),
    "einsum_mm_transposed_out": lambda T: (lambda a, b: G(T.einsum("ij,jk->ki", a, b), (a, b)))(
        x64(T, 2, 3), x64(T, 3, 4, seed=1)),
    "einsum_abT": lambda T: (lambda a, b: G(T.einsum("ij,kj->ik", a, b), (a, b)))(x64(T, 2, 3), x64(T, 4, 3, seed=1)),
    "einsum_mv": lambda T: (lambda a, b: G(T.einsum("ij,j->i", a, b), (a, b)))(x64(T, 2, 3), x64(T, 3, seed=1)),
    "einsum_vm": lambda T: (lambda a, b: G(T.einsum("j,ij->i", a, b), (a, b)))(x64(T, 3), x64(T, 2, 3, seed=1)),
    "einsum_one_sided_sum": lambda T: (lambda a, b: G(T.einsum("ij,jk->i", a, b), (a, b)))(
        x64(T, 2, 3), x64(T, 3, 4, seed=1)),
    "einsum_two_contracted": lambda T: (lambda a, b: G(T.einsum("ijk,jkl->il", a, b), (a, b)))(
        x64(T, 2, 3, 4), x64(T, 3, 4, 5, seed=1)),
    "einsum_batch_outer": lambda T: (lambda a, b: G(T.einsum("bi,bj->bji", a, b), (a, b)))(
        x64(T, 4, 2), x64(T, 4, 3, seed=1)),
    "einsum_disjoint": lambda T: (lambda a, b: G(T.einsum("ij,kl->lj", a, b), (a, b)))(
        x64(T, 2, 3), x64(T, 4, 5, seed=1)),
    "einsum_attention": lambda T: (lambda q, k: G(T.einsum("bhqd,bhkd->bhqk", q, k), (q, k)))(
        x64(T, 2, 2, 3, 4), x64(T, 2, 2, 5, 4, seed=1)),
    "einsum_transpose": lambda T: (lambda a: G(T.einsum("ij->ji", a), (a,)))(x64(T, 2, 3)),
    "einsum_trace_free_total": lambda T: (lambda a: G(T.einsum("ij->", a), (a,)))(x64(T, 2, 3)),
    "einsum_three": lambda T: (lambda a, b, c: G(T.einsum("ij,jk,kl->il", a, b, c), (a, b, c)))(
        x64(T, 2, 3), x64(T, 3, 4, seed=1), x64(T, 4, 2, seed=2)),
    "bmm": lambda T: (lambda a, b: G(T.bmm(a, b), (a, b)))(x64(T, 2, 2, 3), x64(T, 2, 3, 4, seed=1)),
    "bmm_method": lambda T: (lambda a, b: G(a.bmm(b), (a, b)))(x64(T, 1, 2, 3), x64(T, 1, 3, 2, seed=1)),
    "addmm": lambda T: (lambda c, a, b: G(T.addmm(c, a, b), (c, a, b)))(x64(T, 2, 4), x64(T, 2, 3, seed=1),
                                                                        x64(T, 3, 4, seed=2)),
    "addmm_bias_scaled": lambda T: (lambda c, a, b: G(T.addmm(c, a, b, beta=0.5, alpha=2.0), (c, a, b)))(
        x64(T, 4), x64(T, 2, 3, seed=1), x64(T, 3, 4, seed=2)),
    "addmm_method": lambda T: (lambda c, a, b: G(c.addmm(a, b), (c, a, b)))(x64(T, 2, 4), x64(T, 2, 3, seed=1),
                                                                           x64(T, 3, 4, seed=2)),
    "baddbmm": lambda T: (lambda c, a, b: G(T.baddbmm(c, a, b, beta=2.0, alpha=0.5), (c, a, b)))(
        x64(T, 2, 2, 4), x64(T, 2, 2, 3, seed=1), x64(T, 2, 3, 4, seed=2)),
    "baddbmm_broadcast": lambda T: (lambda c, a, b: G(T.baddbmm(c, a, b), (c, a, b)))(
        x64(T, 4), x64(T, 2, 2, 3, seed=1), x64(T, 2, 3, 4, seed=2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_as_torch(name):
    same(CASES[name])


def _floordiv_backward(T):
    x = x64(T, 3)
    (x // 2).sum().backward()


def _rmod_backward(T):
    x = x64(T, 3)
    (2 % x).sum().backward()


ERRORS = {
    "floordiv_backward": _floordiv_backward,
    "rmod_backward": _rmod_backward,
    "floordiv_int_zero": lambda T: T.tensor([5]) // 0,
    "mod_int_zero": lambda T: T.tensor([5]) % T.tensor([0]),
    "floordiv_bool": lambda T: T.tensor([True]) // T.tensor([True]),
    "clamp_none": lambda T: T.ones(2).clamp(),
    "clamp_inplace_leaf": lambda T: x64(T, 2).clamp_(0, 1),
    "relu_inplace_leaf": lambda T: x64(T, 2).relu_(),
    "addmm_shapes": lambda T: T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(2, 2)),
    "baddbmm_batch2_2d": lambda T: T.baddbmm(T.ones(2, 2, 2), T.ones(2, 2, 3), T.ones(3, 2)),
    "baddbmm_dtype": lambda T: T.baddbmm(T.ones(1, 2, 2), T.ones(1, 2, 2), T.ones(1, 2, 2, dtype=T.float64)),
    "addmm_dtype": lambda T: T.addmm(T.ones(2, 2), T.ones(2, 2), T.ones(2, 2, dtype=T.float64)),
    "addmm_input_dtype": lambda T: T.addmm(T.ones(2, 2, dtype=T.float64), T.ones(2, 2), T.ones(2, 2)),
    "bmm_shapes": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(2, 2, 3)),
    "bmm_dtype": lambda T: T.bmm(T.ones(1, 2, 2), T.ones(1, 2, 2, dtype=T.float64)),
    "isclose_dtypes": lambda T: T.isclose(T.ones(2), T.ones(2, dtype=T.float64)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_same_error_as_torch(name):
    same_error(ERRORS[name])
