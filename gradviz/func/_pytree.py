"""The containers torch.func's transforms look through (tuple, list, dict, namedtuple), as
torch.utils._pytree flattens them: leaves in order, and a spec that rebuilds the container."""

from __future__ import annotations

from typing import Any

__all__ = ["tree_flatten", "tree_map", "tree_unflatten"]

# A spec: None for a leaf, else (kind, context, children's specs).
Spec = Any


def tree_flatten(tree: Any) -> tuple[list[Any], Spec]:
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple keeps its type
        leaves, specs = _flatten_all(tuple(tree))
        return leaves, ("namedtuple", type(tree), specs)
    if isinstance(tree, (tuple, list)):
        leaves, specs = _flatten_all(tree)
        return leaves, (type(tree).__name__, None, specs)
    if isinstance(tree, dict):
        leaves, specs = _flatten_all(tree.values())
        return leaves, ("dict", list(tree.keys()), specs)
    return [tree], None


def _flatten_all(children: Any) -> tuple[list[Any], list[Spec]]:
    leaves: list[Any] = []
    specs: list[Spec] = []
    for child in children:
        sub, spec = tree_flatten(child)
        leaves.extend(sub)
        specs.append(spec)
    return leaves, specs


def tree_unflatten(leaves: list[Any], spec: Spec) -> Any:
    it = iter(leaves)
    out = _build(it, spec)
    return out


def _build(it: Any, spec: Spec) -> Any:
    if spec is None:
        return next(it)
    kind, context, children = spec
    built = [_build(it, c) for c in children]
    if kind == "namedtuple":
        return context(*built)
    if kind == "tuple":
        return tuple(built)
    if kind == "list":
        return built
    return dict(zip(context, built))


def tree_map(fn: Any, tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def num_leaves(spec: Spec) -> int:
    if spec is None:
        return 1
    return sum(num_leaves(c) for c in spec[2])
