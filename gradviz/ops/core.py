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

from gradviz import _dtype
from gradviz.autograd import _state as _engine_state
from gradviz.autograd import graph
from gradviz.autograd import saved_variable as _saved_variable
from gradviz.autograd.forward_state import FORWARD_ONLY
from gradviz.autograd.forward_state import STATE as _FORWARD
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import anomaly
from gradviz.autograd.graph import (
    NO_EDGE,
    InputMetadata,
    Node,
    _node_ids,
    _sequence,
    grad_accumulator,
    gradient_edge,
    node_created,
)
from gradviz.autograd.saved_tensor import raw_saved_property
from gradviz.autograd.saved_variable import ERR_BACKWARD_TWICE, SavedVariable
from gradviz.ops import _hooked_nodes
from gradviz.tensor import Tensor

# (node, grad of the output) -> grad of one input; for multi-output rows, a list of output grads.
GradFn = Callable[[Any, Any], Any]
# Forward-mode AD: (node, the inputs' tangents (None where an input has none), the outputs) ->
# the output's tangent (a list of them for a multi-output row; None for no tangent). The node
# reads the saved values as the backward formulas do; the formula computes with primals.
ForwardFn = Callable[[Any, list, list], Any]
# torch's derivatives.yaml marker: the op is elementwise, so its Jacobian is diagonal and each
# input's backward formula, given that input's tangent in place of the output's gradient, is its
# part of the output's tangent (the parts are summed).
AUTO_ELEMENT_WISE = "auto_element_wise"
# Each input element feeds one output element (a reduction, a loss, an elementwise op with a
# reduction after it): the Jacobian has one non-zero per column, which the backward formula given
# ones reads off; each output's tangent sums its inputs' tangents times those. Exact for sum,
# mean, max/min (ties share as the backward shares them), var, norm, prod, logsumexp, losses.
AUTO_REDUCTION = "auto_reduction"
# Any other op: its backward formula is linear in the incoming gradient u (J^T u), so the tangent
# J t is the gradient, with respect to u, of <J^T u, t>: one backward of the row's own formulas
# (which are written with differentiable ops for create_graph). For rows whose Jacobian has no
# simple forward form here (convolution, the norms, pooling, the linear-algebra solvers, and the
# fused backward kernels that a forward-over-reverse hessian runs through).
AUTO_TRANSPOSE = "auto_transpose"


@dataclass(frozen=True)
class Derivative:
    """One row of the table: a backward node name and one gradient formula per forward input."""

    name: str  # torch's backward node name, e.g. "MulBackward0"
    grads: tuple[GradFn | None, ...]  # None: this input gets no gradient (non-differentiable)
    multi_output: bool = False  # formulas take the list of output grads (split, unbind, max.dim)
    reduce_broadcast: bool = False  # sum each input's gradient back to the input's shape
    # Ops with any number of inputs (cat, stack): one formula returning every input's gradient.
    all_inputs: GradFn | None = None
    # The order the formulas run in, when not the inputs' order. torch's generated code runs
    # them sorted by argument name ("other" before "self"), which shows in the sequence numbers
    # of a create_graph backward's nodes.
    order: tuple[int, ...] = ()
    # The forward-derivative column: a ForwardFn, AUTO_ELEMENT_WISE, or None where forward AD
    # through the op is not supported (torch's error names the op).
    forward: ForwardFn | str | None = None


# The saved values of every add with alpha 1 (the int): one dict for all such nodes, never
# written after record (saved dicts are read by formulas and release_variables only). A node
# holding it is an AddBackward0 whose gradients are the incoming one (see _apply_all).
_ALPHA_ONE = {"alpha": 1}


class _ReleasedNumber:
    """What a node holds after its backward in place of a Python number that torch saves as a
    tensor (a "wrapped number": ``x * 2.0`` saves ``other``): reading it is the error of a second
    backward, as it is in torch. Kept as a number until then, so the formulas multiply by it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<released number>"


RELEASED_NUMBER = _ReleasedNumber()


class OpNode(Node):
    """A node made by a tensor op. ``saved`` holds SavedVariables and plain values by name."""

    __slots__ = ("saved", "shapes")
    derivative: Derivative  # set on each generated subclass
    _fresh_outputs = True  # apply and apply_needed build their lists
    _defer_safe = True  # formulas call ops, never user code
    # The derivative's fields that backward reads per node, as class attributes of each generated
    # subclass (node_class): a class attribute is a cached type lookup, a dataclass field two.
    _general = False  # multi-output or all-inputs formulas: apply_needed always
    _formulas: tuple = ()
    _order: tuple[int, ...] = ()
    _other_first = False  # _order == (1, 0)
    _reduce = False
    # Saved names whose Python numbers torch would have saved as tensors (MulBackward0's and
    # DivBackward0's other): released with the node's tensors, though not counted (the trace's
    # saved_release counts SavedVariables, and these are not).
    _wrapped: tuple[str, ...] = ()

    def __getitem__(self, key: str) -> Any:
        """A saved value as the backward formulas read it (``n["result"]``)."""
        v = self.saved[key]
        if type(v) is SavedVariable:
            if v.is_output and not _grad_state.enabled and not v.released:
                # No graph is being built (create_graph off): the formula only computes with
                # the tensor, so the alias the variable keeps will do, checked as unpack checks
                # it, without a new tensor to carry this node as its grad_fn.
                t = v.tensor
                if t is not None and t._version_counter[0] == v.version:
                    return t
            return v.unpack(self)
        if type(v) is list and v and type(v[0]) is SavedVariable:
            return [s.unpack(self) for s in v]
        if v is RELEASED_NUMBER:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        return v

    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        if not self._general:
            task = _engine_state.tls.current_graph_task
            if task is None or not task.exec_info:
                return self._apply_all(grads)
        return self.apply_needed(grads, needed_outputs(self.next_edges))

    def _apply_all(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        if self._general:
            return self.apply_needed(grads, needed_outputs(self.next_edges))
        # The common case, without the generic loops: one output gradient, and every input with
        # an edge needs its gradient.
        g = grads[0]
        edges = self.next_edges
        if self.saved is _ALPHA_ONE and g is not None and not _grad_state.enabled:
            # AddBackward0 with alpha 1 and no graph to build (any add, a bias add included):
            # the incoming gradient for each input with an edge, summed back where that input
            # was broadcast; what the formulas and the loop below give, without their calls.
            # (Under create_graph the formulas' order decides the sums' sequence numbers.)
            g0 = g if edges[0][0] is not None else None
            g1 = g if edges[1][0] is not None else None
            shapes = self.shapes
            if shapes is not None:
                shape = g._data.shape
                if g0 is not None and shape != shapes[0]:
                    g0 = _sum_to(g, shapes[0])
                if g1 is not None and shape != shapes[1]:
                    g1 = _sum_to(g, shapes[1])
            return [g0, g1]
        n_out = len(edges)
        if g is None:
            return [None] * n_out
        formulas = self._formulas
        if n_out == 1:
            f = formulas[0]
            out: list[Tensor | None] = [f(self, g) if f is not None and edges[0][0] is not None else None]
        elif n_out == 2:
            # Binary ops (add, mul, mm, ...: most nodes with two edges) without the loop; the
            # same order as the loop's (torch's: "other" first where _order says so).
            f0 = formulas[0]
            f1 = formulas[1]
            g0 = g1 = None
            if self._other_first:
                if f1 is not None and edges[1][0] is not None:
                    g1 = f1(self, g)
                if f0 is not None and edges[0][0] is not None:
                    g0 = f0(self, g)
            else:
                if f0 is not None and edges[0][0] is not None:
                    g0 = f0(self, g)
                if f1 is not None and edges[1][0] is not None:
                    g1 = f1(self, g)
            out = [g0, g1]
        else:
            out = [None] * n_out
            for i in self._order or range(n_out):
                f = formulas[i]
                if f is not None and edges[i][0] is not None:
                    out[i] = f(self, g)
        if self._reduce:
            shapes = self.shapes
            if shapes is not None:
                for i in range(n_out):
                    gi = out[i]
                    if gi is not None and gi._data.shape != shapes[i]:
                        out[i] = _sum_to(gi, shapes[i])
        return out

    def apply_needed(self, grads: list[Tensor | None], needed: list[bool]) -> list[Tensor | None]:
        """The gradients of the inputs marked in ``needed`` (torch's should_compute_output: an
        input nobody downstream needs gets no gradient computed, so makes no nodes either)."""
        d = self.derivative
        n_out = len(self.next_edges)
        if d.multi_output:
            if all(g is None for g in grads):
                return [None] * n_out
            arg: Any = grads
        else:
            arg = grads[0]
            if arg is None:
                return [None] * n_out
        if d.all_inputs is not None:
            if not any(needed):
                return [None] * n_out
            grads_in = d.all_inputs(self, arg)
            return [g if need else None for g, need in zip(grads_in, needed, strict=True)]
        out: list[Tensor | None] = [None] * n_out
        for i in d.order or range(n_out):
            fn = d.grads[i]
            if fn is not None and needed[i]:
                out[i] = fn(self, arg)
        if d.reduce_broadcast and self.shapes is not None:
            # After all formulas, as torch sums broadcast gradients back in validate_outputs.
            for i, g in enumerate(out):
                if g is not None and g._data.shape != self.shapes[i]:
                    out[i] = _sum_to(g, self.shapes[i])
        return out

    def release_variables(self) -> int:
        n = 0
        for v in self.saved.values():
            if type(v) is SavedVariable:
                if not v.released:
                    # SavedVariable.release, inline (once per node in every backward)
                    v.tensor = None
                    v.released = True
                    n += 1
            elif type(v) is list:
                for s in v:
                    if type(s) is SavedVariable and not s.released:
                        s.release()
                        n += 1
        wrapped = self._wrapped
        if wrapped:
            saved = self.saved
            for k in wrapped:
                tv = type(saved.get(k))
                if tv is float or tv is int or tv is bool:
                    saved[k] = RELEASED_NUMBER
        return n

    def saved_shapes(self) -> list[tuple[int, ...]]:
        shapes = []
        for v in self.saved.values():
            if type(v) is SavedVariable:
                shapes.append(tuple(v.shape))
            elif type(v) is list:
                shapes.extend(tuple(s.shape) for s in v if type(s) is SavedVariable)
        return shapes


def _sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """reductions.sum_to. reductions.py (which imports this module) puts sum_to itself here once
    defined: an import statement in backward runs importlib's _handle_fromlist per gradient."""
    from gradviz.ops.reductions import sum_to

    return sum_to(g, shape)


_NODE_CLASSES: dict[int, type[OpNode]] = {}  # id of a Derivative row -> its node class
_object_new = object.__new__


# torch exposes a node's saved values as attributes, _saved_<name> (fn._saved_self,
# _saved_result). OpNode gets a property for each name record() has seen among saved keys, not a
# __getattr__: a class with one (or a base with one) makes CPython look up every attribute of its
# instances the slow way (no specialization), which cost the engine ~0.45 us a node.
_SAVED_NAMES: set[str] = set()


def _saved_property(key: str) -> property:
    def get(self: OpNode) -> Any:
        saved = self.saved
        v = saved.get(key, _MISSING)
        if type(v) is SavedVariable:
            return v.unpack(self)  # with this node as a saved output's grad_fn, as torch gives it
        if v is RELEASED_NUMBER:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if key in self._wrapped and type(v) in (float, int, bool):
            # torch's wrapped number: a 0-dim tensor, float64 for a float, int64 for an int
            from gradviz.ops.construction import tensor

            return tensor(v, dtype=_WRAPPED_DTYPES[type(v)])
        if v is _MISSING or type(v) is list:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '_saved_{key}'")
        return v  # a plain value (alpha, dim): as torch gives its scalars

    return property(get)


_MISSING = object()
_WRAPPED_DTYPES = {float: _dtype.float64, int: _dtype.int64, bool: _dtype.bool_}


def _add_saved_names(saved: dict[str, Any]) -> None:
    for key in saved:
        if key not in _SAVED_NAMES:
            setattr(OpNode, "_saved_" + key, _saved_property(key))
            setattr(OpNode, "_raw_saved_" + key, raw_saved_property(key))
            _SAVED_NAMES.add(key)


def needed_outputs(edges: list) -> list[bool]:
    """For each edge, whether the running graph task needs a gradient sent along it: it leads
    somewhere, and (in a task with outputs: grad(), backward(inputs=...)) to a node that runs."""
    task = _engine_state.tls.current_graph_task
    exec_info = task.exec_info if task is not None else None
    if not exec_info:
        return [e[0] is not None for e in edges]
    out = []
    for e in edges:
        info = exec_info.get(e[0]) if e[0] is not None else None
        out.append(info is not None and info.should_execute())
    return out


def _move_retains_grad(t: Tensor, node: Node, slot: int) -> None:
    """An in-place op gives t a new history: retain_grad follows it (torch moves the hook), so
    .grad is the gradient of the value after the op."""
    if not t._retains_grad or t._grad_fn is None:
        return
    hooks = t._grad_fn._retains_grad_hooks
    hook = hooks.pop(t._output_nr, None) if hooks else None
    if hook is not None:
        if node._retains_grad_hooks is None:
            node._retains_grad_hooks = {}
        node._retains_grad_hooks[slot] = hook


_CPP_NODES = frozenset({"CopyBackwards", "Identity"})  # torch::autograd's own Node classes, not generated rows


def node_class(d: Derivative) -> type[OpNode]:
    """The OpNode subclass for a row, named as torch names it, so type(fn).__name__ matches.
    One class per row, not per name: two rows may share torch's name (torch.addmm's, which saves
    beta and alpha, and Linear's, which has neither) and must keep their own formulas."""
    cls = _NODE_CLASSES.get(id(d))
    if cls is None:
        cls = type(d.name, (OpNode,), {
            "__slots__": (), "derivative": d, "_general": d.multi_output or d.all_inputs is not None,
            "_formulas": d.grads, "_order": d.order, "_other_first": d.order == (1, 0),
            "_reduce": d.reduce_broadcast,
            # torch's hand-written C++ nodes name themselves with their namespace
            "_namespace": "torch::autograd::" if d.name in _CPP_NODES else "",
        })
        _NODE_CLASSES[id(d)] = cls  # the class holds d, so its id is never reused
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
    dual_inputs = None
    if _FORWARD.live:
        # A dual level holds tangents: inputs that only forward AD follows get no edge, and an op
        # none of whose inputs requires grad gets no node (its outputs' tangents are computed
        # now); otherwise the tangents are computed once the outputs have their node, so that
        # they are differentiable (reverse over forward).
        dual_inputs = inputs
        inputs = _FORWARD.propagate(cls, inputs, outputs, saved)
        if inputs is None:
            return
    # The number first, then the edges, as torch: reading an input's grad_fn may make a node (a
    # view's regenerated history), which must come after this one.
    if sequence_nr is None:
        sequence_nr = _sequence.take()
    # collect_next_edges and new_node inline, topological_nr computed in the same pass (graph
    # building's hot path: one op, one record).
    edges = []
    topo = 0
    for t in inputs:
        if t is None:
            edges.append(NO_EDGE)
            continue
        if t._base is None:
            # Not a view: grad_fn and requires_grad are the plain fields (no history to regenerate).
            fn = t._grad_fn
            if fn is None:
                if not t._requires_grad:
                    edges.append(NO_EDGE)
                    continue
                fn = grad_accumulator(t)
                edges.append((fn, 0))  # plain tuples: see gradviz.autograd.graph.Edge
            else:
                edges.append((fn, t._output_nr))
        else:
            if not t.requires_grad:
                edges.append(NO_EDGE)
                continue
            edge = gradient_edge(t)
            edges.append(edge)
            fn = edge[0]
            if fn is None:
                continue
        n = fn.topological_nr
        if n >= topo:
            topo = n + 1
    # Whether saved-tensor hooks are in force for this op's saved values: a module attribute,
    # read once (twice a node otherwise).
    saved_hooks = saved and _saved_variable._saved_hooks_active
    if saved_hooks and _hooked_nodes.any_packed(saved):
        cls = _hooked_nodes.hooked_class(cls)  # unpacks as torch's nodes do: once each, first
    node = _object_new(cls)
    node._id = next(_node_ids)
    node.sequence_nr = sequence_nr
    node.next_edges = edges
    node.topological_nr = topo
    if saved:
        node.saved = saved
        if not _SAVED_NAMES.issuperset(saved):
            _add_saved_names(saved)
    else:
        node.saved = {}
    if cls._reduce:
        # The input shapes (raw tuples) only where an input was broadcast: backward then sums
        # its gradient back; None (nothing to check) in the common same-shape case.
        shape = outputs[0]._data.shape
        shapes = None
        for t in inputs:
            if t is not None and t._data.shape != shape:
                shapes = tuple([None if u is None else u._data.shape for u in inputs])
                break
        node.shapes = shapes
    if len(outputs) == 1:
        out = outputs[0]
        if out._retains_grad:
            _move_retains_grad(out, node, 0)
        out._grad_fn = node
        out._output_nr = 0
        # An elementwise op's output has its first input's metadata: share that tuple (an
        # immutable one) rather than make an equal one.
        t = inputs[0] if inputs else None
        meta = None
        if t is not None and (fn := t._grad_fn) is not None:
            try:
                meta = fn.input_metadata[t._output_nr]
            except IndexError:  # a custom Function's node numbers non-tensor outputs too
                pass
            else:
                if meta[0] != out._data.shape or meta[1] is not out.dtype or meta[2] is not out.device:
                    meta = None
        if meta is None:
            meta = (out._data.shape, out.dtype, out.device)  # plain: see graph.Edge
        node.input_metadata = (meta,)
    else:
        meta = []
        for i, out in enumerate(outputs):
            _move_retains_grad(out, node, i)
            out.grad_fn = node
            out._output_nr = i
            meta.append((out._data.shape, out.dtype, out.device))
        node.input_metadata = tuple(meta)
    if saved_hooks:
        _saved_variable._hooks.flush_recorded(saved)  # pack hooks now, in torch's order
    if anomaly.enabled or graph._ENGINE.probe is not None:
        node_created(node)
        probe = graph._ENGINE.probe
        if probe is not None:  # the forward side (gradviz why): node.source is the user's line now
            probe.forward_op(node, inputs, outputs)
    if dual_inputs is not None:
        _FORWARD.propagate_after(cls, dual_inputs, outputs, saved)


# -- in-place ops on views: CopySlices -----------------------------------------------------


def _data_ptr(arr: Any) -> int:
    ai = getattr(arr, "__array_interface__", None)
    return ai["data"][0] if ai is not None else arr.data.ptr  # numpy, or cupy


def _byte_offsets(arr: Any, start: int, xp: Any) -> Any:
    """The byte offset of every element of ``arr`` (from ``start``), in arr's shape, made with
    the array module ``xp`` (on arr's device)."""
    offs = xp.full(arr.shape, start, dtype=xp.int64)
    for d, (n, st) in enumerate(zip(arr.shape, arr.strides)):
        shape = [1] * arr.ndim
        shape[d] = n
        offs = offs + (xp.arange(n, dtype=xp.int64) * st).reshape(shape)
    return offs


def view_index(view: Tensor, base: Tensor) -> Any:
    """For each element of ``view``, the C-order flat index of the element of ``base`` it shares
    memory with (view and base from the same storage): the view's geometry, whatever chain of
    view ops made it (torch keeps sizes, strides and storage offset for the same purpose).

    Made on the base's device, as the gradients it indexes are there (cupy would copy a host
    index array to the device at every use)."""
    import numpy as np

    from gradviz.device import array_module

    b = base._data
    xp = array_module(base.device)
    view_offs = _byte_offsets(view._data, _data_ptr(view._data) - _data_ptr(b), xp)
    if b.flags["C_CONTIGUOUS"]:
        # The base's element i is at byte i * itemsize: no search needed.
        return view_offs // b.itemsize
    base_offs = _byte_offsets(b, 0, xp).reshape(-1)
    # numpy's own functions on the device arrays (their protocols hand them to cupy); a stable
    # sort only matters for a base that overlaps itself, which numpy alone can make
    order = np.argsort(base_offs, kind="stable") if xp is np else np.argsort(base_offs)
    pos = np.searchsorted(base_offs[order], view_offs)
    return order[pos]


class CopySlices(Node):
    """torch's CopySlices: the base's new history after an in-place op on one of its views. It
    runs the op's node (``fn``) on the view's part of the gradient and puts the result back."""

    __slots__ = ("fn", "index", "base_shape")
    _namespace = "torch::autograd::"

    def __init__(self, base: Tensor, index: Any, fn: OpNode) -> None:
        # Edges: the base's history before the op, then the op's other inputs.
        super().__init__([gradient_edge(base)] + list(fn.next_edges[1:]))
        self.fn = fn
        self.index = index
        self.base_shape = tuple(base.shape)
        self.input_metadata = [InputMetadata(base._data.shape, base.dtype, base.device)]

    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        from gradviz.ops import functions as F

        g = grads[0]
        if g is None:
            return [None] * len(self.next_edges)
        flat = F.reshape(g, (-1,))
        grad_slice = F.getitem_raw(flat, (self.index,), "index")
        # fn's first edge (the view's old history) is outside this task's graph: it is needed
        # when this node's first edge is (torch copies the exec_info entry across).
        needed = needed_outputs(self.next_edges)
        res = self.fn.apply_needed([F.clone(grad_slice)], needed[:1] + needed[1:])
        out: list[Tensor | None] = [None] * len(self.next_edges)
        if needed[0]:
            # The gradient with the view's part replaced by what fn gives the view's old value.
            keep = F.ones_for(flat)
            keep._data[self.index.reshape(-1)] = 0
            part = res[0] if res[0] is not None else F.zeros_for(grad_slice.shape, g.dtype, g.device)
            put = F.index_backward(part, flat.shape, (self.index,), "index")
            out[0] = F.reshape(F.add(F.mul(flat, keep), put), self.base_shape)
        out[1:] = res[1:]
        return out

    def release_variables(self) -> int:
        return self.fn.release_variables()

    def saved_shapes(self) -> list[tuple[int, ...]]:
        return self.fn.saved_shapes()


def rebase_history(view: Tensor, fn: OpNode) -> None:
    """After an in-place op recorded ``fn`` on ``view``: the base takes a CopySlices wrapping fn,
    and the view's grad_fn becomes an AsStridedBackward0 of the base (made at once, as torch's
    rebase_history asks for the view's grad_fn right away)."""
    if fn is FORWARD_ONLY or not _grad_state.grad:
        # only forward AD followed the op (a dual tensor, or no_grad inside a dual level): no
        # history to rewrite (the tangent was updated)
        return
    base = view._base
    cs = CopySlices(base, view_index(view, base), fn)
    _move_retains_grad(base, cs, 0)
    base.grad_fn = cs
    base._output_nr = 0
    node_created(cs)
    view.grad_fn  # noqa: B018 - regenerates the view's history


_MULTI_VIEW = {"SplitBackward0": "Split", "SplitWithSizesBackward0": "SplitWithSizes", "UnbindBackward0": "Unbind"}


def regenerate_view_grad_fn(view: Tensor) -> None:
    """The view's history is stale (its base changed in place): make it AsStridedBackward0 of the
    base's current history."""
    from gradviz.ops._common import NODES

    base = view._base
    view._view_version = view._version_counter[0]
    old = view._grad_fn
    if old is None and not base.requires_grad:
        return
    if old is not None and type(old).__name__ in _MULTI_VIEW:
        raise RuntimeError(
            f"Output {view._output_nr} of {_MULTI_VIEW[type(old).__name__]} is a view and its base or another view "
            "of its base has been modified inplace. This view is the output of a function that returns multiple "
            "views. Such functions do not allow the output views to be modified inplace. You should replace the "
            "inplace operation by an out-of-place one."
        )
    saved = {"base_shape": tuple(base.shape), "index": view_index(view, base)}
    record(NODES["as_strided"], (base,), [view], saved)
