"""The recording of an in-place write, which every in-place op shares: torch's checks on
in-place use, the new node numbered and the tensor's old edge taken before the write, then the
version bumped, the write reported to the forward side, the node recorded with the old edge first,
and a view's base rebased (torch's rebase_history).

    w = InplaceWrite(a, (b,))      # checks; when grad is needed, numbers the node, keeps a's old edge
    a._data[...] = ...             # the op's own work (w.grad, w.old for what it saves)
    return w.done(NODES[key], (b,), saved, op="add_")

It imports no op family, so that every family (and nn, random) can use it at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradviz import _dtype
from gradviz.autograd import forward_events as _forward
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.graph import next_sequence_nr
from gradviz.ops.core import rebase_history, record
from gradviz.tensor import Tensor

_MULTI_VIEW_NODES = {"SplitBackward0": "Split", "SplitWithSizesBackward0": "SplitWithSizes",
                     "UnbindBackward0": "Unbind"}


def check_inplace(a: Tensor) -> None:
    """torch's refusals of an in-place write into ``a`` under grad mode: a leaf that requires
    grad, a view made under no_grad, an output of a multi-view function, a view of such a leaf."""
    if not _grad_state.grad:  # grad mode itself (a dual level may have ops record under no_grad)
        return
    if a._base is None:
        if a._grad_fn is None and a._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        return
    base = a._base
    if a._view_no_grad:
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that "
            "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both "
            "the view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
            "tracked) or both outside (if you want the inplace to be tracked)."
        )
    # the view's own flag, as torch's: a view of a plain leaf that was given requires_grad itself
    # (torch.arange(6.).view(2, 3).requires_grad_()) is refused too
    # torch refuses an output of a multi-view function before it looks at the base
    fn = a._grad_fn
    if fn is not None and type(fn).__name__ in _MULTI_VIEW_NODES:
        raise RuntimeError(
            f"Output {a._output_nr} of {_MULTI_VIEW_NODES[type(fn).__name__]} is a view and is being modified "
            "inplace. This view is the output of a function that returns multiple views. Such functions do not "
            "allow the output views to be modified inplace. You should replace the inplace operation by an "
            "out-of-place one."
        )
    if base._grad_fn is None and a.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def check_result_cast(a: Tensor, r: Tensor) -> None:
    """torch's refusal to write an op's floating-point result ``r`` into an integer ``a``."""
    if r.dtype is not a.dtype and not a.dtype.is_floating_point and r.dtype.is_floating_point:
        raise RuntimeError(f"result type {_dtype.scalar_type_name(r.dtype)} can't be cast to the desired output "
                           f"type {_dtype.scalar_type_name(a.dtype)}")


def after_inplace(a: Tensor) -> None:
    """An in-place op on a view rewrites its base's history too (torch's rebase_history)."""
    if a._base is not None:
        rebase_history(a, a._grad_fn)


def old_edge_holder(a: Tensor) -> Tensor:
    """A stand-in carrying a's gradient edge as it was before an in-place op rewrites a: the new
    node's first edge points there."""
    old = a.detach()
    old.grad_fn, old._output_nr, old._requires_grad = a.grad_fn, a._output_nr, a._requires_grad
    old._grad_accumulator = a._grad_accumulator
    if a._fw_grad is not None:
        old._fw_grad = a._fw_grad  # the tangent before the op, for its forward formula
    return old


def bump_version(a: Tensor, op: str) -> None:
    """a's version up after an in-place write, reported to the forward side as torch's op ``op``
    ("sin_"; the frames' names do not say it: a kernel serves several ops). InplaceWrite.done's
    first step, and the whole of it for an op whose node another op records (apply_inplace) or
    that records none (logical_and_, resize_)."""
    a._version_counter[0] += 1
    if _forward.engine.probe is not None:
        _forward.version_bump(a, op)


class InplaceWrite:
    """One in-place write into ``a``, from its checks to its node. ``others``: the op's other
    inputs (tensors or not); a node is recorded when grad mode is on and ``a`` or one of them
    requires grad (``grad``). Then, before the write, the node's sequence number is taken and
    ``old`` holds a's edge as it was (torch's order: number the node, collect its edges, then
    clone what it saves). ``checked``: the caller ran ``check_inplace(a)`` itself, with checks of
    its own after it and before anything is numbered."""

    __slots__ = ("a", "grad", "seq", "old")

    def __init__(self, a: Tensor, others: tuple = (), *, checked: bool = False):
        if not checked:
            check_inplace(a)
        self.a = a
        self.grad = _grad_state.enabled and (
            a._tracked or any(isinstance(o, Tensor) and o._tracked for o in others))
        if self.grad:
            self.seq = next_sequence_nr()
            self.old = old_edge_holder(a)

    def done(self, node: Any, others: tuple, saved: dict | Callable[[], dict], *, op: str,
             rebase: bool = True) -> Tensor:
        """After the write: a's version up, the write reported to the forward side as torch's op
        ``op`` ("sin_"; the frames' names do not say it: a kernel serves several ops), and, when
        grad is needed, ``node`` recorded over (a's old edge, *others) saving ``saved`` (a dict,
        or a function making it once the write is done: what reads a's new value), and a view's
        base rebased (``rebase``). Returns a."""
        a = self.a
        bump_version(a, op)
        if self.grad:
            record(node, (self.old, *others), [a], saved() if callable(saved) else saved, sequence_nr=self.seq)
            if rebase:
                after_inplace(a)
        return a


def named_inplace(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, an in-place op, called by another name (torch's alias ``clip_`` of ``clamp_``,
    ``__setitem__`` over ``copy_``, nn.init's fills over ``uniform_``): its writes are reported as
    one version bump named ``name``, as torch's recorder sees the user's call. The tensor written
    is the first argument (or ``tensor=``/``input=``)."""

    def op(*args: Any, **kwargs: Any) -> Any:
        if _forward.engine.probe is None:
            return fn(*args, **kwargs)
        t = args[0] if args else kwargs.get("tensor", kwargs.get("input"))
        if not isinstance(t, Tensor):
            return fn(*args, **kwargs)
        return _forward.inplace_call(name, t, fn, *args, **kwargs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    op.__wrapped__ = fn  # type: ignore[attr-defined]
    return op
