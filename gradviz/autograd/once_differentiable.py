"""autograd.function.once_differentiable: a custom backward that cannot itself be differentiated.

The backward runs under no_grad. When its gradients would need a graph (create_graph, with an
incoming gradient that requires grad), each is handed on through an Error node instead, as
torch's DelayedError does: first-order backward works, and differentiating the gradients again
raises torch's error when the engine reaches that node.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gradviz.autograd.grad_mode import is_grad_enabled, no_grad
from gradviz.autograd.graph import InputMetadata, Node, collect_next_edges, node_created

_MESSAGE = "trying to differentiate twice a function that was marked with @once_differentiable"


class Error(Node):
    """Raises its message when backward reaches it (torch's autograd Error node)."""

    _namespace = "torch::autograd::"

    def __init__(self, message: str, next_edges: list) -> None:
        super().__init__(next_edges)
        self.message = message

    def apply(self, grads: list[Any]) -> list[Any]:
        raise RuntimeError(self.message)


def _delayed_error(outputs: tuple) -> tuple:
    """Each output detached, made a leaf that requires grad, then routed through one Error node."""
    leaves = []
    for v in outputs:
        if v is not None:
            v = v.detach()
            v.requires_grad_(True)
        leaves.append(v)
    node = Error(_MESSAGE, collect_next_edges(tuple(leaves)))
    result = []
    meta = []
    for i, v in enumerate(leaves):
        if v is None:
            result.append(None)
            meta.append(InputMetadata((), None, None))
            continue
        out = type(v)._wrap(v._data, v.dtype, v.device)
        out._grad_fn = node
        out._output_nr = i
        meta.append(InputMetadata(v._data.shape, v.dtype, v.device))
        result.append(out)
    node.input_metadata = meta
    node_created(node)
    return tuple(result)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    from gradviz.tensor import Tensor

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        return _delayed_error(outputs if isinstance(outputs, tuple) else (outputs,))

    return wrapper
