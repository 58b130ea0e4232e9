"""``gradviz.draw(x)``: torchviz's one call. ``x`` is a live tensor (gradviz's or real torch's:
its ``grad_fn`` graph is walked now, no backward needed), several of them, or a trace (a
``Trace`` or a path; ``task=``/``step=`` pick the graph task and colour it at a step). The
picture is ``gradviz render``'s: the same graph model, collapsing and DOT. The result shows
itself in Jupyter (``_repr_svg_``/``_repr_mimebundle_``) and writes files (``render``/``save``).

Leaves are named as the recorder names them: parameters of an ``nn.Module`` found in the
caller's variables by their module path (``model.fc1.weight``), then plain variables bound to a
leaf; ``params=`` (torchviz's ``dict(model.named_parameters())``) names them explicitly.
Everything is read by duck typing (``grad_fn``, ``next_functions``, ``name()``, ``variable``):
nothing of the engine or of torch is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradviz.render import (
    DEFAULT_MAX_NODES,
    FORMATS,
    RenderError,
    build_model,
    choose_layout,
    first_task,
    output_format,
    run_graphviz,
)
from gradviz.render import model as gm
from gradviz.render.dot import to_dot
from gradviz.trace.model import Trace
from gradviz.view.graphs import svg_of

_OURS = str(Path(__file__).resolve().parents[1])  # gradviz's own files: not the user's frames
_SAVED_PREFIX = "_saved_"


class Drawing:
    """A picture of a backward graph: ``.dot`` (DOT source), ``.svg``, Jupyter display,
    ``render(path)`` / ``save(path)``."""

    def __init__(self, dot: str, layout: str, title: str, nodes: int, boxes: int) -> None:
        self.dot = dot
        self.layout = layout
        self.title = title
        self.nodes = nodes  # graph nodes
        self.boxes = boxes  # boxes drawn (fewer when collapsed)
        self._svg: str | None = None

    @property
    def svg(self) -> str:
        """The picture as SVG text (graphviz runs on first use)."""
        if self._svg is None:
            self._svg = svg_of(self.dot, self.layout)
        return self._svg

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"image/svg+xml": self.svg, "text/plain": repr(self)}

    def render(self, path: str | os.PathLike[str], format: str | None = None) -> Path:
        """Write the picture to ``path`` (svg, png, pdf or dot, from ``format`` or the
        extension); returns the path written."""
        out = Path(path)
        fmt = output_format(out, format)
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "dot":
            out.write_text(self.dot, encoding="utf-8")
        elif fmt == "svg":
            out.write_text(self.svg, encoding="utf-8")
        else:
            run_graphviz(self.dot, fmt, out, self.layout)
        return out

    save = render

    def __repr__(self) -> str:
        boxes = f" in {self.boxes} boxes" if self.boxes != self.nodes else ""
        return f"<gradviz drawing: {self.title} ({self.nodes} nodes{boxes})>"


def _node_name(fn: Any) -> str:
    name = fn.name() if callable(getattr(fn, "name", None)) else type(fn).__name__
    return str(name).rsplit("::", 1)[-1]  # torch::autograd::AccumulateGrad -> AccumulateGrad


def _saved(fn: Any) -> tuple[tuple[int, ...], ...]:
    """Shapes of the tensors a node saved for backward (none once a backward freed them)."""
    shapes = []
    for attr in dir(fn):
        if not attr.startswith(_SAVED_PREFIX) or attr.endswith("_raw"):
            continue
        try:
            v = getattr(fn, attr)
        except Exception:  # freed by a backward (RuntimeError), or not a tensor at all
            continue
        if hasattr(v, "shape") and hasattr(v, "dtype") and callable(getattr(v, "dim", None)):
            shapes.append(tuple(int(d) for d in v.shape))
    return tuple(shapes)


def _is_module(v: Any) -> bool:
    return callable(getattr(type(v), "named_parameters", None)) and not isinstance(v, type)


def leaf_names(frame: Any, limit: int = 8) -> dict[int, str]:
    """id(leaf tensor) -> its name from the caller's variables: parameters of modules by their
    module path first, then plain variables bound to a leaf that requires grad."""
    params: dict[int, str] = {}
    plain: dict[int, str] = {}
    f, k = frame, 0
    while f is not None and k < limit:
        if not f.f_code.co_filename.startswith(_OURS):
            scopes = [f.f_locals] if f.f_locals is not f.f_globals else []
            scopes.append(f.f_globals)
            for scope in scopes:
                for name, v in list(scope.items()):
                    if name.startswith("_"):
                        continue
                    if _is_module(v):
                        prefix = type(v).__name__ if name == "self" else name
                        try:
                            for pn, p in v.named_parameters():
                                params.setdefault(id(p), f"{prefix}.{pn}")
                        except Exception:  # a user's object that only looks like a module
                            continue
                    elif getattr(v, "is_leaf", False) is True and getattr(v, "requires_grad", False) is True:
                        plain.setdefault(id(v), name)
            k += 1
        f = f.f_back
    plain.update(params)
    return plain


def graph_model(outputs: Any, names: Mapping[int, str], title: str) -> gm.GraphModel:
    """render's graph model of the live graph behind ``outputs`` (their grad_fn, walked now)."""
    tensors = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    roots_fn = []
    for t in tensors:
        fn = getattr(t, "grad_fn", None)
        if fn is None:
            what = "a leaf" if getattr(t, "requires_grad", False) else "not part of a graph (requires_grad=False)"
            raise RenderError(f"nothing to draw: the tensor has no grad_fn ({what})")
        roots_fn.append(fn)
    device = str(getattr(tensors[0], "device", "cpu"))
    ids: dict[int, int] = {}  # id(fn) -> node id, in the order found
    fns: list[Any] = []
    stack = list(reversed(roots_fn))
    while stack:  # iterative: graphs thousands of nodes deep
        fn = stack.pop()
        if id(fn) in ids:
            continue
        ids[id(fn)] = len(fns) + 1
        fns.append(fn)
        for nxt, _ in reversed(tuple(getattr(fn, "next_functions", ()))):
            if nxt is not None and id(nxt) not in ids:
                stack.append(nxt)
    root_ids = list(dict.fromkeys(ids[id(fn)] for fn in roots_fn))
    nodes: dict[int, gm.GNode] = {}
    edges: list[gm.GEdge] = []
    inputs: dict[int, int] = {}
    for fn in fns:
        nid = ids[id(fn)]
        for slot, (nxt, input_nr) in enumerate(getattr(fn, "next_functions", ())):
            if nxt is not None:
                dst = ids[id(nxt)]
                edges.append(gm.GEdge(nid, dst, slot, int(input_nr)))
                inputs[dst] = max(inputs.get(dst, 0), int(input_nr) + 1)
    for fn in fns:
        nid = ids[id(fn)]
        name = _node_name(fn)
        var = getattr(fn, "variable", None) if name == "AccumulateGrad" else None
        leaf = None
        dev = device
        if var is not None:
            leaf = gm.LeafInfo(id(var), names.get(id(var)), tuple(int(d) for d in var.shape),
                               str(var.dtype).removeprefix("torch.").removeprefix("gradviz."))
            dev = str(getattr(var, "device", device))
        kind = "leaf" if name == "AccumulateGrad" else ("root" if nid in root_ids else "op")
        seqnr = getattr(fn, "_sequence_nr", None)
        nodes[nid] = gm.GNode(nid, name, kind, int(seqnr()) if callable(seqnr) else -1, inputs.get(nid, 1), dev,
                              _saved(fn), None, leaf)
    devices = list(dict.fromkeys(n.device for n in nodes.values()))
    return gm.GraphModel(title, None, None, nodes, edges, root_ids, devices)


def draw(x: Any, *, params: Mapping[str, Any] | None = None, task: int | None = None, step: int | None = None,
         max_nodes: int = DEFAULT_MAX_NODES, expand: bool = False) -> Drawing:
    """A picture of a backward graph, torchviz's way: ``gradviz.draw(loss)``.

    x: a tensor with a grad_fn (gradviz or torch), a list of them, a ``Trace`` or a trace
    file's path. params: name -> tensor, as torchviz's (default: names from the caller's
    variables, modules' parameters by module path). task, step: for a trace, the graph task
    (default: the first that failed, else the first) and the step to colour it at. max_nodes,
    expand: collapse as ``gradviz render`` does.
    """
    if isinstance(x, (str, os.PathLike)):
        from_trace: Trace | None = _load(x)
    else:
        from_trace = x if isinstance(x, Trace) else None
    if from_trace is not None:
        t = from_trace
        tid = task if task is not None else first_task(t)
        model = build_model(t, tid, step=step, max_nodes=max_nodes, expand=expand)
        title = model.title
    else:
        if task is not None or step is not None:
            raise RenderError("task= and step= are for a trace; a live tensor's graph has no tasks or steps yet")
        names = leaf_names(sys._getframe(1))
        if params is not None:
            names.update({id(v): k for k, v in params.items()})
        roots = x if isinstance(x, (list, tuple)) else [x]
        title = "backward graph of " + ", ".join(_node_name(r.grad_fn) if getattr(r, "grad_fn", None) is not None
                                                  else "a leaf" for r in roots)
        model = graph_model(x, names, title)
        gm.collapse(model, max_nodes, expand=expand)
    layout = choose_layout(model.drawn())
    return Drawing(to_dot(model, layout=layout), layout, title, len(model.nodes), model.drawn())


def _load(path: str | os.PathLike[str]) -> Trace:
    from gradviz.trace.file import load

    return load(path)


__all__ = ["FORMATS", "Drawing", "draw", "graph_model", "leaf_names"]
