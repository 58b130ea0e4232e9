"""A fidelity sweep: everyday torch code that gradviz used to answer differently.

Each case runs on torch 2.13 and on gradviz and compares what a user sees: the exception's type
and message (torch's, with ``torch.`` spelled ``gradviz.``), the warnings, the values, and through
the differential harness the graph, the execution order and the gradients. torch is a hard
requirement, as in the other differential tests.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from _diff import Case, check, leaf

import gradviz


def _norm(msg: str) -> str:
    # torch's C++ warnings and errors end with where they were raised; the rest must agree
    msg = re.sub(r" \(Triggered internally at [^)]*\.\)", "", msg)
    return msg


def _run(fn: Callable[[Any], Any], T: Any) -> tuple[Any, BaseException | None, list[tuple[type, str]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, exc = fn(T), None
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            result, exc = None, e
    return result, exc, [(w.category, _norm(str(w.message))) for w in caught]


def same_error(fn: Callable[[Any], Any]) -> None:
    """fn raises on both, the same exception type with the same message."""
    _, ref, _ = _run(fn, torch)
    _, got, _ = _run(fn, gradviz)
    assert ref is not None, "torch raised nothing: not an error case"
    assert got is not None, f"gradviz raised nothing; torch raised {type(ref).__name__}: {ref}"
    assert type(got) is type(ref), f"torch {type(ref).__name__}: {ref}\ngradviz {type(got).__name__}: {got}"
    assert str(got) == _norm(str(ref))


def same_warnings(fn: Callable[[Any], Any]) -> None:
    """fn runs on both without an error and warns alike (category and message)."""
    _, ref_exc, ref = _run(fn, torch)
    _, got_exc, got = _run(fn, gradviz)
    assert ref_exc is None and got_exc is None, (ref_exc, got_exc)
    assert got == ref


def m(*shape: int) -> Callable[[Any], Any]:
    return lambda T: T.arange(float(np.prod(shape))).reshape(shape)


# -- dims out of range: torch's IndexError, where a modulo used to pick another dim -------------

DIM_CASES = {
    "sum": lambda T: m(2, 3)(T).sum(dim=2),
    "sum_tuple": lambda T: m(2, 3)(T).sum((0, -3)),
    "mean": lambda T: m(2, 3)(T).mean(-3),
    "var": lambda T: m(2, 3)(T).var(2),
    "amax": lambda T: m(2, 3)(T).amax(dim=4),
    "max_dim": lambda T: m(2, 3)(T).max(dim=5),
    "min_dim": lambda T: T.min(m(2, 3)(T), -3),
    "argmax": lambda T: m(2, 3)(T).argmax(dim=2),
    "all": lambda T: (m(2, 3)(T) > 1).all(dim=2),
    "any": lambda T: (m(2, 3)(T) > 1).any(dim=-3),
    "softmax": lambda T: m(2, 3)(T).softmax(2),
    "log_softmax": lambda T: m(2, 3)(T).log_softmax(-3),
    "transpose": lambda T: m(2, 3, 4)(T).transpose(0, 5),
    "unsqueeze": lambda T: m(2, 1, 4)(T).unsqueeze(4),
    "squeeze": lambda T: m(2, 1, 4)(T).squeeze(3),
    "select": lambda T: m(2, 3)(T).select(2, 0),
    "flatten": lambda T: m(2, 3)(T).flatten(0, 5),
    "permute": lambda T: m(2, 3)(T).permute(0, 2),
    "cat": lambda T: T.cat([m(2, 3)(T), m(2, 3)(T)], dim=2),
    "stack": lambda T: T.stack([m(2, 3)(T), m(2, 3)(T)], dim=4),
    "split": lambda T: m(2, 3)(T).split(1, dim=2),
    "chunk": lambda T: m(2, 3)(T).chunk(2, dim=-3),
    "unbind": lambda T: m(2, 3)(T).unbind(2),
    "gather": lambda T: m(2, 3)(T).gather(2, T.zeros(2, 3, dtype=T.int64)),
    "size": lambda T: m(2, 3)(T).size(2),
    "size_0d": lambda T: T.tensor(1.0).size(0),
}


@pytest.mark.parametrize("name", sorted(DIM_CASES))
def test_dim_out_of_range(name):
    same_error(DIM_CASES[name])


def test_negative_dims_in_range_still_work():
    def prog(T):
        x = leaf(T, 2, 3, 4)
        y = x.sum(-1).softmax(-1).unsqueeze(-1).transpose(-1, 0).log_softmax(-3)
        z = T.cat([y, y], dim=-1).max(dim=-2).values.sum()
        return Case([z], run=lambda: z.backward(), grads_of=[x])

    check(prog)


def test_reductions_over_dim_0_of_a_0_dim_tensor():
    def prog(T):
        x = T.tensor(1.5, dtype=T.float64, requires_grad=True)
        y = x.sum(0) * 2 + x.mean(-1) + x.sum((0,), keepdim=True) * 3 + x.amax(0)
        return Case([y], run=lambda: y.backward(), grads_of=[x])

    check(prog)


def test_an_empty_dim_list_reduces_every_dim():
    def prog(T):
        x = leaf(T, 2, 3)
        y = x.sum(dim=[]) + x.mean(dim=[]) * 2 + x.sum((), keepdim=True).sum()
        return Case([y], run=lambda: y.backward(), grads_of=[x])

    check(prog)

    def values(T):
        # forward only: torch's var/std backward for dim=[] gives inf (its dof counts no dims)
        x = leaf(T, 2, 3, requires_grad=False)
        return Case([x.var(dim=[]), x.std([], keepdim=True), x.mean((), keepdim=True)])

    check(values)


# -- shape and dtype errors: torch's RuntimeErrors, not numpy's ValueErrors ---------------------

ERROR_CASES = {
    "broadcast_add": lambda T: T.ones(2, 3) + T.ones(4, 3),
    "broadcast_mul": lambda T: T.ones(2, 3, dtype=T.float64) * T.ones(3, 2),
    "broadcast_sub_mixed": lambda T: T.ones(5, 3) - T.ones(2, 1, 4, dtype=T.int64),
    "broadcast_iadd": lambda T: T.ones(2, 3).add_(T.ones(2, 4)),
    "cat_sizes": lambda T: T.cat([T.ones(2, 3), T.zeros(2, 2)]),
    "cat_ndim": lambda T: T.cat([T.ones(2, 3), T.zeros(3)]),
    "stack_sizes": lambda T: T.stack([T.ones(2, 3), T.zeros(2, 2)]),
    "bmm_2d": lambda T: T.bmm(T.ones(2, 3), T.ones(3, 3)),
    "bmm_batch": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(2, 4, 3)),
    "matmul_vv": lambda T: T.ones(3) @ T.ones(4),
    "matmul_mv": lambda T: T.ones(2, 3) @ T.ones(4),
    "matmul_folded_mv": lambda T: T.ones(2, 3, 4) @ T.ones(5),
    "matmul_batch": lambda T: T.ones(2, 3, 2) @ T.ones(3, 2, 2),
    "mm_dtype": lambda T: T.ones(2, 3).mm(T.ones(3, 4, dtype=T.float64)),
    "setitem_shape": lambda T: T.zeros(3, 4).__setitem__(0, T.ones(3)),
    "copy_shape": lambda T: T.zeros(3, 4).copy_(T.ones(2, 4)),
    "permute_len": lambda T: T.ones(2, 3, 4).permute(2, 0),
    "permute_dup": lambda T: T.ones(2, 3, 4).permute(2, 0, 0),
    "mean_int": lambda T: T.tensor([[1, 2], [3, 4]]).mean(),
    "var_int": lambda T: T.tensor([[1, 2], [3, 4]]).var(),
    "std_int": lambda T: T.tensor([[1, 2], [3, 4]]).std(0),
    "where_cond": lambda T: T.where(T.tensor([1, 0]), T.ones(2), 0.0),
    "masked_fill_mask": lambda T: T.ones(2, 3).masked_fill(T.tensor([1, 0, 1]), 0.0),
    "masked_fill_float_mask": lambda T: T.ones(2).masked_fill(T.tensor([1.0, 0.0]), 0.0),
    "gather_float_index": lambda T: T.ones(3, 4).gather(1, T.tensor([[0.0], [1.0], [3.0]])),
    "gather_index_ndim": lambda T: T.ones(2, 3).gather(1, T.tensor([0, 1])),
    "int_negative_pow": lambda T: T.tensor([1, 2, 3]) ** -1,
    "float_of_many": lambda T: float(T.tensor([2.0, 3.0])),
    "int_of_many": lambda T: int(T.tensor([2, 3])),
    "nll_float_target": lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor([1.0, 0.0])),
    "nll_bool_target": lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor([True, False])),
    "nll_batch": lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor([2, 0, 1])),
    "cross_entropy_batch": lambda T: T.nn.functional.cross_entropy(T.ones(3, 3), T.tensor([2, 0])),
    "expand_too_few": lambda T: T.ones(2, 3, dtype=T.float64).expand(3),
    "expand_clash_first": lambda T: T.ones(2, 3).expand(4, 3),
    "expand_clash_middle": lambda T: T.ones(2, 3).expand(2, 1, 3),
    "expand_clash_before_leading": lambda T: T.ones(2, 3).expand(-1, 3, 3),
    "expand_leading_minus_one": lambda T: T.ones(2, 3).expand(-1, 2, 3),
    "expand_long": lambda T: T.ones(3, dtype=T.int64).expand(2, 4),
    "split_zero": lambda T: T.ones(2, 3).split(0, 1),
    "chunk_zero": lambda T: T.ones(2, 3).chunk(0),
    "chunk_negative": lambda T: T.ones(2, 3).chunk(-1),
    "flatten_order": lambda T: T.ones(2, 3, 4).flatten(2, 1),
    "index_0d": lambda T: T.tensor(5.0)[0],
    "slice_0d": lambda T: T.tensor(5.0)[0:1],
    "detach_view": lambda T: T.ones(2, 3, requires_grad=True)[0].detach_(),
    "detach_view_of_result": lambda T: (T.ones(2, 3, requires_grad=True) * 1)[0].detach_(),
    "detach_plain_view": lambda T: T.ones(2, 3)[0].detach_(),
    "inplace_unbind_of_leaf": lambda T: T.ones(3, 2, requires_grad=True).unbind(1)[0].mul_(2),
    "iadd_float_into_long": lambda T: T.tensor([1, 2]).__iadd__(1.5),
    "add_float_tensor_into_long": lambda T: T.tensor([1, 2]).add_(T.tensor([0.5, 0.5])),
    "sub_0dim_float_into_long": lambda T: T.tensor([1, 2]).sub_(T.tensor(1.0)),
    "mul_float_into_long": lambda T: T.tensor([1, 2]).mul_(2.0),
    "iadd_long_into_bool": lambda T: T.tensor([True, False]).__iadd__(1),
    "neg_bool": lambda T: -T.tensor([True, False]),
    "sum_duplicate_dims": lambda T: T.ones(2, 3).sum(dim=(0, 0)),
    "mean_duplicate_dims": lambda T: T.ones(2, 3).mean((1, -1)),
    "var_duplicate_dims": lambda T: T.ones(2, 3).var((0, 0)),
    "mv_matrix_vec": lambda T: T.mv(T.ones(2, 3), T.ones(3, 1)),
    "cat_a_tensor": lambda T: T.cat(T.ones(2, 3)),
    "stack_a_tensor": lambda T: T.stack(T.ones(2, 3)),
    "stack_empty": lambda T: T.stack([]),
    "cat_0dim": lambda T: T.cat((T.ones(2), T.ones(()))),
    "view_minus_two": lambda T: T.ones(2, 3).view(2, -2),
    "view_ambiguous_empty": lambda T: T.ones(0, 3).view(-1, 0),
    "arange_zero_step": lambda T: T.arange(0, 5, 0),
    "arange_wrong_sign": lambda T: T.arange(5, 0),
    "arange_wrong_sign_negative_step": lambda T: T.arange(0.0, 1.0, -0.5),
    "eq_broadcast": lambda T: T.ones(2, 3) == T.ones(4),
    "lt_broadcast": lambda T: T.ones(2, 3) < T.ones(2, 2),
    "maximum_broadcast": lambda T: T.maximum(T.ones(2, 3), T.ones(4)),
    "where_broadcast_other": lambda T: T.where(T.ones(2, 3, dtype=T.bool), T.ones(3), T.ones(4)),
    "where_broadcast_self": lambda T: T.where(T.ones(4, dtype=T.bool), T.ones(2, 3), T.ones(3)),
    "masked_fill_broadcast": lambda T: T.ones(2, 3).masked_fill(T.ones(4, dtype=T.bool), 0.0),
    "masked_fill_value_1d": lambda T: T.ones(2, 3).masked_fill(T.ones(3, dtype=T.bool), T.tensor([1.0, 2.0])),
    "gather_out_of_bounds": lambda T: T.ones(2, 3).gather(1, T.tensor([[0], [3]])),
    "gather_negative": lambda T: T.ones(2, 3).gather(1, T.tensor([[-1], [0]])),
    "scatter_negative": lambda T: T.ones(2, 3).scatter(1, T.tensor([[-1], [0]]), T.ones(2, 1)),
    "scatter_add_out_of_bounds": lambda T: T.ones(2, 3).scatter_add(1, T.tensor([[7], [0]]), T.ones(2, 1)),
    "and_float": lambda T: T.tensor([1.0, 0.0]) & T.tensor([1.0, 1.0]),
    "xor_float_number": lambda T: T.tensor([1.0, 2.0]) ^ 1,
    "invert_float": lambda T: ~T.ones(3),
    "backward_grads_count": lambda T: T.autograd.backward(
        [T.ones(2, requires_grad=True) * 2, T.ones(2, requires_grad=True).sum()], [T.ones(2)]
    ),
    "bool_of_empty": lambda T: bool(T.tensor([])),
    "format_spec_of_1d": lambda T: f"{T.tensor([3.14159]):.2f}",
    "mT_of_1d": lambda T: T.ones(2).mT,
    "setitem_index_out_of_bounds": lambda T: T.zeros(3, 4).__setitem__(T.tensor([0, 5]), 1.0),
    "setitem_index_out_of_bounds_after_ellipsis": lambda T: T.zeros(3, 4).__setitem__((..., T.tensor([0, 7])), 1.0),
    "setitem_mask_shape": lambda T: T.zeros(3, 4).__setitem__(T.tensor([True, False]), 1.0),
    "setitem_too_many": lambda T: T.zeros(3, 4).__setitem__((0, 0, T.tensor([0])), 1.0),
    "setitem_value_shape": lambda T: T.zeros(3, 4).__setitem__(T.tensor([0, 2]), T.ones(3, 4)),
    "setitem_mask_value_shape": lambda T: T.zeros(3, 4).__setitem__(T.zeros(3, 4) > 0, T.ones(2)),
    "setitem_value_dtype": lambda T: T.zeros(3).__setitem__(T.tensor([0]), T.tensor([2.0], dtype=T.float64)),
    "grad_no_inputs": lambda T: T.autograd.grad(T.ones(2, requires_grad=True).sum(), []),
    "function_without_backward": lambda T: _no_backward(T).apply(T.ones(2, requires_grad=True)).sum().backward(),
}


def _no_backward(T: Any) -> Any:
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    return Double


def test_inplace_casts_torch_allows():
    # same kind or lower into higher: written, as torch writes it
    def prog(T):
        a = T.tensor([1, 2])
        a.add_(1).mul_(T.tensor([True, False])).sub_(T.tensor([1, 1]))
        b = T.tensor([True, False])
        b.mul_(T.tensor([True, True]))
        c = T.tensor([1.0, 2.0])
        c.add_(T.tensor([1, 1])).mul_(T.tensor([2.0, 2.0], dtype=T.float64))
        return Case([], values=[a, b, c])

    check(prog)


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_error_matches_torch(name):
    same_error(ERROR_CASES[name])


# -- indexing --------------------------------------------------------------------------------

INDEX_CASES = {
    "too_many": lambda T: m(3, 4)(T)[0, 0, 0],
    "too_many_with_none": lambda T: m(2, 3, 4)(T)[None, 0, 0, 0, 0],
    "too_many_with_ellipsis": lambda T: m(2, 3, 4)(T)[..., 0, 0, 0, 0],
    "float": lambda T: m(3, 4)(T)[1.5],
    "float_second": lambda T: m(3, 4)(T)[0, 1.0],
    "float_tensor": lambda T: m(3, 4)(T)[T.tensor([1.0, 0.0])],
    "mask_short": lambda T: m(3, 4)(T)[T.tensor([True, False])],
    "mask_2d": lambda T: m(2, 3, 4)(T)[T.ones(2, 2, dtype=T.bool)],
    "mask_after_slice": lambda T: m(2, 3, 4)(T)[:, T.ones(2, dtype=T.bool)],
    "tensor_out_of_bounds": lambda T: m(3, 4)(T)[T.tensor([0, 5])],
    "tensor_out_of_bounds_dim1": lambda T: m(2, 3, 4)(T)[:, T.tensor([0, 7])],
    "list_out_of_bounds_negative": lambda T: m(2, 3, 4)(T)[:, [0, -4]],
}


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_index_error_matches_torch(name):
    same_error(INDEX_CASES[name])


def test_bool_mask_of_the_right_shape_still_indexes():
    def prog(T):
        x = leaf(T, 3, 4)
        y = x[x.detach() > 0].sum() + x[T.tensor([True, False, True])].sum() + x[:, T.tensor([0, 3])].sum()
        return Case([y], run=lambda: y.backward(), grads_of=[x])

    check(prog)


# -- tensor API ------------------------------------------------------------------------------

REQUIRES_GRAD_CASES = {
    "factory": lambda T: T.tensor([1, 2], requires_grad=True),
    "zeros_long": lambda T: T.zeros(2, dtype=T.int64, requires_grad=True),
    "full_int": lambda T: T.full((2,), 1, requires_grad=True),
    "method": lambda T: T.tensor([1, 2]).requires_grad_(),
    "attribute": lambda T: setattr(T.tensor([1, 2]), "requires_grad", True),
}


@pytest.mark.parametrize("name", sorted(REQUIRES_GRAD_CASES))
def test_requires_grad_of_an_integer_tensor(name):
    same_error(REQUIRES_GRAD_CASES[name])


def test_grad_of_a_non_leaf_warns():
    def access(T):
        x = T.ones(3, requires_grad=True)
        y = x * 2
        return y.grad

    same_warnings(access)
    caught = _run(access, gradviz)[2]
    assert len(caught) == 1 and caught[0][0] is UserWarning

    def quiet(T):
        # a leaf, a non-leaf that retains its grad, a view made without grad: no warning
        x = T.ones(3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        (y * 3).sum().backward()
        with T.no_grad():
            v = x[:2]
        return x.grad, y.grad, v.grad, T.ones(2).grad

    same_warnings(quiet)
    assert _run(quiet, gradviz)[2] == []


GRAD_SET_CASES = {
    "size": lambda T: setattr(T.ones(3, requires_grad=True), "grad", T.ones(4)),
    "dtype": lambda T: setattr(T.ones(2, requires_grad=True), "grad", T.ones(2, dtype=T.float64)),
    "type": lambda T: setattr(T.ones(2, requires_grad=True), "grad", [1.0, 1.0]),
}


@pytest.mark.parametrize("name", sorted(GRAD_SET_CASES))
def test_grad_assignment_checks(name):
    same_error(GRAD_SET_CASES[name])


def test_grad_assignment_accumulates_into_the_assigned_tensor():
    def prog(T):
        x = leaf(T, 3)
        x.grad = T.ones(3, dtype=T.float64)
        y = (x * x).sum()
        return Case([y], run=lambda: y.backward(), grads_of=[x])

    check(prog)


def test_data_assignment():
    def prog(T):
        x = leaf(T, 3)
        x.data = T.tensor([1.0, 2.0, 3.0, 4.0], dtype=T.float64)  # another shape: torch allows it
        y = (x * x).sum()
        return Case([y], run=lambda: y.backward(), grads_of=[x], values=[x.detach()])

    check(prog)
    same_error(lambda T: setattr(T.ones(2, requires_grad=True), "data", [1.0]))
    same_error(lambda T: setattr(T.ones(2, requires_grad=True) * 2, "data", T.ones(2, dtype=T.int64)))


@pytest.mark.parametrize("ctx", ["no_grad", "enable_grad"])
def test_grad_mode_decorators_without_parentheses(ctx):
    for T in (torch, gradviz):
        x = T.ones(2, requires_grad=True)

        @getattr(T, ctx)
        def f(a):
            """doc"""
            return a * 2

        with T.set_grad_enabled(ctx == "no_grad"):
            y = f(x)
            assert T.is_grad_enabled() == (ctx == "no_grad")
        assert y.requires_grad == (ctx == "enable_grad"), T.__name__
        assert f.__doc__ == "doc" and f.__name__ == "f"


def test_inplace_on_a_view_that_was_given_requires_grad():
    # torch.arange(6.).view(2, 3) is a view of a plain tensor; made to require grad, it may not
    # change in place (nor through a view of it) with grad mode on
    same_error(lambda T: T.arange(6.0).view(2, 3).requires_grad_().add_(1))
    same_error(lambda T: T.arange(6.0).view(2, 3).requires_grad_().__setitem__(0, 1.0))

    def under_no_grad(T):
        w = T.arange(6.0).view(2, 3).requires_grad_()
        with T.no_grad():
            w.add_(1)
            w[0, 0] = 5
        return w

    _, e1, _ = _run(under_no_grad, torch)
    _, e2, _ = _run(under_no_grad, gradviz)
    assert e1 is None and e2 is None
    np.testing.assert_array_equal(under_no_grad(gradviz).detach().numpy(), under_no_grad(torch).detach().numpy())


def test_tensor_of_a_numpy_float64_scalar_is_float64():
    for value in (np.float64(2.0), np.float32(2.0), 2.0):
        assert str(gradviz.tensor(value).dtype).split(".")[1] == str(torch.tensor(value).dtype).split(".")[1]


def test_stack_error_names_the_entry():
    # the message used to be built with list.index, which compares tensors with ==
    same_error(lambda T: T.stack([T.ones(2, 3), T.ones(2, 3), T.zeros(2, 2)]))


# -- warnings --------------------------------------------------------------------------------

WARNING_CASES = {
    "std_one_element": lambda T: T.tensor([1.0]).std(),
    "var_dim_of_one": lambda T: T.ones(2, 1).var(1),
    "var_correction": lambda T: T.ones(2, 3).var(correction=6),
    "mean_of_empty": lambda T: (T.tensor([]).mean(), T.zeros(0, 3).mean(0)),
    "softmax_implicit_dim": lambda T: T.nn.functional.softmax(T.ones(2, 3)),
    "log_softmax_implicit_dim": lambda T: T.nn.functional.log_softmax(T.ones(3)),
}


@pytest.mark.parametrize("name", sorted(WARNING_CASES))
def test_warnings_match_torch(name):
    same_warnings(WARNING_CASES[name])


def test_bitwise_operators():
    # &, |, ^, ~ are torch's bitwise ops: on integers bitwise (they were logical, giving bools)
    def prog(T):
        a, b, m = T.tensor([1, 2, 12]), T.tensor([3, 1, 10]), T.tensor([True, False, True])
        return Case([], values=[a & b, a | b, a ^ b, ~a, ~m, m & T.tensor([True, True, False]), m | a, 1 & a,
                                6 | a, m ^ True, (a > 1) & (b < 3)])

    check(prog)


def test_set_grad_enabled_as_a_decorator_leaves_the_mode_alone():
    for T in (torch, gradviz):
        assert T.is_grad_enabled()

        @T.set_grad_enabled(False)
        def f(T=T):
            return T.is_grad_enabled()

        assert T.is_grad_enabled(), T.__name__  # decorating changed nothing
        assert f() is False and T.is_grad_enabled()
        assert repr(T.set_grad_enabled(True)) == f"{T.__name__}.autograd.grad_mode.set_grad_enabled(mode=True)"


@pytest.mark.parametrize("ctx", ["no_grad", "enable_grad"])
def test_grad_mode_decorated_generators(ctx):
    seen = {}
    for T in (torch, gradviz):

        @getattr(T, ctx)()
        def gen(n, T=T):
            for i in range(n):
                got = yield (i, T.is_grad_enabled())
                if got is not None:
                    yield ("sent", got, T.is_grad_enabled())
            return "done"

        outer = ctx == "no_grad"  # the mode the caller runs in: the other one
        with T.set_grad_enabled(outer):
            it = gen(2)
            trace = [next(it), T.is_grad_enabled(), it.send("x"), T.is_grad_enabled(), next(it)]
            try:
                next(it)
            except StopIteration as e:
                trace.append(e.value)
            trace.append(T.is_grad_enabled())
        seen[T.__name__] = trace
    assert seen["gradviz"] == seen["torch"]


def test_backward_with_create_graph_warns_once():
    import subprocess
    import sys

    code = (
        "import warnings, {m} as T\n"
        "warnings.simplefilter('always')\n"
        "x = T.ones(2, requires_grad=True)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    (x * 2).sum().backward(create_graph=True)\n"
        "    T.autograd.backward([(x * 3).sum()], create_graph=True)\n"
        "    T.autograd.grad((x * 4).sum(), x, create_graph=True)\n"
        "print(repr([(c.category.__name__, str(c.message)) for c in w]))\n"
    )
    out = {}
    for m in ("torch", "gradviz"):
        res = subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True, text=True, check=True)
        out[m] = [(c, _norm(msg)) for c, msg in eval(res.stdout)]  # noqa: S307 - our own repr
    assert len(out["torch"]) == 1
    assert out["gradviz"] == out["torch"]


def test_a_0_dim_tensor_formats_as_its_number():
    # print(f"loss {loss}") prints the number in torch
    for spec in ("", ".3f", "8.2e"):
        got = format(gradviz.tensor(0.25, requires_grad=True) * 1, spec)
        assert got == format(torch.tensor(0.25, requires_grad=True) * 1, spec)
    assert f"{gradviz.tensor([1.0, 2.0])}" == str(gradviz.tensor([1.0, 2.0]))


def test_comparing_with_none():
    for T in (torch, gradviz):
        x = T.ones(2)
        assert (x == None) is False and (x != None) is True and (x not in [None])  # noqa: E711


def test_data_does_not_share_the_version_counter():
    # torch's .data: changes through it go unnoticed by autograd (detach() shares the counter)
    def prog(T):
        x = leaf(T, 3)
        y = x * x
        x.data.add_(1)
        d = x.detach()
        return Case([y], run=lambda: y.backward(T.ones(3, dtype=T.float64)), grads_of=[x],
                    values=[T.tensor(float(x._version)), T.tensor(float(d._version))])

    check(prog)


def test_transpose_property_warnings():
    import subprocess
    import sys

    code = (
        "import warnings, {m} as T\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    a = [T.ones(2).T.shape, T.ones(2, 3, 4).T.shape, T.tensor(1.0).T.shape, T.ones(2, 3).T.shape,\n"
        "         T.tensor(1.0).mT.shape, T.tensor(1.0).mT.shape]\n"
        "print(repr(([tuple(s) for s in a], [(c.category.__name__, str(c.message)) for c in w])))\n"
    )
    out = {}
    for m in ("torch", "gradviz"):
        res = subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True, text=True, check=True)
        shapes, caught = eval(res.stdout)  # noqa: S307 - our own repr
        out[m] = (shapes, [(c, _norm(msg)) for c, msg in caught])
    assert out["gradviz"] == out["torch"]


SETITEM_VALUES = {
    # torch's setitem views a value of another shape without its leading 1s and expands it to
    # the slice (basic indexing); index_put views one with leading 1s (ViewBackward0)
    "select_leading_one": ("0", (1, 4)),
    "select_same": ("0", (4,)),
    "select_0dim": ("0", ()),
    "element_0dim": ("(0, 1)", ()),
    "element_one": ("(0, 1)", (1,)),
    "slice_two_leading_ones": ("slice(0, 1)", (1, 1, 4)),
    "slice_broadcast_rows": ("slice(0, 2)", (1, 4)),
    "slice_broadcast_plain": ("slice(0, 2)", (4,)),
    "column_leading_one": ("(slice(None), 1)", (1, 3)),
    "columns_broadcast": ("(slice(None), slice(0, 2))", (3, 1)),
    "index_leading_one": ("T.tensor([0])", (1, 4)),
    "index_two_leading_ones": ("T.tensor([0])", (1, 1, 4)),
    "index_broadcast": ("T.tensor([0, 2])", (4,)),
    "index_pair_one": ("(T.tensor([0]), T.tensor([1]))", (1,)),
}


@pytest.mark.parametrize("name", sorted(SETITEM_VALUES))
def test_setitem_value_graph(name):
    key, shape = SETITEM_VALUES[name]

    def prog(T):
        x = leaf(T, 3, 4)
        y = x * 1
        v = leaf(T, *shape, seed=1)
        y[eval(key, {"T": T})] = v  # noqa: S307 - the keys above
        y[y.detach() > 0.5] = 0.0
        z = (y * y).sum()
        return Case([z], run=lambda: z.backward(), grads_of=[x, v])

    check(prog)


def test_a_list_of_sequences_indexes_as_a_tuple():
    # torch's legacy rule (deprecated, with a warning): a[[[0, 1], [1, 0]]] is a[[0, 1], [1, 0]]
    def read(T):
        a = T.arange(6.0).view(2, 3)
        return a[[[0, 1], [1, 0]]], a[[0, slice(None)]], a[[T.tensor([0]), 1]], a[[0, 1]]

    same_warnings(read)
    for got, ref in zip(read(gradviz), read(torch), strict=True):
        np.testing.assert_array_equal(got.numpy(), ref.numpy())

    def write(T):
        a = T.zeros(2, 3)
        a[[[0, 1], [1, 0]]] = 5.0
        return a

    same_warnings(write)
    np.testing.assert_array_equal(write(gradviz).numpy(), write(torch).numpy())


_WHOLE_KEYS = {
    ":": slice(None), "...": Ellipsis, "0:2": slice(0, 2), "0:5": slice(0, 5), "(0:2, 0:3)": (slice(0, 2), slice(0, 3)),
    "(..., 0:3)": (Ellipsis, slice(0, 3)), "(:, ::1)": (slice(None), slice(None, None, 1)), "()": (),
    "-2: (not whole as torch reads it)": slice(-2, None), "0 (a row)": 0, "(:, 1:)": (slice(None), slice(1, None)),
}
_WHOLE_VALUES = {
    "a row": lambda T: T.tensor([1.0, 2.0, 3.0], requires_grad=True),
    "a (1, 3) tensor": lambda T: T.tensor([[1.0, 2.0, 3.0]], requires_grad=True),
    "a number": lambda T: 5.0,
    "a 0-dim tensor": lambda T: T.tensor(5.0, requires_grad=True),
}


@pytest.mark.parametrize("value", sorted(_WHOLE_VALUES))
@pytest.mark.parametrize("key", sorted(_WHOLE_KEYS))
def test_setitem_with_a_key_that_selects_everything_copies_into_the_tensor_itself(key, value):
    """a[:] = v, a[...] = v, a[0:n] = v: torch's indexing hands back the tensor itself, so the graph
    has CopyBackwards (FillBackward3 for a number or a 0-dim tensor), not CopySlices."""

    def run(T):
        base = T.tensor([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]], requires_grad=True)
        a = base.clone()
        v = _WHOLE_VALUES[value](T)
        try:
            a[_WHOLE_KEYS[key]] = v
        except RuntimeError as e:
            return ("error", str(e))
        fn = a.grad_fn
        nexts = [f.name().split("::")[-1] if f is not None else None for f, _ in fn.next_functions]
        names = (fn.name().split("::")[-1], nexts)
        (a * T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        grads = [t.grad.tolist() if isinstance(t, T.Tensor) and t.grad is not None else None for t in (base, v)]
        return names, a.tolist(), grads

    assert run(gradviz) == run(torch)


@pytest.mark.parametrize("dims", [(0, 2), (0, 1), [3, -2], (), (1,)])
def test_squeeze_with_a_list_of_dims_is_torchs_squeeze_dims(dims):
    """x.squeeze((0, 2)): SqueezeBackward2, only the listed dims of size 1 go."""

    def prog(T):
        x = leaf(T, 1, 3, 1, 1)
        y = x.squeeze(dims)
        return Case(roots=[y], run=lambda: (y * y).sum().backward(), grads_of=[x])

    check(prog)
