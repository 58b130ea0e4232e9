"""What the torch recorder reads off a real torch graph: names, edges, dependency counts,
exec_info, leaf names, forward source lines and gradient statistics.

Everything here uses public torch APIs (``Node.name()``, ``next_functions``, ``_sequence_nr()``,
``_input_metadata``, ``metadata``, ``torch.autograd.graph.get_gradient_edge``,
``TorchFunctionMode``). Graph nodes are held by identity: torch's Python node objects do not
take weak references, so the recorder keeps them (and thus their graph) until it stops.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections import deque
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from gradviz.trace import events as ev

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gradviz/
_CLI_DIR = os.path.join(os.path.dirname(_PKG_DIR), "cli")
_PREFIX = "torch::autograd::"


def node_name(node: Any) -> str:
    """torch's name without the C++ namespace ("torch::autograd::AccumulateGrad" ->
    "AccumulateGrad"), so names align with gradviz's engine, which uses the short form."""
    n = node.name()
    return n[len(_PREFIX):] if n.startswith(_PREFIX) else n


def is_accumulate(node: Any) -> bool:
    return hasattr(node, "variable")


def walk(roots: list[Any]) -> list[Any]:
    """Every node reachable from `roots` through next_functions, parents before children (BFS)."""
    seen: set[Any] = set()
    out: list[Any] = []
    todo = deque(n for n in roots if n is not None)
    for n in todo:
        seen.add(n)
    while todo:
        n = todo.popleft()
        out.append(n)
        for f, _ in n.next_functions:
            if f is not None and f not in seen:
                seen.add(f)
                todo.append(f)
    return out


def topological_nrs(nodes: list[Any]) -> dict[Any, int]:
    """torch's topological_nr: 0 for a node without next edges (leaves), else 1 + the largest of
    its children's. Iterative: real graphs are deeper than Python's recursion limit."""
    topo: dict[Any, int] = {}
    for start in nodes:
        if start in topo:
            continue
        stack = [(start, False)]
        while stack:
            n, done = stack.pop()
            if n in topo:
                continue
            kids = [f for f, _ in n.next_functions if f is not None]
            if done:
                topo[n] = 1 + max((topo[k] for k in kids), default=-1)
                continue
            stack.append((n, True))
            stack.extend((k, False) for k in kids if k not in topo)
    return topo


def dependencies(root: Any, topo: dict[Any, int], min_topo: int) -> dict[Any, int]:
    """As torch's compute_dependencies: one count per incoming edge from a node reachable from
    the root; nodes below `min_topo` (grad()/inputs= pruning) are not expanded."""
    deps: dict[Any, int] = {}
    seen = {root}
    todo = [root]
    while todo:
        n = todo.pop()
        if topo.get(n, 0) < min_topo:
            continue
        for f, _ in n.next_functions:
            if f is None:
                continue
            deps[f] = deps.get(f, 0) + 1
            if f not in seen:
                seen.add(f)
                todo.append(f)
    return deps


def exec_info(root: Any, targets: set[Any], accumulate: bool, topo: dict[Any, int],
              min_topo: int) -> set[Any]:  # fmt: skip
    """The nodes torch's init_to_execute marks needed: those with a path to an output node (the
    output node itself only when its gradient is accumulated, i.e. backward(inputs=))."""
    leads: dict[Any, bool] = {}  # node -> it is a target or reaches one
    needed: set[Any] = set()
    stack = [(root, False)]
    while stack:
        n, done = stack.pop()
        if n in leads and not done:
            continue
        kids = [f for f, _ in n.next_functions if f is not None and topo.get(f, 0) >= min_topo]
        if not done:
            leads[n] = False  # provisional: a graph is a DAG, so no cycle reads it
            stack.append((n, True))
            stack.extend((k, False) for k in kids if k not in leads)
            continue
        child = any(leads.get(k, False) for k in kids)
        if child or (n in targets and accumulate):
            needed.add(n)
        leads[n] = child or n in targets
    needed.add(root)
    return needed


def device_of(node: Any) -> str:
    meta = getattr(node, "_input_metadata", None)
    if meta:
        return str(meta[0].device)
    var = getattr(node, "variable", None)
    return str(var.device) if var is not None else "cpu"


def num_inputs(node: Any) -> int:
    meta = getattr(node, "_input_metadata", None)
    return len(meta) if meta is not None else 1


_SAVED_NAMES: dict[type, tuple[str, ...]] = {}  # node class -> its _saved_* attributes (dir() is slow)


def saved_shapes(node: Any) -> tuple[tuple[int, ...], ...]:
    """Shapes of the tensors the node saved for backward (its ``_saved_*`` tensors); empty once
    they were released (torch raises on access then)."""
    names = _SAVED_NAMES.get(type(node))
    if names is None:
        names = _SAVED_NAMES[type(node)] = tuple(a for a in dir(node) if a.startswith("_saved_"))
    out: list[tuple[int, ...]] = []
    for a in names:
        try:
            v = getattr(node, a)
        except RuntimeError:  # released after a backward without retain_graph
            continue
        if isinstance(v, torch.Tensor):
            out.append(tuple(v.shape))
    return tuple(out)


def dtype_name(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


_busy = threading.local()  # set while the recorder runs its own torch ops (stats): not the user's


class Busy:
    def __enter__(self) -> None:
        _busy.on = True

    def __exit__(self, *exc: Any) -> None:
        _busy.on = False


def stats(t: torch.Tensor | None) -> ev.Stats | None:
    """norm/min/max/NaN/Inf of a gradient, without touching autograd. Two passes over the data
    (aminmax, vector_norm) in its own dtype: NaN propagates through min and max and +-inf shows
    in them, so finite extremes mean nothing to count, and the counting passes are skipped."""
    if t is None:
        return None
    with Busy(), torch.no_grad():
        x = t.detach()
        if x.layout != torch.strided:  # sparse gradients (Embedding(sparse=True)): their values
            x = x.to_dense()
        if x.is_complex():
            x = x.real
        if x.numel() == 0:
            return ev.Stats(0.0, float("nan"), float("nan"), 0, 0)
        if not x.is_floating_point():
            x = x.double()
        lo, hi = torch.aminmax(x)
        vals = torch.stack([torch.linalg.vector_norm(x), lo, hi]).tolist()
        if math.isfinite(vals[1]) and math.isfinite(vals[2]):
            return ev.Stats(vals[0], vals[1], vals[2], 0, 0)
        nan = int(torch.isnan(x).sum())
        inf = int(torch.isinf(x).sum())
        if nan:  # min/max over the numbers that are there, as gradviz's engine reports them
            num = x[~torch.isnan(x)]
            lo_f, hi_f = (float(num.min()), float(num.max())) if num.numel() else (math.nan, math.nan)
            return ev.Stats(math.nan, lo_f, hi_f, nan, inf)
        return ev.Stats(vals[0], vals[1], vals[2], nan, inf)


def values(t: torch.Tensor | None, limit: int = 64) -> Any:
    if t is None or t.numel() > limit:
        return None
    with Busy(), torch.no_grad():
        return t.detach().cpu().tolist()


# --- the user's code -------------------------------------------------------------------------


def _ours(fname: str) -> bool:
    return fname.startswith(_TORCH_DIR) or fname.startswith(_PKG_DIR) or fname.startswith(_CLI_DIR)


def user_frame(depth: int = 1) -> Any:
    """The innermost frame outside torch and gradviz: the line of the user's code."""
    f = sys._getframe(depth)
    while f is not None and (_ours(f.f_code.co_filename) or f.f_code.co_filename.startswith("<frozen")):
        f = f.f_back
    return f


def where(frame: Any) -> str | None:
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def leaf_names(frame: Any, limit: int = 8) -> dict[int, str]:
    """id(leaf tensor) -> a name from the caller's variables: nn.Module parameters by their
    module path (``model.fc1.weight``) first, then plain variables bound to a leaf."""
    params: dict[int, str] = {}
    plain: dict[int, str] = {}
    f, k = frame, 0
    while f is not None and k < limit:
        if not _ours(f.f_code.co_filename):
            scopes = [f.f_locals] if f.f_locals is not f.f_globals else []
            scopes.append(f.f_globals)
            for scope in scopes:
                for name, v in list(scope.items()):
                    if name.startswith("__"):
                        continue
                    if isinstance(v, torch.nn.Module):
                        prefix = type(v).__name__ if name == "self" else name
                        for pn, p in v.named_parameters():
                            params.setdefault(id(p), f"{prefix}.{pn}")
                    elif isinstance(v, torch.Tensor) and v.is_leaf and v.requires_grad:
                        plain.setdefault(id(v), name)
            k += 1
        f = f.f_back
    plain.update(params)
    return plain


def source_key(node: Any) -> tuple[int, str]:
    """What identifies a node for its source line without holding it: torch's Python node
    objects are made on demand (no stable id) and take no weak references, and holding them
    would keep every forward's saved activations alive. A sequence number is unique on its
    thread, and with the name nearly so across threads."""
    return node._sequence_nr(), node.name()


class SourceMode(TorchFunctionMode):
    """Notes, for every graph node a torch call in the user's code makes, the user's line: the
    call's outputs' grad_fn and every new node behind it (a composite op makes several)."""

    def __init__(self, sources: dict[tuple[int, str], str | None]):
        super().__init__()
        self.sources = sources

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if getattr(func, "_gradviz_entry", False):
            # torch.autograd.backward/grad dispatch to the mode: the recorder's wrapper already
            # made the task, so the original runs (once) rather than the wrapper again
            # (through every wrapper copied from ours by functools.wraps, e.g. a user's or an
            # observer's over the recorder's: each one's __wrapped__ leads to the real one)
            while getattr(func, "_gradviz_entry", False) and hasattr(func, "__wrapped__"):
                func = func.__wrapped__
            return func(*args, **(kwargs or {}))
        out = func(*args, **(kwargs or {}))
        if getattr(_busy, "on", False) or not torch.is_grad_enabled():
            return out
        items = out if isinstance(out, (tuple, list)) else (out,)
        src: str | None = None
        found = False
        for t in items:
            gf = getattr(t, "grad_fn", None) if isinstance(t, torch.Tensor) else None
            if gf is None or source_key(gf) in self.sources:
                continue
            if not found:
                src, found = where(user_frame(1)), True
            self._tag(gf, src)
        return out

    def _tag(self, gf: Any, src: str | None) -> None:
        sources = self.sources
        todo = [gf]
        sources[source_key(gf)] = src
        while todo:
            n = todo.pop()
            for f, _ in n.next_functions:
                if f is None or hasattr(f, "variable"):
                    continue
                k = source_key(f)
                if k not in sources:
                    sources[k] = src
                    todo.append(f)


def anomaly_traceback(node: Any) -> str | None:
    """The forward traceback anomaly mode stored on the node, if it ran under detect_anomaly."""
    try:
        tb = node.metadata.get("traceback_")
    except (AttributeError, RuntimeError):
        return None
    if not tb:
        return None
    return "".join(tb) if isinstance(tb, list) else str(tb)
