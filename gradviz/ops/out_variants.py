"""``out=`` on torch's common functions (``torch.add(a, b, out=c)``): the result written into
``out``, as torch's out= kernels write it, and reported as one version bump of ``out`` named by
the function (``add``), as torch's recorder sees the call.

torch's rules, kept here: no out= while grad mode is on and an input or ``out`` requires grad; the
result cast to out's dtype unless a floating result would go into an integer tensor; an ``out``
of another shape resized, with torch's deprecation warning when it had elements.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import activations, arith, linalg, pointwise, reductions, shape
from gradviz.ops.inplace_write import bump_version, check_result_cast
from gradviz.tensor import Tensor

# The functions that take out=: each wrapped under its own name.
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div,
    "maximum": arith.maximum, "minimum": arith.minimum, "neg": arith.neg, "where": arith.where,
    "clamp": activations.clamp,
    "sqrt": pointwise.sqrt, "exp": pointwise.exp, "log": pointwise.log, "abs": pointwise.abs,
    "matmul": linalg.matmul, "mm": linalg.mm,
    "sum": reductions.sum, "mean": reductions.mean,
    "cat": shape.cat, "stack": shape.stack,
}

__all__ = list(_FUNCTIONS)

# torch's element-wise kernels (TensorIterator) refuse an input that partly overlaps ``out``.
_ELEMENTWISE = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "neg", "where", "clamp", "sqrt",
                          "exp", "log", "abs"})


def _tensors(args: tuple, kwargs: dict) -> list[Tensor]:
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(x for x in a if isinstance(x, Tensor))
    return found


def _dense(a: Any) -> bool:
    return bool(a.flags.c_contiguous or a.flags.f_contiguous)


def _partial_overlap(out: Any, a: Any) -> bool:
    """torch's PARTIAL overlap of two dense arrays: their memory ranges meet, and they are not the
    same memory seen the same way (an input that is ``out`` itself is fine). numpy arrays only."""
    if not (isinstance(out, np.ndarray) and isinstance(a, np.ndarray)) or not (_dense(out) and _dense(a)):
        return False
    if not np.may_share_memory(out, a):
        return False
    same = (out.__array_interface__["data"][0] == a.__array_interface__["data"][0]
            and out.strides == a.strides and out.shape == a.shape)
    return not same


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def write_out(name: str, out: Any, fn: Callable[..., Tensor], args: tuple, kwargs: dict) -> Tensor:
    """``fn(*args, **kwargs)`` written into ``out`` as torch's ``name(..., out=out)``; returns out."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _grad_state.enabled and (out.requires_grad or any(t.requires_grad for t in _tensors(args, kwargs))):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if name in _ELEMENTWISE and any(_partial_overlap(out._data, t._data) for t in _tensors(args, kwargs)):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")
    r = fn(*args, **kwargs)
    check_result_cast(out, r)
    if tuple(out.shape) == tuple(r.shape):
        out._data[...] = r._data
    else:
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape {_shape_text(tuple(out.shape))}, "
                f"which does not match the required output shape {_shape_text(tuple(r.shape))}. This behavior is "
                "deprecated, and in a future PyTorch release outputs will not be resized unless they have zero "
                "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                "t.resize_(0).", UserWarning, stacklevel=3)
        out._data = r._data.astype(out._data.dtype, copy=True)
    bump_version(out, name)
    return out


def _with_out(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def op(*args: Any, out: Any = None, **kwargs: Any) -> Tensor:
        if out is None:
            return fn(*args, **kwargs)
        return write_out(name, out, fn, args, kwargs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn  # type: ignore[attr-defined]
    return op


globals().update({name: _with_out(name, fn) for name, fn in _FUNCTIONS.items()})
