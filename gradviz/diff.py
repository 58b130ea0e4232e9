"""Compare two traces: where did two runs of autograd first part ways?

``compare(a, b)`` looks first at how each run ended (status, the program's error), then aligns
the traces task by task (the n-th backward/grad call of one with the n-th of the other) and,
inside a task, node by node by their position in the graph: the nodes are numbered in the order
a walk from the task's roots (or its GraphRoot) first meets them, taking next_edges slot by
slot, so the same program gives the same numbering whatever ids each engine gave. It reports
the first divergence of each kind, in this order:

- ``status``: one run finished and the other failed, was interrupted or was cut short;
- ``error``: the program's error, and the errors each task raised;
- ``inputs``: a leaf's values (as it joined the graph) differ: the runs started from different
  numbers (an unseeded script), so their gradients are not compared and none is blamed;
- ``structure``: a task missing, a node's name, its edges (slot -> node, input_nr);
- ``hook``: a hook one run called and the other did not, keyed by node, hook kind and the
  function's qualified name (the fields both engines' recordings share);
- ``saved``: the shapes of the tensors a node saved for backward;
- ``order``: the nodes the task ran, in order;
- ``gradient``: a gradient handed from one node to another (keyed by producer, receiver and slot,
  so a different order of contributions is not a divergence), a leaf's .grad after
  AccumulateGrad, a captured grad() output: norm/min/max beyond ``rtol``/``atol``, NaN/Inf counts.

Once a task's structure differs, nothing after it is compared: positions no longer name the same
node, so a gradient line would read as a wrong value. The result says so, and says what was
compared and what could not be (``Comparison.summary``).

Work is bounded by the inputs' size: numbering a task walks its graph, and the walks of all tasks
together may visit at most ``WALK_PER_EVENT`` nodes per event of the two traces (a real trace
runs the nodes it reaches, an event or more each; a crafted one can root thousands of tasks in
one big graph). Past it, the remaining tasks are listed as not compared.

Two traces of one script recorded by torch (``--engine torch``) and by gradviz's engine give
none. Works on any two traces; needs no torch.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gradviz.trace import events as ev

KINDS = ("status", "error", "inputs", "structure", "hook", "saved", "order", "gradient")
WALK_PER_EVENT = 4  # graph-walk steps allowed per event of the inputs (see the module doc)
WALK_FLOOR = 100_000  # ... and at least this many, for small traces of big retained graphs
MAX_SHOWN = 12  # edges or shapes listed in one message; the rest is counted


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


@dataclass
class Comparison:
    """What ``compare`` found, what it compared and what it could not."""

    divergences: list[Divergence]
    compared: dict[str, int]  # "tasks", "nodes", "edges", "hooks", "saved tensors", "gradients" -> count
    not_compared: list[str]  # what could not be compared, each with why
    rtol: float
    atol: float

    def summary(self) -> list[str]:
        """Two lines: what was compared (with the tolerance), and what was not."""
        c = self.compared
        kinds = ("tasks", "nodes", "edges", "leaf inputs", "hooks", "saved tensors")
        parts = [f"{c.get(k, 0):,} {k}" for k in kinds]
        parts.append(f"{c.get('gradients', 0):,} gradients (rtol {self.rtol:g}, atol {self.atol:g})")
        lines = ["compared: run status and errors, " + ", ".join(parts)]
        skipped = list(self.not_compared)
        unknown = c.get("leaf inputs, not recorded", 0)
        if unknown:
            leaves = "leaves" if unknown > 1 else "leaf"
            skipped.append(f"the values of {unknown:,} {leaves}: a trace does not record them")
        one_sided = c.get("saved, listed by one trace only", 0)
        if one_sided:
            skipped.append(f"saved tensors of {one_sided:,} node{'s' if one_sided > 1 else ''}: one trace lists none")
        if skipped:
            lines.append("not compared: " + "; ".join(skipped))
        return lines


class _Runs:
    """What one trace's tasks did, by node id (positions come later, pair by pair)."""

    def __init__(self, trace: Any):
        self.trace = trace
        self.nodes = trace.nodes
        self.tensors = trace.tensors
        self.leaves_seen: set[int] = set()  # tensors whose values were compared already
        self.begins: list[ev.TaskBegin] = []
        self.ran: dict[int, list[tuple[int, int]]] = {}  # task -> (node id, seq)
        self.grads: dict[int, dict[tuple, tuple[ev.Stats | None, int]]] = {}  # task -> key by ids
        self.hooks: dict[int, list[tuple[int, str, str, int]]] = {}  # task -> (node, kind, name, seq)
        self.errors: dict[int, list[tuple[str, int | None, int]]] = {}  # task -> (type, node, seq)
        types = frozenset({ev.TaskBegin, ev.NodeBegin, ev.BufferAdd, ev.AccumulateGradUpdate, ev.CapturedGrad,
                           ev.Error, ev.Hook})  # fmt: skip
        known: set[int] = set()
        for e in trace.iter_events(types=types):
            k = type(e)
            if k is ev.TaskBegin:
                if e.task not in known:
                    known.add(e.task)
                    self.begins.append(e)
                    self.ran[e.task], self.grads[e.task], self.hooks[e.task], self.errors[e.task] = [], {}, [], []
                continue
            task = e.task
            if task not in known:
                continue
            if k is ev.NodeBegin:
                self.ran[task].append((e.node, e.seq))
            elif k is ev.BufferAdd:
                if e.mode != "undefined":
                    self.grads[task].setdefault(("buffer", e.producer, e.node, e.slot), (e.stats, e.seq))
            elif k is ev.AccumulateGradUpdate:
                self.grads[task][("leaf", e.node)] = (e.after, e.seq)
            elif k is ev.CapturedGrad:
                self.grads[task][("captured", e.index)] = (e.stats, e.seq)
            elif k is ev.Hook:
                self.hooks[task].append((e.node, e.hook, e.name, e.seq))
            elif k is ev.Error:
                self.errors[task].append((e.type, e.node, e.seq))

    def name(self, nid: int | None) -> str:
        info = self.nodes.get(nid) if nid is not None else None
        return info.name if info is not None else f"node {nid}"


class _Numbering:
    """One task's nodes numbered by graph position (see the module doc)."""

    def __init__(self, runs: _Runs, begin: ev.TaskBegin, budget: list[int]):
        nodes = runs.nodes
        starts = [begin.graph_root] if begin.graph_root is not None else [n for n, _ in begin.roots]
        self.pos: dict[int, int] = {}
        order: list[int] = []
        for s in starts:
            if s not in self.pos:
                self.pos[s] = len(order)
                order.append(s)
        self.complete = True
        i = 0
        while i < len(order):
            if budget[0] <= 0:
                self.complete = False
                break
            budget[0] -= 1
            info = nodes.get(order[i])
            i += 1
            for dst, _ in info.next_edges if info is not None else ():
                if dst is not None and dst not in self.pos:
                    self.pos[dst] = len(order)
                    order.append(dst)
        self.order = order
        self.runs = runs

    def label(self, nid: int | None) -> str:
        return f"{self.runs.name(nid)} (#{self.pos.get(nid, '?')})" if nid is not None else "the roots"

    def at(self, p: int | None) -> int | None:
        return self.order[p] if p is not None and 0 <= p < len(self.order) else None


class _Found:
    """The first divergence of each kind, and what could not be compared (each said once)."""

    def __init__(self) -> None:
        self.found: dict[str, Divergence] = {}
        self.skipped: list[str] = []

    def __call__(self, d: Divergence) -> None:
        self.found.setdefault(d.kind, d)

    def has(self, kind: str) -> bool:
        return kind in self.found

    def skip(self, what: str) -> None:
        if what not in self.skipped:
            self.skipped.append(what)


def _shown(items: list[Any]) -> str:
    more = len(items) - MAX_SHOWN
    return "[" + ", ".join(map(str, items[:MAX_SHOWN])) + (f", ... +{more}" if more > 0 else "") + "]"


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


def _ended(trace: Any) -> str:
    """How a run ended, in words: "finished (ok)", "failed (error: ValueError: ...)", ..."""
    status = trace.status
    end = trace.end
    if status == "ok":
        return "finished (ok)"
    if status == "unfinished":
        return "unfinished (the trace was cut short: no trace_end)"
    err = f": {end.error}" if end is not None and end.error else ""
    return f"{'failed' if status == 'error' else status} ({status}{err})"


def _error_type(trace: Any) -> str | None:
    end = trace.end
    return end.error.split(":", 1)[0] if end is not None and end.error else None


def compare(a: Any, b: Any, *, rtol: float = 1e-4, atol: float = 1e-6) -> Comparison:
    """Compare traces `a` and `b` (``gradviz.load`` results): the first divergence of each kind,
    what was compared and what was not."""
    note = _Found()
    found, skipped = note.found, note.skipped
    compared: Counter[str] = Counter()

    if a.status != b.status:
        note(Divergence("status", None, f"A {_ended(a)} vs B {_ended(b)}"))
    elif _error_type(a) != _error_type(b):
        note(Divergence("error", None, f"the program raised {_error_type(a)} vs {_error_type(b)}"))
    ra, rb = _Runs(a), _Runs(b)
    na, nb = len(ra.begins), len(rb.begins)
    if na != nb:
        note(Divergence("structure", None, f"{na} tasks vs {nb} tasks"))
        skipped.append(f"tasks {min(na, nb) + 1}..{max(na, nb)}: only in {'A' if na > nb else 'B'}")
    budget = [WALK_PER_EVENT * (len(a) + len(b)) + WALK_FLOOR]
    for i, (x, y) in enumerate(zip(ra.begins, rb.begins), start=1):
        px, py = _Numbering(ra, x, budget), _Numbering(rb, y, budget)
        if not (px.complete and py.complete):
            skipped.append(
                f"tasks {i}..{min(na, nb)}: their graphs hold more nodes than the traces have events "
                f"(a walk of {WALK_PER_EVENT} nodes an event was spent)"
            )
            break
        compared["tasks"] += 1
        if not _task_diff(i, ra, rb, px, py, rtol, atol, note, compared):
            if i < min(na, nb):
                skipped.append(f"tasks {i + 1}..{min(na, nb)}: not comparable once task {i}'s structure differs")
            break
    return Comparison([found[k] for k in KINDS if k in found], dict(compared), skipped, rtol, atol)


def diff(a: Any, b: Any, *, rtol: float = 1e-4, atol: float = 1e-6) -> list[Divergence]:
    """The first divergence of each kind between traces `a` and `b` (``gradviz.load`` results)."""
    return compare(a, b, rtol=rtol, atol=atol).divergences


def _structure(p: _Numbering) -> list[tuple[str, tuple, tuple]]:
    nodes = p.runs.nodes
    out = []
    for nid in p.order:
        info = nodes.get(nid)
        edges = tuple((p.pos.get(d) if d is not None else None, nr) for d, nr in info.next_edges) if info else ()
        # Saved shapes as a multiset: the order each engine lists a node's saved tensors in is its own.
        out.append((p.runs.name(nid), edges, tuple(sorted(map(tuple, info.saved))) if info else ()))
    return out


def _task_diff(
    i: int, ra: _Runs, rb: _Runs, px: _Numbering, py: _Numbering, rtol: float, atol: float, note: _Found,
    compared: Counter[str],
) -> bool:  # fmt: skip
    """Compare task ``i`` of both; False when its structure differs (nothing more is comparable)."""
    bx, by = ra.begins[i - 1], rb.begins[i - 1]
    tx, ty = bx.task, by.task
    # Errors first: a task that raised in one run only says more than the gradients after it.
    ex = [(t, ra.name(n) if n is not None else None, s) for t, n, s in ra.errors[tx]]
    ey = [(t, rb.name(n) if n is not None else None, s) for t, n, s in rb.errors[ty]]
    if [e[:2] for e in ex] != [e[:2] for e in ey]:  # the type and the node: messages may word details apart
        k = next((j for j, (p, q) in enumerate(zip(ex, ey)) if p[:2] != q[:2]), min(len(ex), len(ey)))
        da = ex[k] if k < len(ex) else None
        db = ey[k] if k < len(ey) else None

        def fmt(e: Any) -> str:
            return "no error" if e is None else e[0] + (f" in {e[1]}" if e[1] else "")

        note(Divergence("error", i, f"{fmt(da)} vs {fmt(db)}", da[2] if da else None, db[2] if db else None))
    sx, sy = _structure(px), _structure(py)
    for p, (nx, ny) in enumerate(zip(sx, sy)):
        if nx[0] != ny[0]:
            note(Divergence("structure", i, f"node #{p}: {nx[0]} vs {ny[0]}", bx.seq, by.seq))
            return False
        if nx[1] != ny[1]:
            note(Divergence("structure", i, f"{nx[0]} (#{p}) edges {_shown(list(nx[1]))} vs {_shown(list(ny[1]))}",
                            bx.seq, by.seq))  # fmt: skip
            return False
    if len(sx) != len(sy):
        note(Divergence("structure", i, f"{len(sx)} nodes vs {len(sy)} nodes", bx.seq, by.seq))
        return False
    compared["nodes"] += len(sx)
    compared["edges"] += sum(len(n[1]) for n in sx)
    for p, (nx, ny) in enumerate(zip(sx, sy)):
        if bool(nx[2]) != bool(ny[2]):
            # One trace lists none: a recording that cannot see them (torch's hooks do not show
            # what a custom Function saved) rather than a node that saved nothing.
            compared["saved, listed by one trace only"] += 1
            continue
        compared["saved tensors"] += len(nx[2])
        if nx[2] != ny[2]:
            note(Divergence("saved", i, f"{nx[0]} (#{p}) saved shapes {_shown(list(nx[2]))} vs {_shown(list(ny[2]))}",
                            bx.seq, by.seq))  # fmt: skip
            break
    if not note.has("gradient"):
        _inputs_diff(i, ra, rb, px, py, rtol, atol, note, compared)
    _hooks_diff(i, ra, rb, px, py, note, compared)
    ox = [(px.pos.get(n), ra.name(n), s) for n, s in ra.ran[tx]]
    oy = [(py.pos.get(n), rb.name(n), s) for n, s in rb.ran[ty]]
    for k, (qx, qy) in enumerate(zip(ox, oy)):
        if qx[:2] != qy[:2]:
            note(Divergence("order", i, f"step {k}: {qx[1]} (#{qx[0]}) ran vs {qy[1]} (#{qy[0]})", qx[2], qy[2]))
            break
    else:
        if len(ox) != len(oy):
            note(Divergence("order", i, f"{len(ox)} nodes ran vs {len(oy)}"))
    if note.has("inputs"):
        note.skip("gradients: the runs' leaf inputs differ, so their gradients would too")
    else:
        _grads_diff(i, ra, rb, px, py, rtol, atol, note, compared)
    return True


def _inputs_diff(i: int, ra: _Runs, rb: _Runs, px: _Numbering, py: _Numbering, rtol: float, atol: float,
                 note: _Found, compared: Counter[str]) -> None:  # fmt: skip
    """The leaves met in this task for the first time: their values as they joined the graph."""
    na, nb = ra.nodes, rb.nodes
    for nid_a, nid_b in zip(px.order, py.order):
        ia, ib = na.get(nid_a), nb.get(nid_b)
        if ia is None or ib is None or ia.tensor is None or ib.tensor is None:
            continue
        if ia.tensor in ra.leaves_seen or ib.tensor in rb.leaves_seen:
            continue
        ra.leaves_seen.add(ia.tensor)
        rb.leaves_seen.add(ib.tensor)
        ta, tb = ra.tensors.get(ia.tensor), rb.tensors.get(ib.tensor)
        if ta is None or tb is None or ta.stats is None or tb.stats is None:
            compared["leaf inputs, not recorded"] += 1
            continue
        compared["leaf inputs"] += 1
        why = _stats_differ(ta.stats, tb.stats, rtol, atol)
        if why is not None:
            name = ta.name or tb.name or f"tensor {ia.tensor}"
            note(Divergence("inputs", i, f"leaf {name} at {px.label(nid_a)} differs before any gradient: {why}; "
                            "the runs start from different values (an unseeded script?), so no gradient is blamed",
                            ta.seq, tb.seq))  # fmt: skip
            return


def _hooks_diff(i: int, ra: _Runs, rb: _Runs, px: _Numbering, py: _Numbering, note: _Found,
                compared: Counter[str]) -> None:  # fmt: skip
    """Hooks as a multiset of (node position, hook kind, qualified name): the same hooks called
    in another order are no divergence; one more or one fewer is."""
    hx = [(px.pos.get(n), kind, name, s) for n, kind, name, s in ra.hooks[ra.begins[i - 1].task]]
    hy = [(py.pos.get(n), kind, name, s) for n, kind, name, s in rb.hooks[rb.begins[i - 1].task]]
    compared["hooks"] += max(len(hx), len(hy))
    cx, cy = Counter(h[:3] for h in hx), Counter(h[:3] for h in hy)
    if cx == cy:
        return
    only_a, only_b = cx - cy, cy - cx
    # The first in event order of either run.
    first = min([(h[3], "A", h) for h in hx if only_a[h[:3]] > 0] + [(h[3], "B", h) for h in hy if only_b[h[:3]] > 0])
    _, side, (pos, kind, name, seq) = first
    num = px if side == "A" else py
    other = "B" if side == "A" else "A"
    msg = f"{side} called {kind} hook {name} on {num.label(num.at(pos))}; {other} did not"
    extra = sum(only_a.values()) + sum(only_b.values()) - 1
    if extra:
        msg += f" (and {extra} more hook call{'s' if extra > 1 else ''} differ)"
    note(Divergence("hook", i, msg, seq if side == "A" else None, seq if side == "B" else None))


def _grads_diff(i: int, ra: _Runs, rb: _Runs, px: _Numbering, py: _Numbering, rtol: float, atol: float,
                note: _Found, compared: Counter[str]) -> None:  # fmt: skip
    def keyed(runs: _Runs, p: _Numbering) -> dict[tuple, tuple[ev.Stats | None, int]]:
        out = {}
        pos = p.pos
        for key, v in runs.grads[runs.begins[i - 1].task].items():
            if key[0] == "buffer":
                key = ("buffer", pos.get(key[1], -1), pos.get(key[2]), key[3])
            elif key[0] == "leaf":
                key = ("leaf", pos.get(key[1]))
            out[key] = v
        return out

    gx, gy = keyed(ra, px), keyed(rb, py)
    first: tuple[int, Divergence] | None = None
    for key, (sa, qa) in gx.items():
        if key not in gy:
            continue
        compared["gradients"] += 1
        sb, qb = gy[key]
        why = _stats_differ(sa, sb, rtol, atol)
        if why is not None and (first is None or qa < first[0]):
            first = (qa, Divergence("gradient", i, f"{_grad_label(px, key)}: {why}", qa, qb))
    if first is not None:
        note(first[1])


def _grad_label(p: _Numbering, key: tuple) -> str:
    if key[0] == "buffer":
        return f"gradient {p.label(p.at(key[1]))} -> {p.label(p.at(key[2]))} slot {key[3]}"
    if key[0] == "leaf":
        nid = p.at(key[1])
        info = p.runs.nodes.get(nid) if nid is not None else None
        return f"leaf .grad at {p.label(nid)}" + (f" (tensor {info.tensor})" if info and info.tensor else "")
    return f"grad() output {key[1]}"


__all__ = ["KINDS", "Comparison", "Divergence", "compare", "diff"]
