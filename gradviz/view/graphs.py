"""The graph of each task as ``gradviz render`` draws it (graphviz SVG), marked up for the page:
every node box carries ``data-node`` and ``data-state``, every collapsed box ``data-group`` and
its members, so the page's script can colour them at any step."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from gradviz.render import DEFAULT_MAX_NODES, RenderError, build_model, choose_layout
from gradviz.render.dot import to_dot
from gradviz.render.model import GraphModel

_NODE_G = re.compile(r'<g id="node(?:-|&#45;)(\d+)" class="node"')  # graphviz writes '-' as &#45;
_GROUP_G = re.compile(r'<g id="group(?:-|&#45;)(\d+)" class="node"')
_XML_HEAD = re.compile(r"^.*?(?=<svg)", re.S)  # the XML declaration and DOCTYPE: not in inline SVG
_PROGRAM = {"sfdp": ("sfdp", []), "fixed": ("neato", ["-n2"])}


@dataclass
class TaskGraph:
    task: int | None
    svg: str
    nodes: list[int]  # nodes drawn as themselves
    groups: dict[int, list[int]] = field(default_factory=dict)  # box id -> member nodes
    notes: list[str] = field(default_factory=list)  # what was collapsed
    total: int = 0  # nodes in the task's graph


def svg_of(dot: str, layout: str) -> str:
    """graphviz's SVG of ``dot``, as text to put inline in a page."""
    program, args = _PROGRAM.get(layout, ("dot", []))
    exe = shutil.which(program)
    if exe is None:
        raise RenderError(f"the Graphviz program '{program}' is not installed (apt-get install graphviz)")
    proc = subprocess.run([exe, *args, "-Tsvg"], input=dot.encode("utf-8"), capture_output=True, check=False)
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError(f"{program} failed ({proc.returncode}): {msg[-1] if msg else 'no message'}")
    return _XML_HEAD.sub("", proc.stdout.decode("utf-8"), count=1)


def mark_up(svg: str, model: GraphModel) -> str:
    """Add ``data-node``/``data-state`` (and ``data-group``) to the boxes of ``svg``."""
    svg = _NODE_G.sub(lambda m: f'{m.group(0)} data-node="{m.group(1)}" data-state="unreached"', svg)
    return _GROUP_G.sub(lambda m: f'{m.group(0)} data-group="{m.group(1)}" data-state="unreached"', svg)


def task_graph(trace: Any, task: int | None, *, max_nodes: int = DEFAULT_MAX_NODES, expand: bool = False,
               group_by: str | None = None) -> TaskGraph:
    """The marked-up picture of one task (collapsed as ``render`` collapses it)."""
    model = build_model(trace, task, max_nodes=max_nodes, expand=expand, group_by=group_by)
    layout = choose_layout(model.drawn())
    svg = mark_up(svg_of(to_dot(model, layout=layout), layout), model)
    drawn = [n for n in model.nodes if n not in model.group_of]
    groups = {g.id: list(g.members) for g in model.groups.values()}
    return TaskGraph(task, svg, drawn, groups, list(model.notes), len(model.nodes))
