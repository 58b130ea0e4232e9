"""Custom autograd Functions: ``class F(Function)`` with static forward and backward."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from gradviz.autograd import forward_state as _forward_state
from gradviz.autograd import saved_variable as _saved_variable
from gradviz.autograd.forward_state import FORWARD_ONLY
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.graph import (
    InputMetadata,
    Node,
    collect_next_edges,
    next_sequence_nr,
    node_created,
)
from gradviz.autograd.saved_variable import SavedVariable


class BackwardCFunction(Node):
    """The node of a custom Function; also its ``ctx``. Named ``<Class>Backward``."""

    __slots__ = (
        "_forward_cls", "_saved", "to_save", "needs_input_grad", "_is_tensor_input", "dirty_tensors",
        "non_differentiable", "materialize_grads", "_non_tensor_outputs",
    )  # (Node already has a __dict__)

    def __init__(self, forward_cls: type) -> None:
        # Torch numbers the node before forward runs; edges are set once inputs are known.
        super().__init__([], sequence_nr=next_sequence_nr())
        self._forward_cls = forward_cls
        self._saved: list[SavedVariable | None] | None = None
        self.to_save: tuple = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self._is_tensor_input: tuple[bool, ...] = ()
        self.dirty_tensors: tuple = ()
        self.non_differentiable: tuple = ()
        self.materialize_grads = True
        # Output slots forward filled with a non-tensor (an int, None): their gradient is None
        # even where grads are materialized (torch's undefined input metadata).
        self._non_tensor_outputs: frozenset[int] = frozenset()

    def name(self) -> str:
        return f"{self._forward_cls.__name__}Backward"

    # -- ctx API
    def save_for_backward(self, *tensors: Any) -> None:
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Tensors for the Function's jvp (forward-mode AD): its ``saved_tensors`` while it runs."""
        self._fw_saved = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        if self.__dict__.get("_in_jvp"):
            return tuple(self.__dict__.get("_fw_saved", ()))
        if self._saved is None:
            return ()
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    def release_variables(self) -> int:
        if not self._saved:
            return 0
        n = 0
        for s in self._saved:
            if s is not None and not s.released:
                s.release()
                n += 1
        return n

    def saved_shapes(self) -> list[tuple[int, ...]]:
        return [tuple(s.shape) for s in (self._saved or []) if s is not None]

    def apply(self, grads: list[Any]) -> list[Any]:
        from gradviz.ops.functions import zeros_for

        if self.materialize_grads:
            skip = self._non_tensor_outputs
            grads = [
                zeros_for(m[0], m[1], m[2]) if g is None and i not in skip else g
                for i, (g, m) in enumerate(zip(grads, self.input_metadata, strict=True))
            ]
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self._is_tensor_input)
        if len(result) != n_args:
            if len(result) > n_args and all(r is None for r in result[n_args:]):
                result = result[:n_args]
            else:
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients "
                    f"(expected {n_args}, got {len(result)})"
                )
        return [g for g, is_t in zip(result, self._is_tensor_input, strict=True) if is_t]

    # The engine calls _apply_all; the same method, so a reentrant backward costs one frame less.
    _apply_all = apply


class FunctionMeta(type):
    """Gives each Function its node class, ``<Name>Backward`` (torch's ``_backward_cls``), so
    ``type(y.grad_fn).__name__`` names the Function as torch's does."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"__module__": cls.__module__})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Subclass with ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` static methods, then
    call ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it with "
            "backward mode AD."
        )

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """Overridden, it makes forward ctx-less: ``forward(*args)``, then this fills ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        from gradviz.tensor import Tensor

        setup = cls.setup_context is not Function.setup_context
        if setup:
            # torch binds keyword and default arguments to forward's signature first
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        tensor_args = tuple(a for a in args if isinstance(a, Tensor))
        dual = _forward_state.STATE.live and any(t._fw_grad is not None for t in tensor_args)
        # (grad mode itself: a dual level keeps the ops' flag on under no_grad)
        requires = _grad_state.grad and any(t.requires_grad for t in tensor_args)
        # forward AD's stand-in history gets no edge
        edge_args = tuple(None if t._grad_fn is FORWARD_ONLY else t for t in tensor_args) if dual else tensor_args
        # torch collects the input edges (which may regenerate a stale view's history, a node)
        # before it makes the Function's node.
        edges = collect_next_edges(edge_args) if requires else None
        ctx = cls._backward_cls(cls)
        ctx._is_tensor_input = is_tensor
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        # forward runs with grad mode and forward AD off (its jvp gives the tangents), as torch's
        prev = _grad_state.grad, _grad_state.enabled
        _grad_state.grad = _grad_state.enabled = False
        try:
            if setup:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)  # keywords reach forward, untracked, as torch's
        finally:
            _grad_state.grad, _grad_state.enabled = prev
        outs = out if isinstance(out, tuple) else (out,)
        if dual:
            _custom_jvp(cls, ctx, args, outs, requires)
        if not requires:
            return out
        ctx.set_next_edges(edges)
        non_diff = {id(t) for t in ctx.non_differentiable}
        dirty = {id(t) for t in ctx.dirty_tensors}
        meta = []
        non_tensor = []
        device = next((o.device for o in outs if isinstance(o, Tensor)), None)
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                # Still a slot of the node (output i keeps number i): one no gradient reaches.
                non_tensor.append(i)
                meta.append(InputMetadata((), None, device if device is not None else tensor_args[0].device))
                continue
            if id(o) in dirty:
                if o._grad_fn is None and o._requires_grad and o._base is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
                o._version_counter[0] += 1
            if id(o) in non_diff:
                meta.append(InputMetadata(o.shape, o.dtype, o.device))
                continue
            if any(o is t for t in tensor_args) and id(o) not in dirty:
                # Returning an input as-is: torch gives the output its own identity (a view).
                o = o.detach()
                outs = outs[:i] + (o,) + outs[i + 1 :]
            o.grad_fn = ctx
            o._output_nr = i
            meta.append(InputMetadata(o.shape, o.dtype, o.device))
        ctx.input_metadata = meta
        if non_tensor:
            ctx._non_tensor_outputs = frozenset(non_tensor)
        ctx._saved = [
            None if t is None else SavedVariable(t, is_output=any(t is o for o in outs)) for t in ctx.to_save
        ]
        if _saved_variable._saved_hooks_active:
            _saved_variable._hooks._flush_pending()  # packed now, in save_for_backward's order
        node_created(ctx)
        return outs if isinstance(out, tuple) else outs[0]


def _custom_jvp(cls: type, ctx: BackwardCFunction, args: tuple, outs: tuple, reverse: bool) -> None:
    """Forward-mode AD through a custom Function: its ``jvp(ctx, *tangents)`` (zeros for a tensor
    input without one, None for a non-tensor), one tangent per output, as torch calls it."""
    from gradviz.tensor import Tensor

    if cls.jvp is Function.jvp:
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )
    tangents = []
    for a in args:
        if not isinstance(a, Tensor):
            tangents.append(None)
        elif a._fw_grad is not None:
            tangents.append(a._fw_grad)
        else:
            tangents.append(type(a)._wrap(np.zeros_like(a._data), a.dtype, a.device))
    _forward_state.STATE.computing = True
    ctx._in_jvp = True
    try:
        res = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
        _forward_state.STATE.computing = False
    res = res if isinstance(res, tuple) else (res,)
    for o, t in zip(outs, res):
        if isinstance(o, Tensor) and isinstance(t, Tensor):
            _forward_state.give_tangent(o, t)
            if not reverse and o._grad_fn is None:
                o._grad_fn = FORWARD_ONLY


class FunctionCtx:
    """Type of ``ctx`` for annotations."""


# torch.autograd.function.once_differentiable (a module of its own: it needs Node and the graph).
from gradviz.autograd.once_differentiable import once_differentiable  # noqa: E402, F401
