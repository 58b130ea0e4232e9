"""Tensor members about memory and the legacy per-element hooks against torch 2.13: new, resize_,
resize_as_, share_memory_/is_shared, pin_memory, as_subclass, dim_order, apply_, map_, map2_
(values, dtypes, sizes, strides, sharing, grad_fn names, errors) (coverage2, issue 34)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz


def _plain(x: Any) -> Any:
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return ("tensor", str(x.dtype), tuple(x.shape), x.stride(), x.tolist(), x._version,
                type(x.grad_fn).__name__ if x.grad_fn is not None else None)
    if isinstance(x, (tuple, list)):
        return tuple(_plain(v) for v in x)
    return x


def _outcome(T: Any, fn: Callable[[Any], Any]) -> Any:
    try:
        return _plain(fn(T))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return (type(e).__name__, str(e))


def _resize_view(T: Any) -> tuple:
    z = T.arange(6.0)
    v = z.view(2, 3)
    z.resize_(2, 2)
    z.mul_(10)  # the memory is kept: the old view sees the write
    return z, v


def _resize_grow(T: Any) -> tuple:
    z = T.arange(6.0)
    z.resize_(8)
    return z[:6], z.shape


CASES: dict[str, Callable[[Any], Any]] = {
    "new_empty": lambda T: (lambda t: (str(t.dtype), t.shape))(T.ones(2, dtype=T.int32).new()),
    "new_sizes": lambda T: T.ones(2, dtype=T.float64).new(2, 3).shape,
    "new_data": lambda T: T.ones(2, dtype=T.int32).new([1.5, 2]),
    "new_tuple_is_data": lambda T: T.ones(2).new((2, 3)),
    "new_size": lambda T: T.ones(2, dtype=T.int64).new(T.Size([2, 1])).shape,
    "new_same_dtype_tensor": lambda T: T.ones(2, dtype=T.int64).new(T.tensor([4, 5])),
    "new_other_dtype_tensor": lambda T: T.ones(2, dtype=T.int32).new(T.tensor([1, 2])),
    "new_negative": lambda T: T.ones(2).new(2, -1),
    "resize_shrink": lambda T: T.arange(6.0).resize_(2, 2),
    "resize_tuple": lambda T: T.arange(6.0).resize_((3, 2)),
    "resize_view": _resize_view,
    "resize_grow": _resize_grow,
    "resize_requires_grad": lambda T: T.ones(3, requires_grad=True).resize_(2),
    "resize_negative": lambda T: T.ones(3).resize_(-1),
    "resize_negative_2d": lambda T: T.ones(3).resize_(2, -1),
    "resize_offset_view": lambda T: T.arange(8.0)[2:].resize_(2, 2),
    "resize_view_of_view": lambda T: (T.arange(12.0) * 1)[3:].view(3, 3)[1:].resize_(2, 2),
    "resize_offset_grow": lambda T: T.arange(8.0)[2:].resize_(3, 3)[:2],
    "resize_as": lambda T: T.arange(6.0).resize_as_(T.ones(2, 2)),
    "resize_non_contiguous": lambda T: T.arange(6.0).reshape(2, 3).t().resize_(4),
    "share_memory": lambda T: (lambda t: (t.is_shared(), t.share_memory_() is t, t.is_shared()))(T.ones(2)),
    "pin_memory": lambda T: T.ones(2).pin_memory(),
    "pin_memory_cpu": lambda T: T.ones(2).pin_memory("cpu"),
    "pin_memory_bogus": lambda T: T.ones(2).pin_memory("bogus"),
    "dim_order": lambda T: T.arange(6.0).reshape(2, 3).t().dim_order(),
    "dim_order_permuted": lambda T: T.empty(2, 3, 4).permute(2, 0, 1).dim_order(),
    "dim_order_contiguous": lambda T: T.empty(2, 3, 4).dim_order(),
    "apply": lambda T: T.arange(4.0).apply_(lambda v: v * 10 + 1),
    "apply_int": lambda T: T.arange(4).apply_(lambda v: v // 2),
    "apply_requires_grad": lambda T: T.ones(2, requires_grad=True).apply_(lambda v: v),
    "map": lambda T: T.arange(4.0).map_(T.full((4,), 3.0), lambda u, v: u * v - 1),
    "map_broadcast": lambda T: T.zeros(2, 3).map_(T.arange(3.0), lambda u, v: u + v),
    "map2": lambda T: T.arange(4.0).map2_(T.ones(4), T.full((4,), 2.0), lambda u, v, w: u * w + v),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_memory_member_matches_torch(name: str) -> None:
    assert _outcome(gradviz, CASES[name]) == _outcome(torch, CASES[name])


@pytest.mark.parametrize("leaf", [True, False])
def test_as_subclass_is_an_alias_of_the_subclass(leaf: bool) -> None:
    seen = []
    for T in (torch, gradviz):
        class Sub(T.Tensor):
            pass

        x = T.arange(6.0).reshape(2, 3).requires_grad_()
        y = x if leaf else x * 2
        s = y.as_subclass(Sub)
        (s * s).sum().backward()
        seen.append((type(s).__name__, isinstance(s, T.Tensor), type(s.grad_fn).__name__, s.requires_grad,
                     s.is_leaf, s.data_ptr() == y.data_ptr(), x.grad.tolist()))
    assert seen[0] == seen[1]


def test_as_subclass_refuses_a_non_tensor_class() -> None:
    with pytest.raises(TypeError) as theirs:
        torch.ones(1).as_subclass(int)
    with pytest.raises(TypeError) as ours:
        gradviz.ones(1).as_subclass(int)
    assert str(ours.value) == str(theirs.value)


DEPRECATED: dict[str, Callable[[Any], Any]] = {
    "resize": lambda T: T.arange(6.0, requires_grad=True).resize(2, 3),
    "resize_tuple_of_view": lambda T: (T.arange(6.0, requires_grad=True) * 1).view(2, 3).t().resize((3, 2)),
    "resize_as": lambda T: T.arange(6.0, requires_grad=True).resize_as(T.ones(3, 2)),
    "resize_wrong_numel": lambda T: T.arange(6.0, requires_grad=True).resize(4),
}


@pytest.mark.parametrize("name", sorted(DEPRECATED))
def test_deprecated_out_of_place_resize_matches_torch(name: str) -> None:
    import warnings

    seen = []
    for T in (torch, gradviz):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = DEPRECATED[name](T)
            except RuntimeError as e:
                seen.append(str(e))
                continue
        leaf = out.grad_fn
        while type(leaf).__name__ != "AccumulateGrad":
            leaf = leaf.next_functions[0][0]
        (out * T.arange(float(out.numel())).view(tuple(out.shape))).sum().backward()
        seen.append((out.tolist(), type(out.grad_fn).__name__, leaf.variable.grad.tolist(),
                     [str(w.message) for w in caught]))
    assert seen[0] == seen[1]
