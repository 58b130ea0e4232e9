"""How the torch recorder names torch's nodes without holding them, and the nodes Python never
sees: a leaf's AccumulateGrad no walked graph holds, and the GraphRoot of several roots."""

from __future__ import annotations

from typing import Any

import torch

from gradviz.torchrec import _graph as g


def _edge(t: Any) -> tuple[Any, int]:
    """The gradient edge of a tensor, without get_gradient_edge: that takes a sequence number
    from the thread's counter (it builds a node), which would shift every later node's."""
    if isinstance(t, torch.autograd.graph.GradientEdge):
        return t.node, t.output_nr
    if not t.requires_grad:
        return None, 0
    if t.grad_fn is not None:
        return t.grad_fn, t.output_nr
    return _LEAF, t  # a leaf: its AccumulateGrad is found in the walked graph (_leaf_edges)


_LEAF = object()


def _leaf_edges(edges: list[tuple[Any, Any]], nodes: list[Any]) -> list[tuple[Any, int]]:
    acc = {id(n.variable): n for n in nodes if g.is_accumulate(n)}
    out = []
    for n, x in edges:
        if n is _LEAF:
            node = acc.get(id(x))
            if node is None:  # a root leaf, or an input the graph does not reach
                node = _LeafNode(x)
            out.append((node, 0))
        else:
            out.append((n, x))
    return out


class _NodeIds:
    """torch node -> gradviz node id, without holding the node: a held node would keep its whole
    graph (and every saved activation) alive, and torch's Python nodes take no weak reference.
    A node is known by what torch keeps stable: a leaf's AccumulateGrad by its tensor, any other
    by its sequence number and name (g.source_key; unique on a thread, nearly so across)."""

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}
        self.last = 0

    @staticmethod
    def key(node: Any) -> Any:
        var = getattr(node, "variable", None)
        return ("leaf", id(var)) if var is not None else (node._sequence_nr(), node.name())

    def fresh(self) -> int:
        self.last += 1
        return self.last

    def __getitem__(self, node: Any) -> int:
        return self.ids[self.key(node)]

    def __setitem__(self, node: Any, nid: int) -> None:
        self.ids[self.key(node)] = nid

    def __contains__(self, node: Any) -> bool:
        return self.key(node) in self.ids

    def __len__(self) -> int:
        return len(self.ids)

    def get(self, node: Any) -> int | None:
        return self.ids.get(self.key(node))

    def drop(self, node: Any) -> int | None:
        return self.ids.pop(self.key(node), None)

    def drop_leaf(self, tensor_key: int) -> None:
        self.ids.pop(("leaf", tensor_key), None)

    def clear(self) -> None:
        self.ids.clear()


class _LeafNode:
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
        return (1 << 64) - 1  # AccumulateGrad's, always

    def register_prehook(self, fn: Any) -> Any:
        return self.variable.register_hook(lambda grad: fn((grad,)))

    def register_hook(self, fn: Any) -> Any:
        return self.variable.register_post_accumulate_grad_hook(lambda t: fn((), ()))


class _Root:
    """torch's GraphRoot for several roots, which Python never sees: its edges are the roots."""

    def __init__(self, roots: list[tuple[Any, int]]):
        self.next_functions = tuple(roots)
