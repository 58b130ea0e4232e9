"""In-place forms of unary ops (abs_, log_, floor_, rsqrt_, ...), recorded as torch's generated
in-place kernels record them: the op's own node (AbsBackward0 for abs_) with the tensor's old
history as its edge; a formula that reads self gets a clone of the old value, made after the node
is numbered (its CloneBackward0 shows under create_graph), one that reads the result gets the
tensor itself at its new version."""

from __future__ import annotations

from typing import Any

from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import arith as _arith
from gradviz.ops import indexing as _indexing
from gradviz.ops import pointwise as _pointwise
from gradviz.ops import views as _views
from gradviz.ops._common import NODES
from gradviz.ops.core import save
from gradviz.ops.inplace_write import InplaceWrite, check_result_cast, named_inplace
from gradviz.tensor import Tensor

__all__ = [  # torch.abs_ and the like are functions too
    "abs_", "ceil_", "cos_", "expm1_", "fix_", "floor_", "log10_", "log1p_", "log2_", "log_", "reciprocal_",
    "round_", "rsqrt_", "sin_", "square_", "trunc_",
]
# Tensor methods only: torch has no torch.sgn_, torch.scatter_ ...
METHOD_ONLY = ["index_add_", "scatter_", "scatter_add_", "sgn_", "sign_"]


def _inplace_unary(name: str, key: str, a: Tensor, op: Any, saves: str | None) -> Tensor:
    """op(a) written into a, op's node recorded with a's old edge; ``saves``: "self" (a clone of
    the old value), "result" (a at its new version) or None."""
    w = InplaceWrite(a)
    saved: dict[str, Any] = {"self": save(_views.clone(w.old))} if w.grad and saves == "self" else {}
    with no_grad():
        r = op(a)
    check_result_cast(a, r)
    a._data[...] = r._data
    # the result a formula reads is a at its new version
    return w.done(NODES[key], (), lambda: {"result": save(a, True)} if saves == "result" else saved, op=name)


def _make(name: str, key: str, op: Any, saves: str | None) -> Any:
    def fn(a: Tensor) -> Tensor:
        return _inplace_unary(name, key, a, op, saves)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch's {name}: {op.__name__} in place ({key}'s node)."
    return fn


abs_ = _make("abs_", "abs", _pointwise.abs, "self")
log_ = _make("log_", "log", _pointwise.log, "self")
log1p_ = _make("log1p_", "log1p", _pointwise.log1p, "self")
log2_ = _make("log2_", "log2", _pointwise.log2, "self")
log10_ = _make("log10_", "log10", _pointwise.log10, "self")
sin_ = _make("sin_", "sin", _pointwise.sin, "self")
cos_ = _make("cos_", "cos", _pointwise.cos, "self")
expm1_ = _make("expm1_", "expm1", _pointwise.expm1, "result")
rsqrt_ = _make("rsqrt_", "rsqrt", _pointwise.rsqrt, "result")
reciprocal_ = _make("reciprocal_", "reciprocal", _arith.reciprocal, "result")
sign_ = _make("sign_", "sign", _pointwise.sign, None)
sgn_ = _make("sgn_", "sgn", _pointwise.sgn, None)
floor_ = _make("floor_", "floor", _pointwise.floor, None)
ceil_ = _make("ceil_", "ceil", _pointwise.ceil, None)
trunc_ = _make("trunc_", "trunc", _pointwise.trunc, None)
fix_ = named_inplace("fix_", trunc_)
round_ = _make("round_", "round", _pointwise.round, None)


def square_(a: Tensor) -> Tensor:
    """torch's square_ is pow_(2): PowBackward0 with a clone of the old value saved."""
    w = InplaceWrite(a)
    saved = {"self": save(_views.clone(w.old)), "exponent": 2} if w.grad else {}
    with no_grad():
        r = _arith.pow(a, 2)
    a._data[...] = r._data
    return w.done(NODES["pow_scalar"], (), saved, op="square_")


def _inplace_with(key: str, a: Tensor, others: tuple, compute: Any, saved: dict) -> Tensor:
    """compute()'s result (the out-of-place op, run without a graph) written into a; the op's node
    recorded with a's old edge first, then the other differentiable inputs, as torch's in-place
    kernels do. The rows save no tensor that the write changes (dims, indices, alpha)."""
    w = InplaceWrite(a, others)
    with no_grad():
        r = compute()
    a._data[...] = r._data
    return w.done(NODES[key], others, saved, op=key + "_")


def scatter_(a: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None) -> Tensor:
    if src is None:
        src = value
    d = dim + a.ndim if dim < 0 else dim
    if not isinstance(src, Tensor):  # one number: ScatterBackward1, a's edge only
        return _inplace_with("scatter_value", a, (), lambda: _indexing.scatter(a, dim, index, src),
                             {"dim": d, "index": index.detach()})
    return _inplace_with("scatter", a, (src,), lambda: _indexing.scatter(a, dim, index, src),
                         {"dim": d, "index": index.detach()})


def scatter_add_(a: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    d = dim + a.ndim if dim < 0 else dim
    return _inplace_with("scatter_add", a, (src,), lambda: _indexing.scatter_add(a, dim, index, src),
                         {"dim": d, "index": index.detach()})


def index_add_(a: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    d = dim + a.ndim if dim < 0 else dim
    return _inplace_with("index_add", a, (source,), lambda: _indexing.index_add(a, dim, index, source, alpha=alpha),
                         {"dim": d, "index": index.detach(), "alpha": alpha})
