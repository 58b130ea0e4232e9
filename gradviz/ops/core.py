"""How an op joins the graph: OpNode, the Derivative row type, and ``record``.

An op computes its result with the array module, then, if grad mode is on and an input requires
grad, makes one node whose class is named after its derivative row (``MulBackward0``), with one
edge per forward input. Backward evaluates the row's gradient formulas, which are written with
differentiable tensor ops so that ``create_graph=True`` gives a graph of the backward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.graph import (
    InputMetadata,
    Node,
    SavedVariable,
    collect_next_edges,
    node_created,
)
from gradviz.tensor import Tensor

# (node, grad of the output) -> grad of one input; for multi-output rows, a list of output grads.
GradFn = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Derivative:
    """One row of the table: a backward node name and one gradient formula per forward input."""

    name: str  # torch's backward node name, e.g. "MulBackward0"
    grads: tuple[GradFn | None, ...]  # None: this input gets no gradient (non-differentiable)
    multi_output: bool = False  # formulas take the list of output grads (split, unbind, max.dim)
    reduce_broadcast: bool = False  # sum each input's gradient back to the input's shape
    # Ops with any number of inputs (cat, stack): one formula returning every input's gradient.
    all_inputs: GradFn | None = None


class OpNode(Node):
    """A node made by a tensor op. ``saved`` holds SavedVariables and plain values by name."""

    __slots__ = ("saved", "shapes")
    derivative: Derivative  # set on each generated subclass

    def __getitem__(self, key: str) -> Any:
        v = self.saved[key]
        if type(v) is SavedVariable:
            return v.unpack(self)
        if type(v) is list and v and type(v[0]) is SavedVariable:
            return [s.unpack(self) for s in v]
        return v

    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        d = self.derivative
        if d.multi_output:
            if all(g is None for g in grads):
                return [None] * len(self.next_edges)
            arg: Any = grads
        else:
            arg = grads[0]
            if arg is None:
                return [None] * len(self.next_edges)
        if d.all_inputs is not None:
            grads_in = d.all_inputs(self, arg)
            return [g if e.function is not None else None for g, e in zip(grads_in, self.next_edges, strict=True)]
        out: list[Tensor | None] = []
        for i, (edge, fn) in enumerate(zip(self.next_edges, d.grads, strict=True)):
            if fn is None or edge.function is None:
                out.append(None)
                continue
            g = fn(self, arg)
            if d.reduce_broadcast and g is not None and g.shape != self.shapes[i]:
                from gradviz.ops.functions import sum_to

                g = sum_to(g, self.shapes[i])
            out.append(g)
        return out

    def release_variables(self) -> int:
        n = 0
        for v in self.saved.values():
            if type(v) is SavedVariable and not v.released:
                v.release()
                n += 1
            elif type(v) is list:
                for s in v:
                    if type(s) is SavedVariable and not s.released:
                        s.release()
                        n += 1
        return n

    def saved_shapes(self) -> list[tuple[int, ...]]:
        shapes = []
        for v in self.saved.values():
            if type(v) is SavedVariable:
                shapes.append(tuple(v.shape))
            elif type(v) is list:
                shapes.extend(tuple(s.shape) for s in v if type(s) is SavedVariable)
        return shapes


_NODE_CLASSES: dict[str, type[OpNode]] = {}


def node_class(d: Derivative) -> type[OpNode]:
    """The OpNode subclass for a row, named as torch names it, so type(fn).__name__ matches."""
    cls = _NODE_CLASSES.get(d.name)
    if cls is None:
        cls = type(d.name, (OpNode,), {"__slots__": (), "derivative": d})
        _NODE_CLASSES[d.name] = cls
    return cls


def needs_grad(inputs: tuple) -> bool:
    if not _grad_state.enabled:
        return False
    for t in inputs:
        if t is not None and (t._requires_grad or t.grad_fn is not None):
            return True
    return False


def save(t: Tensor, is_output: bool = False) -> SavedVariable:
    return SavedVariable(t, is_output)


def record(
    cls: type[OpNode],
    inputs: tuple[Tensor | None, ...],
    outputs: list[Tensor],
    saved: dict[str, Any] | None = None,
    sequence_nr: int | None = None,
) -> None:
    """Attach a new node of ``cls`` to ``outputs``, with an edge per entry of ``inputs``.

    ``sequence_nr``: one taken earlier, for ops that (like torch) make their node before they
    record other ops, such as the clone an in-place op saves."""
    node = cls(collect_next_edges(inputs), sequence_nr=sequence_nr)
    node.saved = saved or {}
    if cls.derivative.reduce_broadcast:
        node.shapes = tuple(None if t is None else t.shape for t in inputs)
    meta = []
    for i, out in enumerate(outputs):
        out.grad_fn = node
        out._output_nr = i
        meta.append(InputMetadata(out._data.shape, out.dtype, out.device))
    node.input_metadata = meta
    node_created(node)
