"""Compare two traces: where did two runs of autograd first part ways?

``diff(a, b)`` aligns the traces task by task (the n-th backward/grad call of one with the n-th of
the other) and, inside a task, node by node by their position in the graph: the nodes are
numbered in the order a walk from the task's roots (or its GraphRoot) first meets them, taking
next_edges slot by slot, so the same program gives the same numbering whatever ids each engine
gave. It reports the first divergence of each kind:

- ``structure``: a task missing, a node's name, its edges (slot -> node, input_nr);
- ``order``: the nodes the task ran, in order;
- ``gradient``: a gradient handed from one node to another (keyed by producer, receiver and slot,
  so a different order of contributions is not a divergence), a leaf's .grad after
  AccumulateGrad, a captured grad() output: norm/min/max beyond ``rtol``/``atol``, NaN/Inf counts;
- ``error``: the errors each task raised.

Two traces of one script recorded by torch (``--engine torch``) and by gradviz's engine give
none. Works on any two traces; needs no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gradviz.trace import events as ev

KINDS = ("structure", "order", "gradient", "error")


@dataclass(frozen=True)
class Divergence:
    kind: str  # one of KINDS
    task: int | None  # the task's position (1 = the first backward/grad call); None: the whole trace
    message: str
    seq_a: int | None = None  # the event in each trace where it shows, if any
    seq_b: int | None = None

    def __str__(self) -> str:
        where = f"task {self.task}: " if self.task is not None else ""
        return f"{self.kind}: {where}{self.message}"


class _Task:
    """One task of a trace, with its nodes numbered by graph position."""

    def __init__(self, trace: Any, begin: ev.TaskBegin):
        self.begin = begin
        nodes = trace.nodes
        starts = [begin.graph_root] if begin.graph_root is not None else [n for n, _ in begin.roots]
        self.pos: dict[int, int] = {}
        order: list[int] = []
        for s in starts:
            if s not in self.pos:
                self.pos[s] = len(order)
                order.append(s)
        i = 0
        while i < len(order):
            info = nodes.get(order[i])
            i += 1
            for dst, _ in info.next_edges if info is not None else ():
                if dst is not None and dst not in self.pos:
                    self.pos[dst] = len(order)
                    order.append(dst)
        self.order = order
        self.nodes = nodes
        self.ran: list[tuple[int, int]] = []  # (node id, seq)
        self.grads: dict[tuple, tuple[ev.Stats | None, int]] = {}
        self.errors: list[tuple[str, str, str | None, int]] = []

    def name(self, nid: int | None) -> str:
        if nid is None:
            return "-"
        info = self.nodes.get(nid)
        return info.name if info is not None else f"node {nid}"

    def label(self, nid: int | None) -> str:
        return f"{self.name(nid)} (#{self.pos.get(nid, '?')})" if nid is not None else "the roots"

    def structure(self) -> list[tuple]:
        out = []
        for nid in self.order:
            info = self.nodes.get(nid)
            edges = tuple((self.pos.get(d) if d is not None else None, nr) for d, nr in info.next_edges) if info else ()
            out.append((self.name(nid), edges))
        return out


def _tasks(trace: Any) -> list[_Task]:
    tasks: dict[int, _Task] = {}
    listed: list[_Task] = []
    for e in trace.events:
        k = type(e)
        if k is ev.TaskBegin:
            t = tasks[e.task] = _Task(trace, e)
            listed.append(t)
        elif k is ev.NodeBegin:
            t = tasks.get(e.task)
            if t is not None:
                t.ran.append((e.node, e.seq))
        elif k is ev.BufferAdd:
            t = tasks.get(e.task)
            if t is not None and e.mode != "undefined":
                key = ("buffer", t.pos.get(e.producer, -1), t.pos.get(e.node), e.slot)
                t.grads.setdefault(key, (e.stats, e.seq))
        elif k is ev.AccumulateGradUpdate:
            t = tasks.get(e.task)
            if t is not None:
                t.grads[("leaf", t.pos.get(e.node))] = (e.after, e.seq)
        elif k is ev.CapturedGrad:
            t = tasks.get(e.task)
            if t is not None:
                t.grads[("captured", e.index)] = (e.stats, e.seq)
        elif k is ev.Error and e.task is not None:
            t = tasks.get(e.task)
            if t is not None:
                t.errors.append((e.type, e.message, t.name(e.node) if e.node is not None else None, e.seq))
    return listed


def _close(x: float, y: float, rtol: float, atol: float) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= atol + rtol * max(abs(x), abs(y))


def _stats_differ(a: ev.Stats | None, b: ev.Stats | None, rtol: float, atol: float) -> str | None:
    if a is None or b is None:
        word = {True: "undefined", False: "defined"}
        return None if a is b else f"{word[a is None]} vs {word[b is None]}"
    for f in ("norm", "min", "max"):
        x, y = getattr(a, f), getattr(b, f)
        if not _close(x, y, rtol, atol):
            return f"{f} {x:.6g} vs {y:.6g}"
    for f in ("nan", "inf"):
        if getattr(a, f) != getattr(b, f):
            return f"{f} count {getattr(a, f)} vs {getattr(b, f)}"
    return None


def _grad_label(t: _Task, key: tuple) -> str:
    if key[0] == "buffer":
        prod = t.order[key[1]] if 0 <= key[1] < len(t.order) else None
        dst = t.order[key[2]] if key[2] is not None and key[2] < len(t.order) else None
        return f"gradient {t.label(prod)} -> {t.label(dst)} slot {key[3]}"
    if key[0] == "leaf":
        nid = t.order[key[1]] if key[1] is not None and key[1] < len(t.order) else None
        info = t.nodes.get(nid) if nid is not None else None
        return f"leaf .grad at {t.label(nid)}" + (f" (tensor {info.tensor})" if info and info.tensor else "")
    return f"grad() output {key[1]}"


def diff(a: Any, b: Any, *, rtol: float = 1e-4, atol: float = 1e-6) -> list[Divergence]:
    """The first divergence of each kind between traces `a` and `b` (``gradviz.load`` results)."""
    found: dict[str, Divergence] = {}

    def note(d: Divergence) -> None:
        found.setdefault(d.kind, d)

    ta, tb = _tasks(a), _tasks(b)
    if len(ta) != len(tb):
        note(Divergence("structure", None, f"{len(ta)} tasks vs {len(tb)} tasks"))
    for i, (x, y) in enumerate(zip(ta, tb), start=1):
        _task_diff(i, x, y, rtol, atol, note)
    return [found[k] for k in KINDS if k in found]


def _task_diff(i: int, x: _Task, y: _Task, rtol: float, atol: float, note: Any) -> None:
    sx, sy = x.structure(), y.structure()
    for p, (nx, ny) in enumerate(zip(sx, sy)):
        if nx[0] != ny[0]:
            note(Divergence("structure", i, f"node #{p}: {nx[0]} vs {ny[0]}", x.begin.seq, y.begin.seq))
            break
        if nx[1] != ny[1]:
            note(Divergence("structure", i, f"{nx[0]} (#{p}) edges {list(nx[1])} vs {list(ny[1])}",
                            x.begin.seq, y.begin.seq))  # fmt: skip
            break
    else:
        if len(sx) != len(sy):
            note(Divergence("structure", i, f"{len(sx)} nodes vs {len(sy)} nodes", x.begin.seq, y.begin.seq))
    ox = [(x.pos.get(n), x.name(n), s) for n, s in x.ran]
    oy = [(y.pos.get(n), y.name(n), s) for n, s in y.ran]
    for k, (px, py) in enumerate(zip(ox, oy)):
        if px[:2] != py[:2]:
            note(Divergence("order", i, f"step {k}: {px[1]} (#{px[0]}) ran vs {py[1]} (#{py[0]})", px[2], py[2]))
            break
    else:
        if len(ox) != len(oy):
            note(Divergence("order", i, f"{len(ox)} nodes ran vs {len(oy)}"))
    first: tuple[int, Divergence] | None = None
    for key, (sa, qa) in x.grads.items():
        if key not in y.grads:
            continue
        sb, qb = y.grads[key]
        why = _stats_differ(sa, sb, rtol, atol)
        if why is not None and (first is None or qa < first[0]):
            first = (qa, Divergence("gradient", i, f"{_grad_label(x, key)}: {why}", qa, qb))
    if first is not None:
        note(first[1])
    ex = [(e[0], e[2]) for e in x.errors]  # the type and the node: messages may word details apart
    ey = [(e[0], e[2]) for e in y.errors]
    if ex != ey:
        k = next((j for j, (p, q) in enumerate(zip(ex, ey)) if p != q), min(len(ex), len(ey)))
        da = ex[k] if k < len(ex) else None
        db = ey[k] if k < len(ey) else None

        def fmt(e: Any) -> str:
            return "no error" if e is None else e[0] + (f" in {e[1]}" if e[1] else "")

        note(Divergence("error", i, f"{fmt(da)} vs {fmt(db)}",
                        x.errors[k][3] if da else None, y.errors[k][3] if db else None))  # fmt: skip
