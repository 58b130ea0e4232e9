"""In-place variants of ops gradviz has out of place (tan_, cumsum_, tril_, addcmul_, pow_,
eq_, logical_and_, bitwise_or_, ...), and the ``*_copy`` variants of the view ops.

An in-place op records what torch's generated in-place kernels record: the out-of-place op's own
node (TanBackward0 for tan_), whose first edge is the tensor's old history. Here the out-of-place
op runs on a copy of the old value that carries the old edge, so its saved values are the old
ones (torch saves a clone where a formula reads self), and its node then becomes the tensor's.
Comparisons in place keep their float result and record torch's Eq/Ne/...Backward nodes (zero
gradients); logical and bitwise ops in place have no derivative and leave the history alone.

A ``*_copy`` op is its view op followed by a copy: one node, named as torch names it
(``ViewBackward0_copy``), with the view's gradient formula and saved values.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from gradviz import _dtype
from gradviz.autograd.forward_state import track
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import _common
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import cumulative as _cumulative
from gradviz.ops import indexing as _indexing
from gradviz.ops import linalg as _linalg
from gradviz.ops import math_binary as _math_binary
from gradviz.ops import math_more as _math_more
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import shape as _shape
from gradviz.ops import views as _views
from gradviz.ops._common import DERIVATIVES, NODES, _new, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import _move_retains_grad, record
from gradviz.ops.inplace_write import InplaceWrite, after_inplace, bump_version, check_inplace, check_result_cast
from gradviz.tensor import Tensor

__all__ = [  # torch's functions among them (torch.tan_, torch.view_copy, ...)
    "alias_copy", "deg2rad_", "detach_copy", "diagonal_copy", "exp2_", "expand_copy",
    "permute_copy", "rad2deg_", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
    "squeeze_copy", "t_copy", "tan_", "transpose_copy", "unbind_copy", "unsqueeze_copy", "view_copy",
]


# -- in place -----------------------------------------------------------------------------------
def _into(a: Tensor, r: Tensor) -> None:
    """r's value into a, in a's dtype: torch refuses to write a float result into an integer
    tensor."""
    if r.shape != a.shape:
        raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the broadcast shape {list(r.shape)}")
    check_result_cast(a, r)
    a._data[...] = r._data.astype(a._data.dtype, copy=False)


def _write(name: str, a: Tensor, r: Tensor) -> None:
    """r's value into a, then a's version bumped as torch's op ``name``."""
    _into(a, r)
    bump_version(a, name)


def _old_value(a: Tensor) -> Tensor:
    """A copy of a's value now, carrying a's gradient edge: the out-of-place op run on it makes a
    node whose first edge is a's old history and whose saved self is the old value."""
    src = _new(a._data.copy(), a.device)
    if a.requires_grad:
        fn = a.grad_fn  # (regenerates a stale view's history first)
        src._grad_fn, src._output_nr = fn, a._output_nr
        src._requires_grad = a._requires_grad
        src._grad_accumulator = a._grad_accumulator
    if a._fw_grad is not None:
        src._fw_grad = a._fw_grad  # the tangent before the op, for its forward formula
    return src


def _take_tangent(a: Tensor, t: Tensor | None) -> None:
    """a's tangent after op's result r was written into a: r's (in place where a has one of the
    same shape, so views of a's tangent follow, as torch's in-place forward AD)."""
    if t is None:
        return
    old = a._fw_grad
    if old is not None and old._data.shape == t._data.shape:
        old._data[...] = t._data
        old._version_counter[0] += 1
    else:
        a._fw_grad = t
        track(a)


def apply_inplace(name: str, a: Tensor, op: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
    """op(a, *args, **kwargs) written into a as torch's in-place op ``name``: op's node (numbered
    and recorded by op) becomes a's, with a's old edge first; one version bump named ``name``."""
    check_inplace(a)
    tensors = [x for x in (*args, *kwargs.values()) if isinstance(x, Tensor)]
    grad = _grad_state.enabled and (a._tracked or builtins.any(x._tracked for x in tensors))
    if not grad:
        with no_grad():
            r = op(a, *args, **kwargs)
        _write(name, a, r)
        return a
    r = op(_old_value(a), *args, **kwargs)
    _write(name, a, r)
    _take_tangent(a, r._fw_grad)
    node = r._grad_fn
    if node is not None:
        if a._retains_grad:
            _move_retains_grad(a, node, 0)
        a._grad_fn, a._output_nr = node, r._output_nr
        after_inplace(a)
    return a


def inplace_of(name: str, op: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """torch's ``name`` (an in-place op) from its out-of-place ``op``."""
    def fn(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return apply_inplace(name, self, op, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch's {name}: {op.__name__} in place, its node over the tensor's old history."
    return fn


def _zero(n, g):
    return _construction.zeros_like(g)


_COMPARE = {"eq": _pointwise.eq, "ne": _pointwise.ne, "lt": _pointwise.lt, "le": _pointwise.le,
            "gt": _pointwise.gt, "ge": _pointwise.ge}
ROWS: dict[str, D] = {
    **{f"{k}_scalar_": D(f"{k.capitalize()}Backward0", (_zero,)) for k in _COMPARE},
    **{f"{k}_tensor_": D(f"{k.capitalize()}Backward1", (_zero, _zero), reduce_broadcast=True) for k in _COMPARE},
}
register(ROWS)


def _compare_inplace(name: str, key: str) -> Callable[..., Tensor]:
    """torch's ``name``, a comparison in place: 1 or 0 in self's dtype; on floats torch records a
    node whose gradients are zeros (EqBackward0 against a number, EqBackward1 against a tensor)."""
    def fn(self: Tensor, other: Any) -> Tensor:
        bt = other if isinstance(other, Tensor) else None
        others = (bt,) if bt is not None else ()
        # an integer self gets no node (its values have no gradient)
        w = InplaceWrite(self, others if self.dtype.is_floating_point else ())
        with no_grad():
            r = _COMPARE[key](self, other)
        _into(self, r)
        return w.done(NODES[f"{key}_scalar_" if bt is None else f"{key}_tensor_"], others, {}, op=name)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _no_history(name: str, op: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """An op without a derivative, in place: the data changes, the history stays (as torch's)."""
    def fn(self: Tensor, *args: Any) -> Tensor:
        check_inplace(self)
        with no_grad():
            r = op(self, *args)
        _write(name, self, r)
        return self

    fn.__name__ = fn.__qualname__ = name
    return fn


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    if self.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_dtype.scalar_type_name(self.dtype)} but the "
                           "operation's result requires dtype Double")
    return apply_inplace("float_power_", self, _math_more.float_power, exponent)


tan_ = inplace_of("tan_", _math_more.tan)
exp2_ = inplace_of("exp2_", _math_more.exp2)
deg2rad_ = inplace_of("deg2rad_", _math_more.deg2rad)
rad2deg_ = inplace_of("rad2deg_", _math_more.rad2deg)

# Tensor methods (torch has no torch.cumsum_, torch.eq_ ...)
METHODS: dict[str, Callable[..., Any]] = {
    "tan_": tan_, "exp2_": exp2_, "deg2rad_": deg2rad_, "rad2deg_": rad2deg_,
    "absolute_": inplace_of("absolute_", _pointwise.abs),
    "arctan2_": inplace_of("arctan2_", _math_binary.atan2),
    "cumsum_": inplace_of("cumsum_", _cumulative.cumsum), "cumprod_": inplace_of("cumprod_", _cumulative.cumprod),
    "tril_": inplace_of("tril_", _shape.tril), "triu_": inplace_of("triu_", _shape.triu),
    "pow_": inplace_of("pow_", _arith.pow), "fmod_": inplace_of("fmod_", _arith.fmod),
    "remainder_": inplace_of("remainder_", _arith.remainder),
    "floor_divide_": inplace_of("floor_divide_", _arith.floor_divide),
    "copysign_": inplace_of("copysign_", _math_more.copysign), "float_power_": _float_power_,
    "addcmul_": inplace_of("addcmul_", _math_more.addcmul), "addcdiv_": inplace_of("addcdiv_", _math_more.addcdiv),
    "addmm_": inplace_of("addmm_", _linalg.addmm), "baddbmm_": inplace_of("baddbmm_", _linalg.baddbmm),
    **{f"{k}_": _compare_inplace(f"{k}_", k) for k in _COMPARE},
    "greater_": _compare_inplace("greater_", "gt"), "greater_equal_": _compare_inplace("greater_equal_", "ge"),
    "less_": _compare_inplace("less_", "lt"), "less_equal_": _compare_inplace("less_equal_", "le"),
    "not_equal_": _compare_inplace("not_equal_", "ne"),
    "logical_and_": _no_history("logical_and_", _pointwise.logical_and),
    "logical_or_": _no_history("logical_or_", _pointwise.logical_or),
    "logical_xor_": _no_history("logical_xor_", _math_more.logical_xor),
    "logical_not_": _no_history("logical_not_", _pointwise.logical_not),
    "bitwise_and_": _no_history("bitwise_and_", _pointwise.bitwise_and),
    "bitwise_or_": _no_history("bitwise_or_", _pointwise.bitwise_or),
    "bitwise_xor_": _no_history("bitwise_xor_", _pointwise.bitwise_xor),
    "bitwise_not_": _no_history("bitwise_not_", _pointwise.bitwise_not),
}


# -- *_copy ------------------------------------------------------------------------------------
# The view ops' rows, copied under torch's "_copy" names (the view's formula, its saved values).
_COPY_OF = ("view", "permute", "t", "transpose", "expand", "select", "slice", "squeeze", "squeeze_dim",
            "squeeze_dims", "unsqueeze", "unbind", "split", "split_with_sizes", "alias", "einsum_diagonal")
register({f"{k}_copy": D(DERIVATIVES[k].name + "_copy", DERIVATIVES[k].grads, DERIVATIVES[k].multi_output,
                         DERIVATIVES[k].reduce_broadcast, DERIVATIVES[k].all_inputs, DERIVATIVES[k].order)
          for k in _COPY_OF})
_COPY_BY_NAME = {DERIVATIVES[k].name: f"{k}_copy" for k in _COPY_OF}


def _copied(name: str, view: Callable[..., Any]) -> Callable[..., Any]:
    """view, then a copy: the outputs own their data; the view's node renamed ``..._copy``, with
    its sequence number, edges and saved values."""
    def fn(a: Tensor, *args: Any, **kwargs: Any) -> Any:
        v = view(a, *args, **kwargs)
        many = isinstance(v, (tuple, list))
        views = list(v) if many else [v]
        outs = [_new(_common._c_copy(x._data), x.device) for x in views]
        node = views[0]._grad_fn if views else None
        if node is not None and _grad_state.enabled:
            key = _COPY_BY_NAME[type(node).derivative.name]
            record(NODES[key], (a,), outs, dict(node.saved), sequence_nr=node.sequence_nr)
        return tuple(outs) if many else outs[0]

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: {name[:-5]} as a new tensor (its node named as torch's, ..._copy)."
    return fn


def detach_copy(a: Tensor) -> Tensor:
    """torch records a NotImplemented node for detach_copy (its derivative is not defined)."""
    out = _new(_common._c_copy(a._data), a.device)
    if _grad_state.enabled and a._tracked:
        record(NODES["not_implemented"], (a,), [out], {"op": "detach_copy"})
    return out


def _slice(a: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    d = _common._wrap_dim(dim, a.ndim)
    return _indexing.getitem(a, (slice(None),) * d + (slice(start, end, step),))


def _split_with_sizes(a: Tensor, split_sizes: Any, dim: int = 0) -> Any:
    return _shape.split(a, list(split_sizes), dim)


def _diagonal(a: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return _math_more.diagonal(a, offset, dim1, dim2)


view_copy = _copied("view_copy", _views.view)
permute_copy = _copied("permute_copy", _views.permute)
t_copy = _copied("t_copy", _views.t)
transpose_copy = _copied("transpose_copy", _views.transpose)
expand_copy = _copied("expand_copy", _views.expand)
squeeze_copy = _copied("squeeze_copy", _views.squeeze)
unsqueeze_copy = _copied("unsqueeze_copy", _views.unsqueeze)
select_copy = _copied("select_copy", _indexing.select)
slice_copy = _copied("slice_copy", _slice)
diagonal_copy = _copied("diagonal_copy", _diagonal)
unbind_copy = _copied("unbind_copy", _shape.unbind)
split_copy = _copied("split_copy", _shape.split)
split_with_sizes_copy = _copied("split_with_sizes_copy", _split_with_sizes)
alias_copy = _copied("alias_copy", _indexing.alias)
