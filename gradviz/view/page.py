"""``gradviz view``'s page: one self-contained HTML file (script, styles, graphs and data inline;
no network, works from ``file://``) that shows a trace at any step.

The page is a function of replay's state: ``gradviz.view.steps`` turns one pass of the fold into
per-node transitions, ``gradviz.view.graphs`` draws each task as ``render`` does, and the page's
script (assets/page.js, plain JS) puts them together at the step the slider, the keys or the URL
fragment (``#step=N``, ``#task=K``) asks for. The bulky parts (transitions, node table, event
texts) are gzip'd and base64'd into the page and inflated by the browser's own
DecompressionStream when first needed: the event texts a chunk at a time.

The ``why`` panel shows, for the selected node, the answer found in an optional JSON blob
(``why=``: ``{"nodes": {"ID": answer}, "default": answer}``, an answer being ``gradviz why
--json``'s object); the page says how to get one where there is none.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import re
import struct
from importlib import resources
from pathlib import Path
from typing import Any

from gradviz.render import DEFAULT_MAX_NODES, RenderError, first_task
from gradviz.render.styles import KINDS, STATE_PRECEDENCE, STATES
from gradviz.replay.state import NODE_STATES
from gradviz.trace import sites
from gradviz.trace.model import Trace
from gradviz.view.graphs import TaskGraph, task_graph
from gradviz.view.steps import TIMELINE_COLUMNS, Steps, collect

TEXT_CHUNK = 4096  # event texts per gzip'd chunk: the page inflates the chunk of the step shown
DEFAULT_MAX_TASKS = 64  # task graphs drawn into one page (graphviz runs once each); the rest are named

_SLOT = re.compile(r"\{\{(TITLE|CSS|LEGEND|DATA|BLOBS|JS)\}\}")


def _asset(name: str) -> str:
    return resources.files("gradviz.view").joinpath("assets", name).read_text(encoding="utf-8")


def _blob(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def _script_json(obj: Any) -> str:
    """JSON safe inside a <script> element: no '<' (so no '</script>') outside escapes."""
    return json.dumps(obj, separators=(",", ":")).replace("<", "\\u003c")


def _state_css() -> str:
    rules = []
    for name, st in STATES.items():
        sel = f'[data-state="{name}"]'
        rules.append(
            # graphviz wraps a box with a tooltip in <g><a>: the shapes are descendants, not children
            f"#graph g{sel} :is(polygon,ellipse,path):not([fill=none]) {{fill:{st.fill}}}"
            f" #graph g{sel} :is(polygon,ellipse,path) {{stroke:{st.border};stroke-width:{st.penwidth}}}"
            f" #graph g{sel} text {{fill:{st.font}}}"
            f" .st{sel} {{background:{st.fill};border-color:{st.border}}}"
        )
    return "\n".join(rules)


def _legend() -> str:
    items = "".join(
        f'<span class="st" data-state="{html.escape(k)}" title="{html.escape(s.meaning)}">{html.escape(k)}</span>'
        for k, s in STATES.items()
    )
    return f'<div id="legend">{items}<span class="kinds" title="{html.escape(KINDS["group"].meaning)}">' \
           f"shape = kind; violet 3-D box = collapsed</span></div>"


def _tasks_to_draw(trace: Trace, task: int | None, max_tasks: int) -> tuple[list[int | None], list[int]]:
    ids = list(trace.tasks)
    if task is not None:
        return [task], [t for t in ids if t != task]
    if not ids:
        return [None], []
    chosen = ids[:max_tasks]
    first = first_task(trace)
    if first is not None and first not in chosen:
        chosen = [first, *chosen[: max_tasks - 1]]
    failed = [t for t in ids if trace.tasks[t].status not in ("ok", "running") and t not in chosen]
    chosen += failed[:4]  # a failure is why one opens a page: draw a few beyond the limit
    keep = set(chosen)
    return chosen, [t for t in ids if t not in keep]


def _node_table(nodes: dict[int, Any]) -> dict[str, list[Any]]:
    """The nodes as columns, repeated strings (names, sources, devices) as indexes into a list
    of each: a 200k-node table as one array per field is a fraction of the browser's memory
    that one array per node takes."""
    out: dict[str, list[Any]] = {"id": [], "inputs": [], "seq": []}
    for col in ("name", "source", "device"):
        out[col], out[col + "s"] = [], []
    index: dict[str, dict[Any, int]] = {"name": {}, "source": {}, "device": {}}

    def code(col: str, value: Any) -> int:
        seen = index[col]
        if value not in seen:
            seen[value] = len(seen)
            out[col + "s"].append(value)
        return seen[value]

    for nid, info in nodes.items():
        out["id"].append(nid)
        out["inputs"].append(info.num_inputs)
        out["seq"].append(info.sequence_nr)
        out["name"].append(code("name", info.name))
        # the line, the op's column and its text: several ops on one line told apart
        out["source"].append(code("source", sites.at(info.source, info.columns, short=False)))
        out["device"].append(code("device", info.device))
    return out


def page_data(trace: Trace, steps: Steps, graphs: list[TaskGraph], omitted: list[int],
              why: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The page's inline data (small, JSON) and its blobs (gzip'd, base64)."""
    nodes = trace.nodes
    tasks = []
    for tid, info in trace.tasks.items():
        begin, end = steps.task_spans.get(tid, (0, None))
        b = info.begin
        how = "backward" if b.accumulate_grad else "grad"
        tasks.append([tid, begin, -1 if end is None else end, info.status, how, b.reentrant_depth, b.tid])
    threads = [[t.tid, t.name, t.role, t.device] for t in trace.threads.values()]
    queues = [[e.queue, e.name, e.device] for e in trace.events if e.kind == "queue_created"]
    data = {
        "title": (trace.header.argv[0] if trace.header and trace.header.argv else (trace.path or "trace")),
        "path": trace.path,
        "total": steps.total,
        "states": list(NODE_STATES),
        "precedence": list(STATE_PRECEDENCE),
        "tasks": tasks,
        "threads": threads,
        "queues": queues,
        "runs": steps.runs,
        "problems": steps.problems,
        "busy": {str(t): "".join(map(str, row)) for t, row in steps.busy.items()},
        "columns": TIMELINE_COLUMNS,
        "graphs": {
            "none" if g.task is None else str(g.task): {
                "svg": g.svg, "groups": {str(k): v for k, v in g.groups.items()}, "notes": g.notes,
                "total": g.total, "drawn": len(g.nodes) + len(g.groups),
            }
            for g in graphs
        },
        "omitted": omitted,
        "textChunk": TEXT_CHUNK,
        "hasTexts": bool(steps.texts),
    }
    blobs: dict[str, str] = {}
    # Transitions as little-endian int32 quadruples (node, step, state code, extra).
    flat = [x for t in steps.transitions for x in t]
    blobs["trans"] = _blob(struct.pack(f"<{len(flat)}i", *flat))
    blobs["nodes"] = _blob(json.dumps(_node_table(nodes), separators=(",", ":")).encode("utf-8"))
    for k in range(0, len(steps.texts), TEXT_CHUNK):
        blobs[f"text-{k // TEXT_CHUNK}"] = _blob(json.dumps(steps.texts[k:k + TEXT_CHUNK]).encode("utf-8"))
    data["why"] = why or {}
    return data, blobs


def build_page(trace: Trace, *, task: int | None = None, max_nodes: int = DEFAULT_MAX_NODES,
               expand: bool = False, group_by: str | None = None, max_tasks: int = DEFAULT_MAX_TASKS,
               why: dict[str, Any] | None = None) -> str:
    """The page's HTML. task: draw only this task's graph (the others are named); max_tasks:
    draw at most this many task graphs (the first, the failed ones first); max_nodes, expand,
    group_by: as ``render``; why: answers for the why panel (see module doc)."""
    if task is not None and task not in trace.tasks:
        raise RenderError(f"no graph task {task} in the trace")
    steps = collect(trace)
    drawn, omitted = _tasks_to_draw(trace, task, max_tasks)
    graphs = [task_graph(trace, t, max_nodes=max_nodes, expand=expand, group_by=group_by) for t in drawn]
    data, blobs = page_data(trace, steps, graphs, omitted, why)
    blob_tags = "\n".join(
        f'<script type="application/octet-stream" id="blob-{k}">{v}</script>' for k, v in blobs.items()
    )
    title = html.escape(f"gradviz view: {data['title']}")
    parts = {
        "TITLE": title, "CSS": _asset("page.css") + "\n" + _state_css(), "LEGEND": _legend(),
        "DATA": _script_json(data), "BLOBS": blob_tags, "JS": _asset("page.js"),
    }
    # One pass over the template: a trace's strings that look like a slot are not filled.
    return _SLOT.sub(lambda m: parts[m.group(1)], _asset("page.html"))


def write_page(trace: Trace, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write ``build_page(trace, **options)`` to ``path``; returns the path."""
    out = Path(path)
    text = build_page(trace, **options)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def default_output(trace: Trace) -> Path:
    """In the current folder, named after the trace: diamond.trace.json -> diamond.html."""
    stem = "gradviz-view"
    if trace.path:
        stem = Path(trace.path).name
        for suffix in (".json", ".trace"):
            stem = stem.removesuffix(suffix)
        stem = stem or "trace"
    return Path(f"{stem}.html")
