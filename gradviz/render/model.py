"""The graph a picture shows, built from a trace alone: nodes, edges, roots, devices, what each
graph task did to each node, the state at a step, and which nodes are collapsed into boxes.

``build(trace, task)`` walks the events once for the task and fills a ``GraphModel``;
``collapse(model, max_nodes)`` decides which nodes share a box when there are too many to draw;
``gradviz.render.dot`` turns the model into DOT. Nothing here knows DOT or escaping.

Edges point the way gradients flow: from a node to the nodes in its ``next_edges``.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gradviz.render.dominators import MAX_PERIOD, MIN_CHAIN, VROOT, _Graph, _UnionFind  # noqa: F401
from gradviz.trace import events as ev
from gradviz.trace.ddp import bucket_of_node  # ddp
from gradviz.trace.model import Trace

# Collapse passes, in the order they run: each runs only while the picture has too many boxes.
# Repeats go before chains so that a chain cannot cut a repeated block in two.
PASSES = ("repeat", "chain", "segment")


@dataclass(slots=True)  # one a node or edge of a 200k-node task: no __dict__ each
class LeafInfo:
    """The leaf tensor an AccumulateGrad node writes into."""

    tensor: int
    name: str | None
    shape: tuple[int, ...]
    dtype: str
    grad_norm: float | None = None  # the leaf's .grad norm after the task (None: not updated)
    grad_bad: bool = False  # the grad had NaN/Inf
    grad_seq: int | None = None  # seq of the update, so a picture at a step can hide the future


@dataclass(slots=True)  # one a node or edge of a 200k-node task: no __dict__ each
class GradInfo:
    """The gradient that flowed along an edge in the task (several adds are summed in count)."""

    shape: tuple[int, ...] | None
    norm: float | None
    bad: bool  # NaN or Inf in it
    count: int = 1
    seq: int = 0  # seq of the first add


@dataclass(slots=True)  # one a node or edge of a 200k-node task: no __dict__ each
class GNode:
    id: int
    name: str
    kind: str  # a key of styles.KINDS: "op", "leaf", "root", "graph_root"
    sequence_nr: int
    num_inputs: int
    device: str
    saved: tuple[tuple[int, ...], ...]
    source: str | None
    leaf: LeafInfo | None = None
    order: int | None = None  # 1-based position in the task's execution order
    tid: int | None = None  # thread that ran it
    thread: str | None = None  # that thread's name
    deps: int | None = None  # dependency count at task start
    pruned: bool = False  # exec_info says it is not needed
    error: str | None = None  # why it is drawn red: the error message, or "NaN/Inf in output"
    error_seq: int | None = None  # seq of the event that made it red
    released: bool = False  # its saved tensors were freed during the task
    # seq of the node_begin / saved_release events, so a picture at a step can hide the future
    begin_seq: int | None = None
    release_seq: int | None = None
    nested: list[int] = field(default_factory=list)  # tasks it started while running (reentrant)
    hooks: list[tuple[str, int]] = field(default_factory=list)  # (hook kind, seq) in call order
    captured: list[tuple[int, int, int]] = field(default_factory=list)  # (input_nr, output index, seq)
    state: str | None = None  # with a step: a key of styles.STATES
    state_detail: str | None = None  # "1/2 slots", "on MainThread", ...
    bucket: str | None = None  # ddp: the DDP bucket an AccumulateGrad's gradient went into
    columns: tuple[int, int] | None = None  # the op's columns on source's line (gradviz.trace.sites)


@dataclass(slots=True)  # one a node or edge of a 200k-node task: no __dict__ each
class GEdge:
    src: int
    dst: int
    slot: int  # index in src.next_edges
    input_nr: int  # InputBuffer slot of dst
    grad: GradInfo | None = None


@dataclass
class Group:
    """Nodes drawn as one box."""

    id: int
    kind: str  # "chain", "repeat", "segment", "line", "function": the pass that made it
    members: list[int]
    blocks: int | None = None  # repeat: how many identical blocks the box stands for
    key: str | None = None  # line/function: the source line or function grouped by


@dataclass
class GraphModel:
    title: str
    task: int | None
    step: int | None
    nodes: dict[int, GNode]
    edges: list[GEdge]
    roots: list[int]
    devices: list[str]
    status: str | None = None  # the task's status
    groups: dict[int, Group] = field(default_factory=dict)
    group_of: dict[int, int] = field(default_factory=dict)  # node -> group id
    notes: list[str] = field(default_factory=list)  # what was collapsed, and why
    grads: bool = False  # draw the gradients on edges
    step_label: str | None = None  # with a step: "after 40 events (the last: #39 buffer_add)"

    def unit(self, node: int) -> tuple[str, int]:
        """The box a node is drawn in: ("g", group id) or ("n", node id)."""
        g = self.group_of.get(node)
        return ("g", g) if g is not None else ("n", node)

    def drawn(self) -> int:
        """Number of boxes the picture has."""
        return len(self.groups) + sum(1 for n in self.nodes if n not in self.group_of)


# --- building the model ----------------------------------------------------------------------


def task_ids(trace: Trace) -> list[int]:
    """The trace's graph tasks, in the order they began."""
    return list(trace.tasks)


def build(trace: Trace, task: int | None = None, *, grads: bool = False) -> GraphModel:
    """The graph of one task (the nodes reachable from its roots), or the whole forward graph."""
    info = trace.nodes
    if task is not None:
        t = trace.tasks[task].begin
        starts = [r for r, _ in t.roots]
        if t.graph_root is not None and t.graph_root in info:
            starts = [t.graph_root]
        ids = _reachable(trace, [s for s in starts if s in info])
        roots = [r for r, _ in t.roots if r in info]
    else:
        ids = set(info)
        fed = {d for n in info.values() for d, _ in n.next_edges if d is not None}
        roots = [n for n in info if n not in fed]
    tensors = trace.tensors
    nodes: dict[int, GNode] = {}
    for nid in sorted(ids, key=lambda n: info[n].seq):
        n = info[nid]
        kind = "op"
        if n.name == "AccumulateGrad":
            kind = "leaf"
        if n.name == "GraphRoot":
            kind = "graph_root"
        elif nid in roots:
            kind = "root"
        leaf = None
        if n.tensor is not None:
            te = tensors.get(n.tensor)
            if te is not None:
                leaf = LeafInfo(n.tensor, te.name, te.shape, te.dtype)
            else:
                leaf = LeafInfo(n.tensor, None, (), "?")
        nodes[nid] = GNode(nid, n.name, kind, n.sequence_nr, n.num_inputs, n.device, n.saved, n.source, leaf,
                           columns=n.columns)
    edges = [
        GEdge(nid, dst, slot, input_nr)
        for nid in nodes
        for slot, (dst, input_nr) in enumerate(info[nid].next_edges)
        if dst is not None and dst in nodes
    ]
    devices = list(dict.fromkeys(n.device for n in nodes.values()))
    title = _title(trace, task)
    model = GraphModel(title, task, None, nodes, edges, roots, devices, grads=grads)
    for nid, bucket in bucket_of_node(trace).items():  # ddp: a rank's trace says its buckets
        if nid in nodes:
            nodes[nid].bucket = bucket
    if task is not None:
        _apply_task(trace, model, task)
    return model


def _title(trace: Trace, task: int | None) -> str:
    prog = trace.header.argv[0] if trace.header and trace.header.argv else (trace.path or "trace")
    if task is None:
        return f"{prog}: forward graph (no backward ran)"
    t = trace.tasks[task]
    how = "backward" if t.begin.accumulate_grad else "grad"
    depth = f", reentrant depth {t.begin.reentrant_depth}" if t.begin.reentrant_depth else ""
    return f"{prog}: graph task {task} ({how}{depth}, {t.status})"


def _seq(e: ev.Event) -> int:
    return e.seq


def _reachable(trace: Trace, starts: list[int]) -> set[int]:
    info = trace.nodes
    seen = set(starts)
    stack = list(starts)
    while stack:
        for dst, _ in info[stack.pop()].next_edges:
            if dst is not None and dst not in seen and dst in info:
                seen.add(dst)
                stack.append(dst)
    return seen


class _TaskPass:
    """What a task's node_begin, node_end and buffer_add events do to the model, from their
    fields: a lazily loaded trace hands these straight from its lines (``iter_task_events``)."""

    def __init__(self, trace: Trace, model: GraphModel, task: int) -> None:
        self.nodes = model.nodes
        self.threads = trace.threads
        self.task = task
        self.order = 0
        self.grads: dict[tuple[int, int, int], GradInfo] = {}
        self.running: dict[int, GNode] = {}  # tid -> the task's node running on it

    def begin(self, seq: int, tid: int, task: int, node_id: int) -> None:
        if task != self.task or (node := self.nodes.get(node_id)) is None:
            return
        self.running[tid] = node
        if node.order is None:
            self.order += 1
            node.order = self.order
            node.begin_seq = seq
            node.tid = tid
            th = self.threads.get(tid)
            node.thread = th.name if th else f"thread {tid}"

    def end(self, seq: int, tid: int, task: int, node_id: int, status: str) -> None:
        if task != self.task or (node := self.nodes.get(node_id)) is None:
            return
        self.running.pop(tid, None)
        if status != "ok" and node.error is None:
            node.error, node.error_seq = "raised an error", seq

    def add(self, seq: int, task: int, node_id: int, producer: int | None, slot: int,
            shape: tuple[int, ...] | None, norm: float | None, bad: bool) -> None:
        """A gradient from ``producer`` into a node of the task: the edge's GradInfo (``norm``:
        its stats' norm, None without stats; ``bad``: a NaN or Inf in it)."""
        nodes = self.nodes
        if task != self.task or producer is None or node_id not in nodes:
            return
        if bad and producer in nodes and nodes[producer].error is None:
            nodes[producer].error = "NaN/Inf in its output"
            nodes[producer].error_seq = seq
        key = (producer, node_id, slot)
        g = self.grads.get(key)
        if g is None:
            self.grads[key] = GradInfo(shape, norm, bad, seq=seq)
        else:
            g.count += 1
            g.bad = g.bad or bad


def _apply_task(trace: Trace, model: GraphModel, task: int) -> None:
    """Fill in what the task did: order, threads, dependencies, pruning, errors, grads."""
    nodes = model.nodes
    t = trace.tasks[task]
    model.status = t.status
    lo = t.begin.seq
    hi = t.end.seq if t.end is not None else math.inf
    needed: set[int] | None = None
    tp = _TaskPass(trace, model, task)
    running = tp.running
    # Only the task's span of events: rendering every task of a long trace stays linear.
    lazy = getattr(trace, "_lazy", None)
    if lazy is not None:  # a lazily loaded Trace: the many kinds go to tp from their lines
        span: Any = lazy.iter_task_events(lo, None if t.end is None else t.end.seq + 1, _APPLIED, tp)
    else:
        span = itertools.islice(trace.events, bisect.bisect_left(trace.events, lo, key=_seq), None)
    begin, end, add = ev.NodeBegin, ev.NodeEnd, ev.BufferAdd
    for e in span:
        if e.seq > hi:
            break
        t = type(e)
        if t not in _APPLIED:  # most of a backward's events (queue, decrement) change no box
            continue
        if t is begin:  # the many, first (the chain below does the rest)
            tp.begin(e.seq, e.tid, e.task, e.node)
            continue
        if t is end:
            tp.end(e.seq, e.tid, e.task, e.node, e.status)
            continue
        if t is add:
            tp.add(e.seq, e.task, e.node, e.producer, e.slot, e.shape, *ev.norm_and_bad(e.stats))
            continue
        if isinstance(e, ev.TaskBegin) and e.task != task:
            # A task begun while one of ours runs on that thread is nested in it (reentrant).
            if e.tid in running:
                running[e.tid].nested.append(e.task)
            continue
        if isinstance(e, ev.SavedRelease):  # carries no task: the task's span decides
            if e.node in nodes:
                nodes[e.node].released = True
                nodes[e.node].release_seq = e.seq
            continue
        if getattr(e, "task", None) != task:
            continue
        node = nodes.get(getattr(e, "node", None))  # type: ignore[arg-type]
        if isinstance(e, ev.Dependencies):
            for nid, count in e.counts:
                if nid in nodes:
                    nodes[nid].deps = count
        elif isinstance(e, ev.ExecInfo):
            needed = set(e.needed)
        elif node is None:
            continue
        elif isinstance(e, ev.Error):  # (node_begin, node_end and buffer_add were taken above)
            node.error = f"{e.type}: {e.message}"
            node.error_seq = node.error_seq if node.error_seq is not None else e.seq
        elif isinstance(e, ev.Anomaly):
            if node.error is None:
                node.error, node.error_seq = e.message, e.seq
        elif isinstance(e, ev.Hook):
            node.hooks.append((e.hook, e.seq))
        elif isinstance(e, ev.CapturedGrad):
            node.captured.append((e.input_nr, e.index, e.seq))
        elif isinstance(e, ev.AccumulateGradUpdate):
            if node.leaf is not None:
                node.leaf.grad_norm = e.after.norm
                node.leaf.grad_seq = e.seq
                node.leaf.grad_bad = e.after.nan > 0 or e.after.inf > 0
    if needed is not None:
        for nid, n in nodes.items():
            n.pruned = nid not in needed
    grads = tp.grads
    for edge in model.edges:
        edge.grad = grads.get((edge.src, edge.dst, edge.input_nr))


# The event types _apply_task acts on; the loop passes over every other one.
_APPLIED = frozenset({
    ev.TaskBegin, ev.SavedRelease, ev.Dependencies, ev.ExecInfo, ev.NodeBegin, ev.NodeEnd, ev.Error,
    ev.Anomaly, ev.BufferAdd, ev.Hook, ev.CapturedGrad, ev.AccumulateGradUpdate,
})


def apply_state(trace: Trace, model: GraphModel, step: int) -> None:
    """Colour each node by its state after the first ``step`` events (gradviz.replay's fold)."""
    from gradviz.replay.state import state_once  # the one fold; render must not keep a second
    from gradviz.replay.views import after_events

    st = state_once(trace, step)
    model.step = step
    model.step_label = after_events(step, st.last)
    threads = trace.threads
    for nid, n in model.nodes.items():
        ns = st.nodes.get(nid)
        if ns is None:  # created after the step
            n.state, n.state_detail = "unreached", "not created yet"
            continue
        if model.task is not None and ns.task != model.task and _state_in_task(n, model.task, ns, step):
            continue  # a node shared with another task (a leaf of a training loop): its state in ours
        n.state = ns.state
        if ns.state in ("parked", "arriving"):
            n.state_detail = f"{ns.filled}/{ns.num_inputs} slots filled"
            ts = st.task(ns.task) if ns.task is not None else None
            buf = ts.not_ready.get(nid) if ts is not None else None
            if buf is not None and buf.remaining:
                # Count gradients, not slots: one slot fed by two edges is "filled" after the
                # first, which beside "1 dependency missing" read as a contradiction.
                got = sum(len(sl.producers) for sl in buf.slots)
                n.state_detail = f"{got} of {got + buf.remaining} gradients in"
                if ns.num_inputs > 1:
                    n.state_detail += f" ({ns.filled}/{ns.num_inputs} slots)"
        elif ns.state == "queued" and ns.num_inputs > 1:
            n.state_detail = f"{ns.filled}/{ns.num_inputs} slots filled"
        elif ns.state == "running" and ns.tid is not None:
            th = threads.get(ns.tid)
            n.state_detail = f"on {th.name if th else f'thread {ns.tid}'}"
        if model.task is not None and ns.task not in (None, model.task) and ns.state != "unreached":
            n.state_detail = ((n.state_detail or "") + f" (task {ns.task})").strip()


def _state_in_task(n: GNode, task: int, ns: Any, step: int) -> bool:
    """Set ``n``'s state in the drawn ``task`` when the fold's refers to another task; False
    when the fold's state stands (the task has not begun at ``step``: nothing of it shows)."""
    ran = n.begin_seq is not None and n.begin_seq < step
    if ran:
        released = n.released and n.release_seq is not None and n.release_seq < step
        n.state = "released" if released else "done"
        n.state_detail = f"ran in task {task}"
        return True
    if ns.task is not None and ns.task > task:  # our task is over for it: it did not run in it
        n.state, n.state_detail = ("pruned", None) if n.pruned else ("unreached", f"did not run in task {task}")
        return True
    return False


# --- collapsing -------------------------------------------------------------------------------


def collapse(model: GraphModel, max_nodes: int, *, group_by: str | None = None, expand: bool = False) -> None:
    """Put nodes into boxes until at most ``max_nodes`` boxes remain (nothing if ``expand``).

    Passes, each only while there are too many boxes: long linear chains, then runs of
    identical blocks along the graph's main paths, then segments of the main paths. Grouping
    by source line or function (``group_by``) runs first, when asked for. Every box records the
    pass that made it, and ``model.notes`` says what was collapsed.
    """
    total = len(model.nodes)
    uf = _UnionFind()
    kinds: dict[int, set[str]] = defaultdict(set)  # root of a set -> passes that merged it
    keys: dict[int, str] = {}
    blocks: dict[int, int] = {}

    n_sets = [total]  # boxes so far: every union of two sets makes one fewer (members are model nodes)

    def union_all(members: list[int], kind: str) -> int:
        r = uf.find(members[0])
        for m in members[1:]:
            rm = uf.find(m)
            if rm != r:
                uf.parent[rm] = r
                n_sets[0] -= 1
                # Keep what earlier passes recorded about the set being absorbed.
                if rm in kinds:
                    kinds[r] |= kinds.pop(rm)
                if rm in keys:
                    keys.setdefault(r, keys.pop(rm))
                if rm in blocks:
                    blocks[r] = blocks.get(r, 0) + blocks.pop(rm)
        kinds[r].add(kind)
        return r

    def count() -> int:  # counted as sets merge: a find a node, five times over, was a second
        return n_sets[0]

    if group_by in ("line", "function"):
        by: dict[str, list[int]] = defaultdict(list)
        for nid, n in model.nodes.items():
            k = _group_key(n.source, group_by)
            if k is not None:
                by[k].append(nid)
        made = 0
        for k, members in by.items():
            if len(members) > 1:
                keys[union_all(members, group_by)] = k
                made += 1
        if made:
            model.notes.append(f"grouped by source {group_by}: {made} boxes (--group-by)")
    elif group_by not in (None, "none"):
        raise ValueError(f"unknown grouping {group_by!r} (line, function)")

    if not expand and count() > max_nodes:
        g = _Graph(model)
        for kind in PASSES:
            before = count()
            if before <= max_nodes:
                break
            if kind == "chain":
                runs = g.chains()
                for run in runs:
                    union_all(run, "chain")
                if runs:
                    n = sum(len(r) for r in runs)
                    model.notes.append(f"{_n(len(runs), 'linear chain')} ({n} nodes) drawn as one box each")
            elif kind == "repeat":
                reps = g.repeats()
                for members, k in reps:
                    blocks[union_all(members, "repeat")] = k
                if reps:
                    n = sum(len(m) for m, _ in reps)
                    model.notes.append(f"{_n(len(reps), 'run')} of identical blocks ({n} nodes) drawn as one box each")
            elif kind == "segment":
                segs = g.segments(uf, max_nodes)
                for seg in segs:
                    union_all(seg, "segment")
                model.notes.append(
                    f"main paths cut into {len(segs)} segments, one box each, to stay under {max_nodes} boxes"
                )
        if count() < before or model.notes:
            model.notes.append(
                f"{total} nodes drawn as {count()} boxes (--max-nodes {max_nodes}); --expand draws every node"
            )
    # Sets of one node are drawn as the node itself.
    sets: dict[int, list[int]] = defaultdict(list)
    for nid in model.nodes:
        sets[uf.find(nid)].append(nid)
    gid = 0
    for r, members in sets.items():
        if len(members) < 2:
            continue
        gid += 1
        ks = kinds.get(r, set())
        # Several passes can merge into one set: name it after the coarsest.
        kind = next((k for k in ("segment", "repeat", "function", "line", "chain") if k in ks), "segment")
        reps = blocks.get(r) if kind == "repeat" else None
        model.groups[gid] = Group(gid, kind, members, reps, keys.get(r))
        for m in members:
            model.group_of[m] = gid


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _group_key(source: str | None, by: str) -> str | None:
    if not source:
        return None
    if by == "line":
        return source
    file, _, line = source.rpartition(":")
    fn = _function_at(file, int(line)) if line.isdigit() else None
    return f"{file}: {fn}" if fn else file


@lru_cache(maxsize=64)
def _functions(file: str) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, qualified name) of every function in a readable source file."""
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return ()
    out = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out.append((child.lineno, child.end_lineno or child.lineno, name + "()"))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return tuple(out)


def _function_at(file: str, line: int) -> str | None:
    """The innermost function of ``file`` containing ``line``; "<module>" outside any."""
    inner = [f for f in _functions(file) if f[0] <= line <= f[1]]
    if not inner:
        return "<module>" if Path(file).is_file() else None
    return max(inner, key=lambda f: f[0])[2]


def summarize(model: GraphModel, members: list[int], top: int = 4) -> str:
    """ "MulBackward0 ×40 · SinBackward0 ×30 · …" for the names in a box, most frequent first."""
    names = Counter(model.nodes[m].name for m in members)
    parts = [f"{n} ×{c}" if c > 1 else n for n, c in names.most_common(top)]
    more = len(names) - top
    return " · ".join(parts) + (f" · +{more} more kinds" if more > 0 else "")


def source_span(model: GraphModel, members: list[int]) -> str | None:
    """ "file.py:8–14" (or several files) for the nodes in a box."""
    by_file: dict[str, list[int]] = defaultdict(list)
    for m in members:
        src = model.nodes[m].source
        if src and ":" in src:
            f, _, line = src.rpartition(":")
            if line.isdigit():
                by_file[f].append(int(line))
    if not by_file:
        return None
    parts = []
    for f, lines in sorted(by_file.items(), key=lambda kv: -len(kv[1]))[:2]:
        lo, hi = min(lines), max(lines)
        parts.append(f"{f}:{lo}" if lo == hi else f"{f}:{lo}–{hi}")
    more = len(by_file) - 2
    return ", ".join(parts) + (f" +{more} files" if more > 0 else "")
