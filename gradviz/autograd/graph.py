"""The backward graph: Node, Edge, AccumulateGrad, GraphRoot (SavedVariable: saved_variable.py).

A Node is one backward function. Its ``next_edges`` hold one Edge per forward input: the node
that will receive the gradient of that input and which of its inputs (InputBuffer slots) it
feeds. An Edge whose function is None stands for an input that needs no gradient, so
``next_functions`` shows ``(None, 0)`` there, as torch does.
"""

from __future__ import annotations

import itertools
import sys
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from gradviz._code_positions import columns
from gradviz._sparse_coo import SparseCOO
from gradviz.autograd import _state
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import anomaly

if TYPE_CHECKING:
    from gradviz.tensor import Tensor

# AccumulateGrad nodes get the largest sequence number so that, among ready nodes, they run as
# soon as possible and free their gradients early (torch uses UINT64_MAX the same way).
MAX_SEQUENCE_NR = 2**64 - 1

_node_ids = itertools.count(1)

# Set by gradviz.autograd.engine on import: graph construction reports to the engine's probe.
_ENGINE: Any = None


class _SequenceCounter(threading.local):
    """Per-thread creation counter, as torch's at::sequence_number."""

    def __init__(self) -> None:
        self.count = itertools.count()
        # The count's __next__, bound once per thread: taking a number is one thread-local read
        # and a call (a read and a write of a thread-local int cost twice that).
        self.take = self.count.__next__


_sequence = _SequenceCounter()


def next_sequence_nr() -> int:
    return _sequence.take()


def peek_sequence_nr() -> int:
    """The number the next node made on this thread will get (without taking it)."""
    return int(repr(_sequence.count)[len("count(") : -1])


class Edge(NamedTuple):
    """Where a gradient goes: ``function``'s input number ``input_nr``."""

    function: Node | None
    input_nr: int

    def is_valid(self) -> bool:
        return self.function is not None


# An input that needs no gradient: a plain tuple, as graph building stores (see below).
NO_EDGE: Any = (None, 0)

# The NamedTuple constructor is a Python-level __new__ (0.19 us); where an Edge or InputMetadata
# is made (roots, views, custom Functions) it is made with the tuple constructor (0.09 us).
_tuple_new = tuple.__new__

# Graph building (ops' record, collect_next_edges, AccumulateGrad) stores plain tuples, the
# same fields in the same order, in next_edges and input_metadata: Python 3.11 unpacks and
# indexes an exact tuple at its fast path, a NamedTuple (a tuple subclass) through the generic
# one (unpacking one makes an iterator: 31 ns against 7), and the engine does both for every
# edge of every node. Code reading them indexes or unpacks: [0] function, [1] input_nr;
# [0] shape, [1] dtype, [2] device.


def make_edge(function: Node | None, input_nr: int) -> Edge:
    return _tuple_new(Edge, (function, input_nr))


class InputMetadata(NamedTuple):
    """What a node expects of the gradient arriving in one InputBuffer slot."""

    shape: tuple[int, ...]
    dtype: Any  # gradviz dtype
    device: Any  # gradviz device


class RemovableHandle:
    """Returned by hook registration; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, container: dict):
        self.id = next(RemovableHandle._ids)
        self._container = container

    def remove(self) -> None:
        self._container.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class Node:
    """A backward function: takes gradients of its forward outputs, returns those of its inputs."""

    # Fields almost every node leaves unset are class-level None; an instance that sets one keeps
    # it in its __dict__ (made only then). Graph building writes five slots per node, not eleven.
    __slots__ = ("_id", "sequence_nr", "topological_nr", "next_edges", "input_metadata", "__dict__", "__weakref__")
    _pre_hooks: dict[int, Callable] | None = None
    _post_hooks: dict[int, Callable] | None = None
    # Tensor hooks registered on this node's inputs: slot -> {handle id: fn}.
    _tensor_pre_hooks: dict[int, dict[int, Callable]] | None = None
    _retains_grad_hooks_: dict[int, Callable] | None = None
    _metadata: dict | None = None
    source: str | None = None
    columns: tuple[int, int] | None = None  # the op's columns on source's line (_code_positions)
    # True once any of the hook fields above was set: the engine tests this one field per node.
    _hooked = False
    # True where apply always returns a new list that nothing else holds: validate_outputs then
    # keeps it, and the engine clears its entries as it hands them on.
    _fresh_outputs = False
    # True where apply runs no user code (no Python hook, no custom backward that could start a
    # reentrant backward or write into its input): the recorder may reuse a gradient's summary.
    _defer_safe = False

    @property
    def _retains_grad_hooks(self) -> dict[int, Callable] | None:
        """retain_grad() of a non-leaf: slot -> fn. Runs after all tensor pre-hooks."""
        return self._retains_grad_hooks_

    @_retains_grad_hooks.setter
    def _retains_grad_hooks(self, value: dict[int, Callable] | None) -> None:
        # Set from ops and Tensor.retain_grad: a property, so that _hooked follows.
        self._retains_grad_hooks_ = value
        self._hooked = True

    def __init__(self, next_edges: list[Edge] | None = None, sequence_nr: int | None = None):
        self._id = next(_node_ids)
        self.sequence_nr = next_sequence_nr() if sequence_nr is None else sequence_nr
        self.input_metadata: list[InputMetadata] = []
        self.set_next_edges(next_edges if next_edges is not None else [])

    def set_next_edges(self, edges: list[Edge]) -> None:
        self.next_edges = edges
        topo = 0
        for e in edges:
            fn = e[0]
            if fn is not None:
                t = fn.topological_nr
                if t >= topo:
                    topo = t + 1
        self.topological_nr = topo

    # torch's C++-defined nodes (AccumulateGrad, GraphRoot, CopySlices, Error) give name() with
    # their namespace; generated ones (MulBackward0) without. Traces keep the class name.
    _namespace = ""

    # -- torch's Python-facing API
    def name(self) -> str:
        return self._namespace + type(self).__name__

    def _sequence_nr(self) -> int:
        return self.sequence_nr

    def _topological_nr(self) -> int:
        return self.topological_nr

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        return tuple((e[0], e[1]) for e in self.next_edges)

    @property
    def num_inputs(self) -> int:
        return len(self.input_metadata)

    @property
    def num_outputs(self) -> int:
        return len(self.next_edges)

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def device(self) -> str:
        """Device of the first input's metadata (cpu for nodes without inputs)."""
        return str(self.input_metadata[0][2]) if self.input_metadata else "cpu"

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Post-hook ``fn(grad_inputs, grad_outputs)``; may return replacement grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
            self._hooked = True
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Pre-hook ``fn(grad_outputs)``; may return replacement grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
            self._hooked = True
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def _register_tensor_pre_hook(self, slot: int, fn: Callable) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
            self._hooked = True
        hooks = self._tensor_pre_hooks.setdefault(slot, {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    # -- what subclasses provide
    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        raise NotImplementedError(f"{self.name()} has no backward")

    def _apply_all(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        """apply, called by the engine where every input with an edge needs its gradient (no
        grad()/inputs= pruning in the running task): a node may skip looking that up."""
        return self.apply(grads)

    def release_variables(self) -> int:
        """Free saved tensors; returns how many were released."""
        return 0

    def saved_shapes(self) -> list[tuple[int, ...]]:
        return []

    def __call__(self, *grads: Tensor | None) -> Any:
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return f"<{self.name()} seq={self.sequence_nr} topo={self.topological_nr}>"


class GraphRoot(Node):
    """Starts a backward with several roots: it 'returns' the given root gradients."""

    __slots__ = ("outputs",)
    _namespace = "torch::autograd::"
    _fresh_outputs = True

    def __init__(self, roots: list[Edge], grads: list[Tensor | None]):
        super().__init__(list(roots))
        self.outputs = list(grads)

    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        return list(self.outputs)


class Identity(Node):
    """Stands in for an input unreachable from the graph (torch's NOTE: Autograd Unreachable Input)."""

    __slots__ = ()
    _fresh_outputs = True

    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        return list(grads)


class AccumulateGrad(Node):
    """Adds the incoming gradient into a leaf's ``.grad``. One per leaf, shared by every use."""

    __slots__ = ("variable", "lock")
    _namespace = "torch::autograd::"
    _fresh_outputs = True
    _defer_safe = True

    def __init__(self, variable: Tensor):
        _init_accumulator(self, variable)

    # A leaf's hooks live on the leaf (torch keeps them in its autograd meta), not on this node:
    # the tensor holds its accumulator weakly, so one registered before any op used the leaf, or
    # after its last graph was freed, must still run from the accumulator made later.
    @property
    def _tensor_pre_hooks(self) -> dict[int, dict[int, Callable]] | None:
        hooks = self.variable._hooks
        return {0: hooks} if hooks else None

    def _register_tensor_pre_hook(self, slot: int, fn: Callable) -> RemovableHandle:
        var = self.variable
        if var._hooks is None:
            var._hooks = {}
        self._hooked = True
        handle = RemovableHandle(var._hooks)
        var._hooks[handle.id] = fn
        return handle

    @property
    def device(self) -> str:
        return str(self.variable.device)

    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        if len(grads) != 1:
            raise RuntimeError(f"AccumulateGrad: expected 1 input, got {len(grads)}")
        new_grad = grads[0]
        var = self.variable
        # _requires_grad first: the property's view and grad_fn tests only when it is off.
        if new_grad is None or not (var._requires_grad or var.requires_grad):
            return []
        probe = _ENGINE.probe
        grad_enabled = _grad_state.enabled
        lock = self.lock
        lock.acquire()  # and release() in the finally: `with`'s locking, without its method calls
        try:
            old = var.grad
            if old is None:
                # The user owns .grad and may change it in place: it may alias the incoming
                # gradient only when nothing else can see that (torch steals it when its use
                # count allows); otherwise a copy.
                if grad_enabled:
                    result = _clone_obey_contract(new_grad, var)
                elif _getrefcount(new_grad) <= _ENGINE_GRAD_REFS and (
                    type(d := new_grad._data) is np.ndarray
                    and _getrefcount(d) <= 3  # new_grad's field, d, the argument
                    and (d.base is None or _sole_view(new_grad, d))
                    and (flags := d.flags).c_contiguous
                    and flags.writeable
                    and ((vdt := (vd := var._data).dtype) is (dt := d.dtype) or vdt == dt)
                    and vd.shape == d.shape
                    and ((vdev := var.device) is (gdev := new_grad.device) or vdev == gdev)
                ):
                    # stealable(new_grad, var) inline, its checks ordered for this case (one flags
                    # object, dtypes by identity first: numpy's dtype == is a rich comparison; six
                    # parameters a training step, a call each less), then new_grad.detach()
                    # without the method call.
                    result = _wrap_tensor(d, new_grad.dtype, gdev)
                    result._version_counter = new_grad._version_counter
                else:
                    result = new_grad.detach().clone()
                d = vd = None
                mode = "set"
            elif not grad_enabled and (type(od := old._data) is not SparseCOO
                                       and type(nd := new_grad._data) is not SparseCOO):
                od += nd if nd.dtype is od.dtype else nd.astype(od.dtype, copy=False)
                old._version_counter[0] += 1
                result, mode = old, "accumulate"
            elif type(old._data) is SparseCOO and type(new_grad._data) is not SparseCOO:
                result, mode = new_grad + old, "replace"  # dense + sparse, as torch accumulates it
            else:
                result, mode = old + new_grad, "replace"
            if probe is None:
                var.grad = result
            else:
                before = old.detach().clone() if old is not None else None
                var.grad = result
                probe.accumulate_grad(_state.tls.current_graph_task, self, var, before, result, mode)
        finally:
            lock.release()
        if var._post_accumulate_grad_hooks:  # after .grad is set, outside the lock (a hook may run backward)
            _hooks.call_post_accumulate_grad_hooks(self, var, probe)
        return []

    _apply_all = apply


# gradviz.autograd.graph_hooks, set when it is imported (it imports this module): AccumulateGrad
# runs the post-accumulate-grad hooks through it.
_hooks: Any = None


_getrefcount = sys.getrefcount
# Set by gradviz.tensor on import (it imports this module): the fast Tensor constructor.
_wrap_tensor: Any = None

# References to a gradient that AccumulateGrad.apply receives from the engine and nothing else
# holds: the InputBuffer's list (passed to apply as is), apply's local, getrefcount's argument.
_ENGINE_GRAD_REFS = 3


def _clone_obey_contract(new_grad: Tensor, var: Tensor) -> Tensor:
    """torch's clone_obey_contract, for a first gradient stored with grad mode on (create_graph):
    into a new tensor laid out as the variable (new_empty_strided + copy_: CopyBackwards) when the
    variable is dense, else a contiguous clone (CloneBackward0)."""
    vd, gd = var._data, new_grad._data
    if type(gd) is SparseCOO or type(vd) is SparseCOO or not _dense(vd):
        return new_grad.clone()
    empty = _wrap_tensor(np.empty_like(vd, dtype=gd.dtype), new_grad.dtype, new_grad.device)
    return empty.copy_(new_grad)


def _dense(a: Any) -> bool:
    """torch's is_non_overlapping_and_dense: the elements fill their memory exactly once, in
    some order of the dims (a transposed or permuted array is; a strided slice is not)."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    expected = a.itemsize
    dims = sorted(((st, d) for d, st in zip(a.shape, a.strides, strict=True) if d != 1))
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True


def _sole_view(grad: Tensor, d: np.ndarray) -> bool:
    """Whether ``grad``'s array ``d``, a numpy view, is the only live way into all of its base's
    memory: a gradient that a backward formula hands on transposed or reshaped (Linear's weight
    gradient leaves TBackward0 as a view of the product) is then as much its own as a fresh
    array, and torch steals it too (it counts uses of the tensor, not of its storage). The one
    other holder allowed is grad's own base tensor, when nothing but grad holds it: it dies with
    grad. The caller has checked that d is C-contiguous and held by nothing but grad."""
    b = d.base
    if type(b) is not np.ndarray or b.base is not None or b.nbytes != d.nbytes:
        return False
    holders = 3  # d.base, b, getrefcount's argument
    t = grad._base
    if t is not None:
        # t: grad's field, t, the argument; its array: t's field, td, the argument
        if t._base is not None or _getrefcount(t) > 3:
            return False
        td = t._data
        if td is b:
            holders += 2  # t's field and td
        elif td.base is b and _getrefcount(td) <= 3:
            holders += 1  # td.base
        else:
            return False
    return _getrefcount(b) <= holders


def stealable(grad: Tensor, like: Tensor | None = None) -> bool:
    """Whether grad's array is its own: no other tensor or array shares its memory (a numpy view
    holds a reference to its base, so a refcount of two, the tensor's and ours, says none does).
    The caller has checked that no one else holds the Tensor object itself."""
    d = grad._data
    if type(d) is not np.ndarray or sys.getrefcount(d) > 3:
        return False
    if not (d.flags.c_contiguous and d.flags.writeable):
        return False
    if d.base is not None and not _sole_view(grad, d):
        return False
    if like is not None:
        ld = like._data
        return ld.dtype == d.dtype and ld.shape == d.shape and like.device == grad.device
    return True


# -- building the graph -----------------------------------------------------------------

_PKG_DIR = __file__.rsplit("/autograd/", 1)[0]


# The user's call sites, (id(code), f_lasti) -> (code, ("file:line", columns)): a recorded
# forward asks once an op, and f_lineno (a line table walk), the columns and the string cost more
# than the lookup. The code object is kept with its site so that an id reused by another code
# object never matches (and it stays alive while cached); emptied past _SOURCES_MAX sites (code
# made in a loop).
_SOURCES: dict[tuple[int, int], tuple[Any, tuple[str, tuple[int, int] | None]]] = {}
_SOURCES_MAX = 4096
_NO_SITE: tuple[None, None] = (None, None)


def user_site() -> tuple[str | None, tuple[int, int] | None]:
    """(file:line, the op's columns on it) of the innermost frame outside the gradviz package:
    the user's op call (``_code_positions.columns``)."""
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            key = (id(code), f.f_lasti)
            hit = _SOURCES.get(key)
            if hit is not None and hit[0] is code:
                return hit[1]
            if len(_SOURCES) >= _SOURCES_MAX:
                _SOURCES.clear()
            site = (f"{code.co_filename}:{f.f_lineno}", columns(code, f.f_lasti))
            _SOURCES[key] = (code, site)
            return site
        f = f.f_back
    return _NO_SITE


# The user's script when a runner (``gradviz run``: click, the CLI, runpy) launched it: the forward
# stack shown starts at the script's first frame, as the runner's frames are not the user's.
script_entry: str | None = None


def forward_traceback() -> str:
    """The forward stack, for anomaly mode, without gradviz's own frames."""
    frames = [fs for fs in traceback.extract_stack()[:-1] if not fs.filename.startswith(_PKG_DIR)]
    if script_entry is not None:
        import os

        first = next((i for i, fs in enumerate(frames) if os.path.abspath(fs.filename) == script_entry), 0)
        frames = frames[first:]
    return "".join(traceback.format_list(frames))


_new_accumulator = object.__new__
_allocate_lock = threading.Lock


def _init_accumulator(acc: AccumulateGrad, variable: Tensor) -> None:
    """AccumulateGrad's fields without Node.__init__'s generic path: one is made per leaf per
    forward (the graph dies with each step, as torch's), so its cost is paid per parameter."""
    acc._id = next(_node_ids)
    acc.sequence_nr = MAX_SEQUENCE_NR
    acc.next_edges = []
    acc.topological_nr = 0
    acc.variable = variable
    # Held while .grad is read and written: several graph tasks (threads) may share a leaf.
    acc.lock = _allocate_lock()
    acc.input_metadata = [(variable._data.shape, variable.dtype, variable.device)]  # plain (see Edge)
    if variable._hooks:
        acc._hooked = True


# _accumulator_lock protects: every leaf's _grad_accumulator (read, made, stored). Two threads
# building graphs over one leaf must get the same AccumulateGrad, or their gradients would be
# summed under two different locks and one update could be lost (torch takes the leaf's
# autograd_meta mutex here for the same reason).
_accumulator_lock = threading.Lock()


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, made on first use and held weakly by the tensor (as torch)."""
    ref = t._grad_accumulator
    acc = ref() if ref is not None else None
    if acc is not None:
        return acc
    made = False
    with _accumulator_lock:
        ref = t._grad_accumulator
        acc = ref() if ref is not None else None
        if acc is None:
            acc = _new_accumulator(AccumulateGrad)
            _init_accumulator(acc, t)
            t._grad_accumulator = weakref.ref(acc)
            made = True
    if made:
        probe = _ENGINE.probe
        if probe is not None:
            acc.source, acc.columns = user_site()
            probe.node_created(acc)
    return acc


def gradient_edge(t: Tensor) -> Edge:
    """Where t's gradient goes: its grad_fn's slot, or its AccumulateGrad if it is a leaf
    (NO_EDGE, a plain tuple, for a tensor that needs no gradient)."""
    fn = t.grad_fn
    if fn is not None:
        return _tuple_new(Edge, (fn, t._output_nr))
    if t._requires_grad:
        return _tuple_new(Edge, (grad_accumulator(t), 0))
    return NO_EDGE


def collect_next_edges(tensors: tuple) -> list[Edge]:
    edges = []
    for t in tensors:
        if t is None:
            edges.append(NO_EDGE)
        elif t._base is None:
            # Not a view: grad_fn and requires_grad are the plain fields (no history to regenerate).
            fn = t._grad_fn
            if fn is not None:
                edges.append((fn, t._output_nr))  # plain (see Edge)
            elif t._requires_grad:
                edges.append((grad_accumulator(t), 0))
            else:
                edges.append(NO_EDGE)
        else:
            edges.append(gradient_edge(t) if t.requires_grad else NO_EDGE)
    return edges


def new_node(cls: type[Node], next_edges: list[Edge], sequence_nr: int) -> Any:
    """A node of ``cls`` (a Node subclass whose __init__ adds nothing) without the __init__ call:
    graph building's hot path. input_metadata is left for the caller to set."""
    node = cls.__new__(cls)
    node._id = next(_node_ids)
    node.sequence_nr = sequence_nr
    node.next_edges = next_edges
    topo = 0
    for e in next_edges:
        fn = e[0]
        if fn is not None:
            t = fn.topological_nr
            if t >= topo:
                topo = t + 1
    node.topological_nr = topo
    return node


def node_created(node: Node) -> None:
    """Report a finished node: the probe (when recording) and anomaly mode's forward trace."""
    if anomaly.enabled:
        node.metadata["traceback_"] = forward_traceback()
    probe = _ENGINE.probe
    if probe is not None:
        node.source, node.columns = user_site()
        probe.node_created(node)


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)


# -- torch.autograd.graph's GradientEdge, get_gradient_edge, increment_version -------------------


class GradientEdge(NamedTuple):
    """torch.autograd.graph.GradientEdge: a node and one of its inputs' slots."""

    node: Node
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge a tensor's gradient flows along: its grad_fn's slot, or its AccumulateGrad."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    node, nr = gradient_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor: Tensor | Any) -> None:
    """Bump the version counter(s), as an in-place change made outside autograd's sight should."""
    for t in tensor if isinstance(tensor, (list, tuple)) else (tensor,):
        t._version_counter[0] += 1
