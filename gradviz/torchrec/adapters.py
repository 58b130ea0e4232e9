"""torch's autograd objects as the Probe knows gradviz's: nodes, leaves, ready queues, node tasks.

The recorder (gradviz.trace.recorder.Recorder) reads a node's ``_id``, ``name()``,
``sequence_nr``, ``topological_nr``, ``next_edges``, ``input_metadata``, ``device``,
``saved_shapes()``, ``source`` and, for an AccumulateGrad, ``variable`` (a leaf: ``_id``,
``name``, ``shape``, ``dtype``, ``device``). A ``TorchNode`` carries these, read once from
torch's node when a backward call first reaches it, and holds torch's node (``fn``) only while
that call runs: torch's graph is alive then anyway, and a node held longer would keep its
saved activations. The engine's own ``compute_dependencies`` and ``GraphTask.init_to_execute``
run over these adapters, so torch's dependency counts and exec_info come from the one copy of
torch's rules.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import torch

_PREFIX = "torch::autograd::"
_NAMES: dict[type, str] = {}  # a node class -> its name, where the class is named after the node
_NONES = tuple((None,) * n for n in range(64))  # input_metadata of n inputs
_DEVICES: dict[Any, str] = {}  # torch.device -> its name
_BackwardCFunction = torch.autograd.function.BackwardCFunction  # a custom Function's node
ACCUMULATE_SEQ = (1 << 64) - 1  # AccumulateGrad's sequence number, always (torch's UINT64_MAX)


def node_name(node: Any) -> str:
    """torch's name without the C++ namespace ("torch::autograd::AccumulateGrad" ->
    "AccumulateGrad"), as gradviz's engine names its nodes."""
    n = node.name()
    return n[len(_PREFIX):] if n.startswith(_PREFIX) else n


def short_name(fn: Any) -> str:
    """node_name(fn), known by fn's class where the class is named after the node (torch has one
    class for every C++ node it has no class of its own for: those are asked)."""
    cls = type(fn)
    name = _NAMES.get(cls)
    if name is None:
        name = node_name(fn)
        if cls.__name__ == name:
            _NAMES[cls] = name
    return name


_FULL_NAMES: dict[type, str] = {}  # a node class -> name(), where the class is named so


def full_name(fn: Any) -> str:
    """fn.name(), known by fn's class where the class is named after the node."""
    cls = type(fn)
    name = _FULL_NAMES.get(cls)
    if name is None:
        name = fn.name()
        if cls.__name__ == name:
            _FULL_NAMES[cls] = name
    return name


_DTYPES: dict[Any, str] = {}


def dtype_name(d: torch.dtype) -> str:
    name = _DTYPES.get(d)
    if name is None:
        name = _DTYPES[d] = str(d).removeprefix("torch.")
    return name


def device_name(d: torch.device) -> str:
    name = _DEVICES.get(d)
    if name is None:
        name = _DEVICES[d] = str(d)
    return name


class LeafTensor:
    """A leaf tensor as the trace names it (its AccumulateGrad's ``variable``), holding no tensor."""

    __slots__ = ("_id", "name", "shape", "dtype", "device", "stats_row")

    def __init__(self, tid: int, name: str | None, t: torch.Tensor, stats_row: Any = None):
        self._id, self.name = tid, name
        self.shape, self.dtype, self.device = tuple(t.shape), dtype_name(t.dtype), str(t.device)
        self.stats_row = stats_row  # its values when it joined a graph (None: a tensor without storage)


class TorchNode:
    """A torch node with the Probe's node attributes (see the module's docstring)."""

    __slots__ = ("fn", "_id", "_name", "sequence_nr", "topological_nr", "next_edges", "input_metadata", "device",
                 "source", "columns", "_saved", "_defer_safe")
    # The recorder's node_begin hands what came before to the OS when user code runs next (a
    # custom Function's backward: _defer_safe False), so a crash there keeps every earlier step.
    _hooked = False

    def __init__(self, fn: Any, nid: int, site: tuple[str | None, tuple[int, int] | None]):
        self.fn = fn
        self._id = nid
        self._name = short_name(fn)
        self.sequence_nr = fn._sequence_nr()
        self.topological_nr = 0
        self.next_edges: tuple[tuple[Any, int], ...] = ()
        meta = getattr(fn, "_input_metadata", None)
        # the recorder and the engine's rules read only how many inputs a node has: a shared
        # tuple of that length (torch's metadata objects, one tuple a node, kept the GC busy)
        n = len(meta) if meta is not None else 1
        self.input_metadata: tuple = _NONES[n] if n < len(_NONES) else (None,) * n
        self.device = device_name(meta[0].device) if meta else "cpu"
        self.source, self.columns = site  # the user's line, the op's columns on it
        self._saved: tuple[tuple[int, ...], ...] | None = None
        self._defer_safe = not isinstance(fn, _BackwardCFunction)

    def name(self) -> str:
        return self._name

    def saved_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Shapes of the tensors torch's node saved for backward (its ``_saved_*`` tensors),
        read when the node is announced; empty once released (torch raises on access then)."""
        if self._saved is None:
            self._saved = saved_shapes(self.fn) if self.fn is not None else ()
        return self._saved

    def __repr__(self) -> str:
        return f"<{self._name} #{self._id}>"


class TorchLeafNode(TorchNode):
    """An AccumulateGrad: its ``variable`` is the leaf's LeafTensor."""

    __slots__ = ("variable", "leaf")

    def __init__(self, fn: Any, nid: int, variable: LeafTensor, leaf: torch.Tensor):
        super().__init__(fn, nid, (None, None))
        self.sequence_nr = ACCUMULATE_SEQ
        self.variable = variable
        self.leaf = leaf  # the tensor itself, while the call runs (its .grad is read)
        self.device = device_name(leaf.device)


class RootNode(TorchNode):
    """torch's GraphRoot for several roots, which Python never sees: its edges are the roots."""

    __slots__ = ()

    def __init__(self, nid: int, edges: tuple[tuple[Any, int], ...], seq: int):
        self.fn = None
        self._id, self._name, self.sequence_nr = nid, "GraphRoot", seq
        self.next_edges = edges
        self.topological_nr = 1 + max((n.topological_nr for n, _ in edges if n is not None), default=-1)
        self.input_metadata, self.device, self.source, self.columns, self._saved = (), "cpu", None, None, ()
        self._defer_safe = True


class StandInLeaf:
    """A leaf's AccumulateGrad when no walked graph holds it (a leaf as root, an input grad()
    cannot reach). Python reaches the real node only through get_gradient_edge, whose view_as
    takes a sequence number from the thread's counter and so would shift every later node's
    (recording must leave no trace); torch's engine makes it without. The tensor's own hooks
    stand in for the node's: register_hook runs as the node starts, the post-accumulate hook as
    it ends."""

    next_functions: tuple[Any, ...] = ()
    _input_metadata = None

    def __init__(self, leaf: torch.Tensor):
        self.variable = leaf

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def _sequence_nr(self) -> int:
        return ACCUMULATE_SEQ

    def register_prehook(self, fn: Any) -> Any:
        return self.variable.register_hook(lambda grad: fn((grad,)))

    def register_hook(self, fn: Any) -> Any:
        return self.variable.register_post_accumulate_grad_hook(lambda t: fn((), ()))


class TorchQueue:
    """A ready queue of torch's engine as the recorder infers it: the calling thread's CPU
    queue, or a device's (torch: one worker thread per device)."""

    __slots__ = ("id", "device", "name", "owner", "items")

    def __init__(self, qid: int, device: str, name: str, owner: int | None):
        self.id, self.device, self.name, self.owner = qid, device, name, owner
        self.items: list[tuple[tuple[int, int, int], int, TorchNode]] = []  # (priority, task id, node)


class NodeTask:
    """What queue_push/queue_pop are told about: a node of a task."""

    __slots__ = ("fn", "reentrant_depth", "task_id")
    is_shutdown = False

    def __init__(self, fn: TorchNode, depth: int, task_id: int):
        self.fn, self.reentrant_depth, self.task_id = fn, depth, task_id


def walk(roots: list[Any]) -> list[Any]:
    """Every torch node reachable from ``roots`` through next_functions, parents before children
    (breadth first)."""
    seen: set[Any] = set()
    out: list[Any] = []
    todo = deque(n for n in roots if n is not None)
    seen.update(todo)
    while todo:
        n = todo.popleft()
        out.append(n)
        for f, _ in n.next_functions:
            if f is not None and f not in seen:
                seen.add(f)
                todo.append(f)
    return out


# An edge to no node (an input that needs no gradient: a chain's `x * 1.0001` has one a node),
# one shared tuple for each input_nr, not one object an edge for the garbage collector to walk.
_NO_EDGES = tuple((None, nr) for nr in range(64))


def build(roots: list[Any], make: Callable[[Any, Any, int], TorchNode], frame: Any,
          ident: int) -> dict[int, TorchNode]:
    """The adapters of every torch node reachable from ``roots`` through next_functions (id of
    a torch node -> ``make(node, frame, ident)``), made in breadth-first order (parents before
    children), each with its next_edges and topological_nr (torch's: 0 without next edges,
    else one more than the largest of its children's). One read of each node's
    next_functions: torch makes its tuples anew at each read."""
    of: dict[int, TorchNode] = {}
    order: list[TorchNode] = []
    for r in roots:
        if r is not None and id(r) not in of:
            a = of[id(r)] = make(r, frame, ident)
            order.append(a)
    no_edges = _NO_EDGES
    for a in order:  # grows as it goes
        if type(a) is TorchLeafNode:  # an AccumulateGrad: no next functions
            continue
        edges = []
        add = edges.append
        for f, nr in a.fn.next_functions:
            if f is None:
                add(no_edges[nr] if nr < 64 else (None, nr))
            else:
                c = of.get(id(f))
                if c is None:
                    c = of[id(f)] = make(f, frame, ident)
                    order.append(c)
                add((c, nr))
        a.next_edges = tuple(edges)
    _topological(order)
    return of


def _topological(nodes: list[TorchNode]) -> None:
    """Each node's topological_nr, nodes in breadth-first order. Reversed, that order puts a
    node's children before it, except where a child was first reached by a shorter path: one
    pass does most nodes (a chain: all), a depth-first walk the rest."""
    for a in nodes:
        a.topological_nr = -1
    late: list[TorchNode] = []
    for a in reversed(nodes):
        top = -1
        for f, _ in a.next_edges:
            if f is not None:
                t = f.topological_nr
                if t < 0:
                    break
                if t > top:
                    top = t
        else:
            a.topological_nr = top + 1
            continue
        late.append(a)
    for start in late:
        if start.topological_nr >= 0:
            continue
        stack = [(start, False)]
        while stack:
            n, expanded = stack.pop()
            if n.topological_nr >= 0:
                continue
            kids = [f for f, _ in n.next_edges if f is not None]
            if expanded:
                n.topological_nr = 1 + max((k.topological_nr for k in kids), default=-1)
                continue
            stack.append((n, True))
            stack.extend((k, False) for k in kids if k.topological_nr < 0)


_SAVED_NAMES: dict[type, tuple[str, ...]] = {}  # node class -> its _saved_* attributes (dir() is slow)
_SHAPES: dict[tuple, tuple] = {}  # saved shapes -> the one tuple of them kept (a chain's nodes share one)
_SHAPES_MAX = 4096


def saved_shapes(node: Any) -> tuple[tuple[int, ...], ...]:
    cls = type(node)
    names = _SAVED_NAMES.get(cls)
    if names is None:
        names = _SAVED_NAMES[cls] = tuple(a for a in dir(node) if a.startswith("_saved_"))
    out: list[tuple[int, ...]] = []
    plain = None  # names of a C++ node's attributes that hold no tensor (codegen: the same every node)
    for a in names:
        try:
            v = getattr(node, a)
        except RuntimeError:  # released after a backward without retain_graph
            continue
        if isinstance(v, torch.Tensor):
            out.append(tuple(v.shape))
        elif v is not None:  # a number, sizes, a list: never a tensor of this class's nodes
            if plain is None:
                plain = []
            plain.append(a)
    if plain and not isinstance(node, _BackwardCFunction):  # a custom Function's ctx: anything, per node
        _SAVED_NAMES[cls] = tuple(a for a in names if a not in plain)
    shapes = tuple(out)
    kept = _SHAPES.get(shapes)
    if kept is None:
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        kept = _SHAPES[shapes] = shapes
    return kept
