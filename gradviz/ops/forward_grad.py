"""Forward-mode AD through the ops: each op's output tangent, from its row's forward column.

``record`` hands every op with a dual input here while a dual level holds tangents. The row's
forward formula gets the inputs' tangents and the saved values (read as the backward formulas
read them, but as the tensors themselves, not unpacked copies); ``AUTO_ELEMENT_WISE`` rows sum
their backward formulas applied to the tangents, as torch's derivatives.yaml marker does.
Formulas run with propagation off: their ops compute with the primals and make no tangents of
their own, so a tangent is never itself dual. For an op on tensors only forward AD follows they
run at once, without building a graph, and the op makes no node; where an input requires grad
they run after ``record`` made the node, with grad mode on, so that the tangent is
differentiable (reverse over forward: jacrev(jacfwd(f))).

An op's output tangent is a new tensor, except for an in-place op on a tensor that had one:
its tangent is written in place, so views of that tangent (the tangents of the tensor's views)
see the change, as torch's do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd import grad as _autograd_grad
from gradviz.autograd.forward_state import FORWARD_ONLY, STATE, track
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import enable_grad
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops import _common
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_ELEMENT_WISE, AUTO_REDUCTION, AUTO_TRANSPOSE, Derivative, OpNode, node_class, record
from gradviz.tensor import Tensor

# torch's message for an op without a forward formula (its NotImplementedError)
_UNSUPPORTED = (
    "Trying to use forward AD with {} that does not support it because it has not been implemented yet.\n"
    "Please file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml "
    "so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml"
)


def _strip(inputs: tuple) -> tuple | None:
    """inputs with those only forward AD follows taken out (they get no edge), or None when no
    input requires grad for reverse mode (the op then makes no node)."""
    real = False
    out = None
    for i, t in enumerate(inputs):
        if t is None:
            continue
        if t._grad_fn is FORWARD_ONLY:
            if out is None:
                out = list(inputs)
            out[i] = None
        elif not real and t.requires_grad:
            real = True
    if not real:
        return None
    return inputs if out is None else tuple(out)


def _saved_tensor(v: SavedVariable, outputs: list[Tensor]) -> Tensor:
    """A saved tensor as the forward formula reads it: the output itself for a saved output (its
    alias in the SavedVariable has no tangent and no history), else the tensor saved."""
    t = v.tensor
    if t is None:
        return v.unpack()  # packed by saved_tensors_hooks
    if v.is_output:
        for o in outputs:
            if o._data is t._data:
                return o
    return t


def _formula_getitem(self: OpNode, key: str) -> Any:
    v = self.saved[key]
    if type(v) is SavedVariable:
        return _saved_tensor(v, self._fw_outputs)
    if type(v) is list and v and type(v[0]) is SavedVariable:
        return [_saved_tensor(s, self._fw_outputs) for s in v]
    return v


_FORMULA_CLASSES: dict[type, type] = {}


def _formula_node(cls: type[OpNode], saved: dict, inputs: tuple, outputs: list[Tensor], tangents: list) -> OpNode:
    """A node of the row's class, never part of a graph, that the formulas read saved values from."""
    sub = _FORMULA_CLASSES.get(cls)
    if sub is None:
        sub = type(cls.__name__, (cls,), {"__slots__": (), "__getitem__": _formula_getitem})
        _FORMULA_CLASSES[cls] = sub
    node = object.__new__(sub)
    node.saved = saved
    node.shapes = None
    # an edge where an input has a tangent: formulas compute the gradients their edges ask for
    node.next_edges = [(None, 0) if t is None else (FORWARD_ONLY, 0) for t in tangents]
    node._fw_outputs = outputs
    node._fw_inputs = inputs
    return node


def _op_name(d: Derivative) -> str:
    for key, row in _common.DERIVATIVES.items():
        if row is d:
            return key
    return d.name


def _elementwise(d: Derivative, node: OpNode, tangents: list, out: Tensor) -> Tensor | None:
    acc = None
    for i, t in enumerate(tangents):
        f = d.grads[i] if i < len(d.grads) else None
        if t is None or f is None:
            continue
        part = f(node, t)
        if part is None:
            continue
        acc = part if acc is None else F.add(acc, part)
    return acc


def _reduction(d: Derivative, node: OpNode, tangents: list, outputs: list[Tensor]) -> list[Tensor | None]:
    res: list[Tensor | None] = []
    for k, out in enumerate(outputs):
        ones = F.ones_like(out)
        g: Any = [ones if j == k else None for j in range(len(outputs))] if d.multi_output else ones
        acc = None
        for i, t in enumerate(tangents):
            f = d.grads[i] if i < len(d.grads) else None
            if t is None or f is None:
                continue
            w = f(node, g)
            if w is None:
                continue
            part = F.mul(t, w)
            if part._data.shape != out._data.shape:
                dim = node.saved.get("dim")
                part = F.sum(part) if out.ndim == 0 or dim is None or dim == () else F.sum(part, dim, True)
                part = F.reshape(part, tuple(out._data.shape))
            acc = part if acc is None else F.add(acc, part)
        res.append(acc)
    return res


def _transpose(d: Derivative, node: OpNode, tangents: list, outputs: list[Tensor]) -> list[Tensor | None]:
    try:
        return _transpose_by_grad(d, node, tangents, outputs)
    except NotImplementedError:
        if _grad_state.enabled:
            raise  # a differentiable tangent was asked for: _tangents makes one that refuses
        # The row's backward has no graph of its own (gradviz computes it on arrays only):
        # the same transpose, one output element at a time.
        return _transpose_by_columns(d, node, tangents, outputs)


def _backward_parts(d: Derivative, node: OpNode, tangents: list, g: Any) -> list:
    if d.all_inputs is not None:
        return list(d.all_inputs(node, g))
    return [None if t is None or i >= len(d.grads) or d.grads[i] is None else d.grads[i](node, g)
            for i, t in enumerate(tangents)]


def _transpose_by_grad(d: Derivative, node: OpNode, tangents: list, outputs: list[Tensor]) -> list[Tensor | None]:
    graph = _grad_state.enabled  # the tangent is to be differentiable: the backward builds a graph
    with enable_grad():
        # u's value does not matter (the formulas are linear in it); ones tell a part that does
        # not depend on u (zeros) from one computed without a graph (not zeros)
        us = [F.ones_like(o).requires_grad_(True) if o.dtype.is_floating_point else None for o in outputs]
        parts = _backward_parts(d, node, tangents, us if d.multi_output else us[0])
        total = None
        for t, p in zip(tangents, parts):
            if t is None or p is None:
                continue
            if not p.requires_grad:
                if not np.any(np.asarray(p._data)):
                    continue
                raise NotImplementedError("the backward formula built no graph")
            s = F.sum(F.mul(p, t))
            total = s if total is None else F.add(total, s)
        live = [u for u in us if u is not None]
        if total is None or not live:
            return [None] * len(outputs)
        grads = iter(_autograd_grad([total], live, allow_unused=True, create_graph=graph))
    return [None if u is None else next(grads) for u in us]


class _untracked:  # noqa: N801 - a context manager used like a function
    """Grad mode off and no op recording at all (no_grad alone keeps ops recording inside a dual
    level, for their tangents)."""

    def __enter__(self) -> None:
        self.prev = _grad_state.grad, _grad_state.enabled
        _grad_state.grad = _grad_state.enabled = False

    def __exit__(self, *exc: object) -> None:
        _grad_state.grad, _grad_state.enabled = self.prev


_COLUMNS_LIMIT = 1 << 16  # output elements: beyond, one backward per element is too slow to offer


def _transpose_by_columns(d: Derivative, node: OpNode, tangents: list, outputs: list[Tensor]) -> list[Tensor | None]:
    if sum(o.numel() for o in outputs) > _COLUMNS_LIMIT:
        raise NotImplementedError(_UNSUPPORTED.format(_op_name(d)))
    res: list[Tensor | None] = []
    with _untracked():
        for k, out in enumerate(outputs):
            if not out.dtype.is_floating_point:
                res.append(None)
                continue
            flat = np.zeros(out.numel(), dtype=out._data.dtype)
            for j in range(out.numel()):
                e = np.zeros(out.numel(), dtype=out._data.dtype)
                e[j] = 1
                g = Tensor._wrap(e.reshape(out._data.shape), out.dtype, out.device)
                grads = [g if i == k else None for i in range(len(outputs))] if d.multi_output else g
                for t, p in zip(tangents, _backward_parts(d, node, tangents, grads)):
                    if t is not None and p is not None:
                        flat[j] += float((np.asarray(p._data) * np.asarray(t._data)).sum())
            res.append(Tensor._wrap(flat.reshape(out._data.shape), out.dtype, out.device))
    return res


def _fit(t: Tensor, out: Tensor) -> Tensor:
    """The tangent in the output's shape and dtype (a broadcast input's part is expanded)."""
    if t._data.shape != out._data.shape:
        t = F.contiguous(F.expand(t, tuple(out._data.shape)))
    if t.dtype is not out.dtype and out.dtype.is_floating_point:
        t = F.to_copy(t, out.dtype)
    return t


def _set_tangent(out: Tensor, t: Tensor) -> None:
    old = out._fw_grad
    if old is not None and old is not t and old._data.shape == t._data.shape:
        # an in-place op on a dual tensor: its tangent changes in place (views of it follow)
        old._data[...] = t._data
        old._version_counter[0] += 1
        return
    base = out._base
    if old is None and base is not None and t._base is None and type(out._data) is np.ndarray:
        # a view given a tangent that is no view of another (not a view op's): an in-place write
        aliased = _view_tangent(out, base, t)
        if aliased is not None:
            t = aliased
    out._fw_grad = t
    track(out)


def _view_tangent(view: Tensor, base: Tensor, t: Tensor) -> Tensor | None:
    """A view without a tangent given one (an in-place op wrote a dual value into it): as in
    torch, its base gets a tangent (zeros where none) holding it, and the view's tangent is the
    same view of the base's (so the base's tangent follows later writes through the view)."""
    bt = base._fw_grad
    if bt is None:
        bt = Tensor._wrap(np.zeros_like(base._data, order="C"), base.dtype, base.device)
        base._fw_grad = bt
        track(base)
        if not base.requires_grad and base._grad_fn is None:
            base._grad_fn = FORWARD_ONLY
    bd, b = bt._data, base._data
    if bd.strides != b.strides or bd.dtype != b.dtype or not b.flags["C_CONTIGUOUS"]:
        return None
    offset = view._data.__array_interface__["data"][0] - b.__array_interface__["data"][0]
    data = np.ndarray(view._data.shape, bd.dtype, buffer=bd, offset=offset, strides=view._data.strides)
    data[...] = t._data
    out = Tensor._wrap(data, bt.dtype, bt.device)
    out._version_counter = bt._version_counter
    out._base = bt
    return out


def _saved_outputs_tangent(saved: dict, out: Tensor) -> None:
    """A saved output's alias (the node's copy of it) gets the output's tangent, so a backward
    that unpacks it (forward over reverse: a hessian) computes with the tangent too."""
    for v in saved.values():
        if type(v) is SavedVariable and v.is_output and v.tensor is not None and v.tensor._data is out._data:
            v.tensor._fw_grad = out._fw_grad
            track(v.tensor)


def _run_formula(d: Derivative, fwd: Any, node: OpNode, tangents: list, outputs: list[Tensor]) -> list:
    if fwd is AUTO_ELEMENT_WISE:
        new = [_elementwise(d, node, tangents, outputs[0])]
    elif fwd is AUTO_TRANSPOSE:
        new = _transpose(d, node, tangents, outputs)
    elif fwd is AUTO_REDUCTION:
        new = _reduction(d, node, tangents, outputs)
    else:
        res = fwd(node, tangents, outputs)
        new = list(res) if isinstance(res, (list, tuple)) else [res]
    # a new tensor for each output (an identity formula would hand back the input's)
    return [None if t is None else _fit(F.clone(t) if any(t is x for x in tangents) else t, o)
            for t, o in zip(new, outputs)]


def _refuse(n: OpNode, g: Any) -> Any:
    raise NotImplementedError(f"gradviz: a derivative of the forward-mode tangent of {n['op']} is not implemented")


# The history of a tangent computed without a graph: backward through it refuses (no silent zero).
_NO_TANGENT_GRAPH = node_class(Derivative("NotImplemented", (), all_inputs=_refuse))


def propagate(cls: type[OpNode], inputs: tuple, outputs: list[Tensor], saved: dict | None) -> tuple | None:
    """record's first forward-AD step: the inputs record makes edges for, None for no node (an
    op on tensors only forward AD follows: the outputs' tangents are computed here)."""
    # grad mode off (no_grad inside the level): tangents still, as torch's, but no node
    stripped = _strip(inputs) if _grad_state.grad else None
    if stripped is None and not STATE.computing:
        _tangents(cls, inputs, outputs, saved, False)
    return stripped


def propagate_after(cls: type[OpNode], inputs: tuple, outputs: list[Tensor], saved: dict | None) -> None:
    """record's last forward-AD step for an op that made a node: the outputs' tangents, computed
    with grad mode on, so they are differentiable where the primals require grad."""
    if not STATE.computing:
        _tangents(cls, inputs, outputs, saved, True)


def _tangents(cls: type[OpNode], inputs: tuple, outputs: list[Tensor], saved: dict | None, graph: bool) -> None:
    tangents = [None if t is None else t._fw_grad for t in inputs]
    if all(t is None for t in tangents):
        return
    d = cls.derivative
    fwd = d.forward
    if fwd is None:
        raise NotImplementedError(_UNSUPPORTED.format(_op_name(d)))
    node = _formula_node(cls, saved or {}, inputs, outputs, tangents)
    STATE.computing = True
    # Without a node nothing differentiates the tangent: the formulas build no graph (and
    # formulas whose double backward gradviz lacks still serve).
    grad_was = _grad_state.enabled
    _grad_state.enabled = graph and grad_was
    try:
        try:
            new = _run_formula(d, fwd, node, tangents, outputs)
        except NotImplementedError:
            if not _grad_state.enabled:
                raise
            # The formula has no graph of its own (its derivative is one gradviz lacks): the
            # tangent's values without one, and a node that refuses to differentiate it.
            _grad_state.enabled = False
            new = _run_formula(d, fwd, node, tangents, outputs)
            _grad_state.enabled = True
            for t in new:
                if t is not None:
                    record(_NO_TANGENT_GRAPH, tuple(x for x in inputs if x is not None), [t], {"op": d.name})
    finally:
        STATE.computing = False
        _grad_state.enabled = grad_was
    for o, t in zip(outputs, new):
        if t is None:
            continue
        _set_tangent(o, t)
        if saved:
            _saved_outputs_tangent(saved, o)
        if not graph and o._grad_fn is None:
            o._grad_fn = FORWARD_ONLY


STATE.propagate = propagate
STATE.propagate_after = propagate_after
