"""What a corpus program's backward passes did, collected through torch's public API only.

The same code observes real torch and gradviz standing in for torch (``import torch`` resolves to
whichever is installed), so the two records can be compared field by field. Per backward call
(``Tensor.backward``, ``torch.autograd.backward`` or ``torch.autograd.grad``, the outermost only):
- the graph, walked from the roots through ``grad_fn.next_functions``: node names and edges;
- the execution order, from a Node pre-hook registered on every node for the call;
- the roots' values (the losses);
- statistics of the gradients of the graph's leaves (AccumulateGrad's ``variable``) after the
  call, or of the gradients ``grad`` returned.
Per call of a ``torch.func`` transform (the outermost only: ``vmap(grad(f))`` is one call), the
statistics of every tensor it returned, as a record with no graph. torch's transforms call
``torch.autograd.grad`` inside (gradviz's do not go through the wrapped entry point): calls made
inside a transform are not recorded on either engine.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import numpy as np

_SAMPLE = 16  # values kept from each tensor, evenly spaced, besides its statistics
_MAX_NODES = 20_000  # a graph larger than this is recorded by its size only

records: list[dict[str, Any]] = []
_local = threading.local()


def summary(t: Any) -> dict[str, Any] | None:
    """Shape, dtype and statistics of a tensor (None stays None)."""
    if t is None:
        return None
    a = np.asarray(t.detach().cpu().numpy())
    f = a.astype(np.float64).ravel()
    out: dict[str, Any] = {"shape": list(a.shape), "dtype": str(t.dtype).rsplit(".", 1)[-1]}
    if f.size == 0:
        return out
    idx = np.linspace(0, f.size - 1, min(_SAMPLE, f.size)).astype(np.int64)
    out.update(
        sum=float(f.sum()),
        abssum=float(np.abs(f).sum()),
        norm=float(math.sqrt(float((f * f).sum()))),
        min=float(f.min()),
        max=float(f.max()),
        sample=[float(v) for v in f[idx]],
    )
    return out


def _walk(roots: list[Any]) -> tuple[list[Any], list[list[Any]]]:
    """Nodes reachable from roots (depth first, in next_functions order) and each one's edges as
    [index of the next node or -1 for none, input_nr]."""
    nodes: list[Any] = []
    index: dict[int, int] = {}
    stack = [r for r in reversed(roots) if r is not None]
    while stack and len(nodes) <= _MAX_NODES:
        n = stack.pop()
        if id(n) in index:
            continue
        index[id(n)] = len(nodes)
        nodes.append(n)
        for nxt, _ in reversed(n.next_functions):
            if nxt is not None and id(nxt) not in index:
                stack.append(nxt)
    edges = [[[index.get(id(nxt), -2) if nxt is not None else -1, nr] for nxt, nr in n.next_functions] for n in nodes]
    return nodes, edges


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _observe(kind: str, call: Any, tensors: list[Any], *args: Any, **kwargs: Any) -> Any:
    if getattr(_local, "depth", 0):  # Tensor.backward calls autograd.backward: record once
        return call(*args, **kwargs)
    roots = [t.grad_fn for t in tensors if t.grad_fn is not None]
    nodes, edges = _walk(roots)
    order: list[int] = []
    handles = []
    if len(nodes) <= _MAX_NODES:
        for i, n in enumerate(nodes):
            handles.append(n.register_prehook(functools.partial(_ran, order, i)))
    rec: dict[str, Any] = {
        "kind": kind,
        "roots": [summary(t) for t in tensors],
        "nodes": [_name(n) for n in nodes],
        "edges": edges,
    }
    _local.depth = 1
    try:
        result = call(*args, **kwargs)
    finally:
        _local.depth = 0
        for h in handles:
            h.remove()
    rec["order"] = order
    if kind == "grad":
        rec["grads"] = [summary(g) for g in _as_list(result)]
    else:
        leaves = [n.variable for n in nodes if _name(n) == "AccumulateGrad"]
        rec["grads"] = [summary(v.grad) for v in leaves]
    records.append(rec)
    return result


def _name(n: Any) -> str:
    # torch names its C++-only nodes with their namespace (torch::autograd::AccumulateGrad)
    return n.name().rsplit("::", 1)[-1]


def _ran(order: list[int], i: int, grad_outputs: Any) -> None:
    order.append(i)


def _leaves(x: Any) -> list[Any]:
    """The tensors in a transform's result, in order (tuples, lists and dicts looked through)."""
    if isinstance(x, dict):
        return [t for v in x.values() for t in _leaves(v)]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _leaves(v)]
    return [x] if hasattr(x, "grad_fn") else []


def _func_call(name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    if getattr(_local, "depth", 0):
        return call(*args, **kwargs)
    _local.depth = 1
    try:
        result = call(*args, **kwargs)
    finally:
        _local.depth = 0
    shown = result
    if name == "vjp":  # (output, vjp_fn[, aux]): the function is observed when it is called
        shown = (result[0],) + tuple(result[2:])
        fn = result[1]
        result = (result[0], functools.wraps(fn)(functools.partial(_func_call, "vjp_fn", fn))) + tuple(result[2:])
    records.append({"kind": f"func.{name}", "roots": [], "nodes": [], "edges": [], "order": [],
                    "grads": [summary(t) for t in _leaves(shown)]})
    return result


def _install_func(torch: Any) -> None:
    func = getattr(torch, "func", None)
    if func is None:
        return
    for name in ("grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "vmap"):
        transform = getattr(func, name, None)
        if transform is None:
            continue

        def make(*args: Any, _transform: Any = transform, _name: str = name, **kwargs: Any) -> Any:
            fn = _transform(*args, **kwargs)
            return functools.wraps(fn)(functools.partial(_func_call, _name, fn))

        setattr(func, name, functools.wraps(transform)(make))
    for name in ("vjp", "jvp", "functional_call"):
        call = getattr(func, name, None)
        if call is not None:
            setattr(func, name, functools.wraps(call)(functools.partial(_func_call, name, call)))
    if getattr(torch, "vmap", None) is not None:  # torch.vmap: the same transform at the top level
        torch.vmap = func.vmap


def install() -> None:
    """Wrap torch's three entry points into the engine (whichever torch is installed now), and
    torch.func's transforms."""
    import torch

    _install_func(torch)

    backward, grad, tensor_backward = torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward

    @functools.wraps(tensor_backward)
    def tensor_backward_observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _observe("backward", tensor_backward, [self], self, *args, **kwargs)

    @functools.wraps(backward)
    def backward_observed(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        return _observe("backward", backward, _as_list(tensors), tensors, *args, **kwargs)

    @functools.wraps(grad)
    def grad_observed(outputs: Any, *args: Any, **kwargs: Any) -> Any:
        return _observe("grad", grad, _as_list(outputs), outputs, *args, **kwargs)

    torch.Tensor.backward = tensor_backward_observed
    torch.autograd.backward = backward_observed
    torch.autograd.grad = grad_observed
