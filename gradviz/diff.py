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
  function's qualified name (the fields both engines' recordings share; retain_grad()'s hook,
  each engine's own function, by its kind alone);
- ``saved``: the shapes of the tensors a node saved for backward;
- ``order``: the nodes the task ran, in order;
- ``gradient``: a gradient handed from one node to another (keyed by producer, receiver and slot,
  so a different order of contributions is not a divergence), a leaf's .grad after
  AccumulateGrad, a captured grad() output: norm/min/max beyond ``rtol``/``atol``, NaN/Inf counts.

Once a task's structure differs, nothing after it is compared: positions no longer name the same
node, so a gradient line would read as a wrong value. The result says so, and says what was
compared and what could not be (``Comparison.summary``).

Work is bounded by the inputs' size: numbering a task walks its graph, and the walks of all of a
trace's tasks together may visit at most ``WALK_PER_EVENT`` nodes per event of that trace (plus
``WALK_FLOOR``): a real trace runs the nodes it reaches, an event or more each; a crafted one can
root thousands of tasks in one big graph. Past it, the remaining tasks are listed as not
compared. Each trace is read in one pass into a ``Runs`` that keeps no reference to it, so a
command can hold one trace at a time.

Two traces of one script recorded by torch (``--engine torch``) and by gradviz's engine give
none. Works on any two traces; needs no torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, namedtuple
from dataclasses import dataclass
from typing import Any

from gradviz.trace import events as ev
from gradviz.trace.codec_typed import converters_for
from gradviz.trace.fastload import stats_of_line, task_lines
from gradviz.trace.model import NodeInfo

KINDS = ("status", "error", "inputs", "structure", "hook", "saved", "order", "gradient")
WALK_PER_EVENT = 4  # graph-walk steps allowed per event of the inputs (see the module doc)
WALK_FLOOR = 20_000  # ... and at least this many, for small traces of big retained graphs
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
        unseen = c.get("retain_grad hooks, across engines", 0)
        if unseen:
            skipped.append(f"retain_grad() hooks ({unseen:,}): torch's run them where its hooks cannot see")
        across = c.get("saved, across engines", 0)
        if across:
            skipped.append(f"saved tensors ({across:,}): the two engines' nodes save different sets")
        one_sided = c.get("saved, listed by one trace only", 0)
        if one_sided:
            skipped.append(f"saved tensors of {one_sided:,} node{'s' if one_sided > 1 else ''}: one trace lists none")
        if skipped:
            lines.append("not compared: " + "; ".join(skipped))
        return lines


class _Task:
    """One task of a trace: its nodes numbered by graph position (see the module doc), the
    graph as positions (``sig``), and what ran in it, keyed by position."""

    __slots__ = ("begin", "order", "pos", "sig", "leaves", "complete", "ran", "grads", "hooks", "errors")

    def __init__(self, nodes: Any, begin: ev.TaskBegin, budget: list[int]):
        self.begin = begin
        starts = [begin.graph_root] if begin.graph_root is not None else [n for n, _ in begin.roots]
        pos: dict[int, int] = {}
        order: list[int] = []
        for st in starts:
            if st not in pos:
                pos[st] = len(order)
                order.append(st)
        # One walk numbers the nodes and writes each as (name, edges as (position, input_nr),
        # saved shapes): two tasks have the same structure when these lists are equal.
        sig: list[tuple[str, list, tuple]] = []
        append, o_append, pos_get = sig.append, order.append, pos.get
        leaves: list[tuple[int, int]] = []  # (position, tensor) of the AccumulateGrad nodes
        self.complete = True
        left = budget[0]
        i = 0
        while i < len(order):
            if left <= 0:
                self.complete = False
                break
            left -= 1
            nid = order[i]
            i += 1
            info = nodes.get(nid)
            if info is None:
                append((f"node {nid}", [], ()))
                continue
            edges: list[tuple[int | None, int]] = []
            e_append = edges.append
            for dst, nr in info.next_edges:
                if dst is None:
                    e_append((None, nr))
                    continue
                p = pos_get(dst)
                if p is None:
                    p = pos[dst] = len(order)
                    o_append(dst)
                e_append((p, nr))
            # Saved shapes as a multiset: the order each engine lists them in is its own.
            saved = info.saved
            append((info.name, edges, tuple(sorted(map(tuple, saved))) if saved else ()))
            if info.tensor is not None:
                leaves.append((i - 1, info.tensor))
        budget[0] = left
        self.order, self.pos, self.sig, self.leaves = order, pos, sig, leaves
        self.ran: list[Any] = []  # position (or the name, for a node outside the graph), seq
        self.grads: dict[tuple, tuple[Any, int]] = {}  # key by positions -> (stats, seq)
        self.hooks: list[tuple[int | None, str, str, int]] = []  # (position, kind, name, seq)
        self.errors: list[tuple[str, str | None, int]] = []  # (type, node name, seq)


# The events diff reads; a lazily loaded trace's node_begin, node_end and gradient_in lines are
# read as fields instead (``Lines.begin``, ``end``, ``add_raw``).
_TYPES = frozenset({ev.TaskBegin, ev.NodeBegin, ev.NodeEnd, ev.BufferAdd, ev.AccumulateGradUpdate,
                    ev.CapturedGrad, ev.Error, ev.Hook})


# The rare kinds a loaded trace keeps that diff reads none of: ``gradviz.load(skip=SKIP)`` (one
# forward op a node: a recording's commonest rare kind).
SKIP = frozenset({ev.ForwardOp, ev.VersionBump, ev.GradMode, ev.GradReset, ev.NonLeafGradRead, ev.WarningShown,
                  ev.Detach})


# What diff keeps of a node (``fastload.node_lines``' ``info``): NodeInfo's fields in a tuple,
# one allocation a node, not a NodeInfo (a dataclass, with an __init__ of 13 assignments).
_Node = namedtuple("_Node", [f.name for f in dataclasses.fields(NodeInfo)])  # type: ignore[misc]


class _Raw:
    """What ran in one task, by node id, in file order: positions are given once the whole
    graph is known (``Runs``), as a walk over the final nodes numbers them."""

    __slots__ = ("begin", "ran", "grads", "hooks", "errors")

    def __init__(self, begin: ev.TaskBegin):
        self.begin = begin
        self.ran: list[tuple[int, int]] = []  # (node, seq)
        self.grads: list[tuple] = []  # ("buffer", producer, node, slot, stats, seq) | ("leaf", node, after, seq)
        #                              | ("captured", index, stats, seq)
        self.hooks: list[tuple[int | None, str, str, int]] = []  # (node, kind, name, seq)
        self.errors: list[tuple[str, int | None, int]] = []  # (type, node, seq)


class Lines:
    """diff's one pass over a trace: its nodes and, per task, what ran, by node id. Handed to
    ``gradviz.load(path, lazy=True, then=lines)``, it reads a clean file's line records as the
    load checks them, a chunk at a time, and none is kept (``fastload.scan``'s ``then``);
    ``Runs(trace, lines)`` then uses what it read. A trace read any other way is walked by
    ``Runs`` itself, through the same methods."""

    def __init__(self) -> None:
        self.nodes: dict[int, Any] = {}
        self.tasks: dict[int, _Raw] = {}  # task id -> what ran in it, in order of task_begin
        self._conv = converters_for(_TYPES)

    def __call__(self, records: list[Any], seq: int) -> None:
        task_lines(records, seq, self._conv, self, self.nodes, _Node)

    def event(self, e: Any) -> None:
        k = type(e)
        if k is ev.TaskBegin:
            if e.task not in self.tasks:  # an id begun again: its events go to the first (as before)
                self.tasks[e.task] = _Raw(e)
            return
        t = self.tasks.get(e.task)
        if t is None:
            return
        if k is ev.NodeBegin:
            t.ran.append((e.node, e.seq))
        elif k is ev.BufferAdd:
            self.add_raw(e.seq, e.task, e.node, e.producer, e.slot, e.mode, e.stats)
        elif k is ev.AccumulateGradUpdate:
            t.grads.append(("leaf", e.node, e.after, e.seq))
        elif k is ev.CapturedGrad:
            t.grads.append(("captured", e.index, e.stats, e.seq))
        elif k is ev.Hook:
            # retain_grad()'s hook is the engine's own function, named its own way: its kind says it all.
            t.hooks.append((e.node, e.hook, "retain_grad()" if e.hook == "retains_grad" else e.name, e.seq))
        elif k is ev.Error:
            t.errors.append((e.type, e.node, e.seq))

    # fastload.BulkSink: the lines a lazily loaded trace does not make events of.
    def begin(self, seq: int, tid: int, task: int, node: int) -> None:
        t = self.tasks.get(task)
        if t is not None:
            t.ran.append((node, seq))

    def end(self, seq: int, tid: int, task: int, node: int, status: str) -> None:
        pass

    def add(self, *args: Any) -> None:  # add_raw is called instead
        raise AssertionError("fastload.iter_task_events calls add_raw when the sink has one")

    def add_raw(self, seq: int, task: int, node: int, producer: int | None, slot: int, mode: str, stats: Any) -> None:
        t = self.tasks.get(task)
        if t is not None and mode != "undefined":
            t.grads.append(("buffer", producer, node, slot, stats, seq))


class Runs:
    """What diff needs of one trace, read in one pass over its events (a lazily loaded trace's
    gradients and node runs from their lines, without making their events; with ``lines``,
    a ``Lines`` the load filled, from what it read). It keeps no reference to the trace: a
    command can read one trace, let it go, then read the other."""

    def __init__(self, trace: Any, lines: Lines | None = None):
        self.status: str = trace.status
        self.engine: str = getattr(trace, "engine", ("gradviz", None))[0]  # which engine recorded it
        end = trace.end
        self.error: str | None = end.error if end is not None else None  # the program's, "Type: message"
        self.n_events = len(trace)
        self.n_tasks = len(trace.tasks)
        self.tensors: dict[int, ev.TensorCreated] = dict(trace.tensors)
        self.leaves_seen: set[int] = set()  # tensors whose values were compared already
        self.tasks: list[_Task] = []
        self.cut: int | None = None  # the first task (1-based) whose graph the budget did not cover
        lazy = trace._lazy
        if lines is None or lazy is None:  # (a load that went the general way: what it read is no use)
            if lines is not None:
                lines.nodes, lines.tasks = {}, {}  # (the chunks before the one the fast way gave up on)
            lines = Lines()
            if lazy is not None:
                for e in lazy.iter_task_events(0, None, _TYPES, lines):
                    lines.event(e)
            else:
                for e in trace.events:
                    if type(e) in _TYPES:
                        lines.event(e)
            lines.nodes = trace.nodes
        self.nodes = lines.nodes  # while reading (dropped at the end)
        budget = [WALK_PER_EVENT * self.n_events + WALK_FLOOR]
        name = self.name
        for raw in lines.tasks.values():
            t = _Task(self.nodes, raw.begin, budget)
            if not t.complete:
                self.cut = len(self.tasks) + 1
                break
            self.tasks.append(t)
            pos = t.pos
            pos_get = pos.get
            t.ran = [(p if (p := pos_get(n)) is not None else name(n), q) for n, q in raw.ran]
            grads = t.grads
            for g in raw.grads:
                if g[0] == "buffer":
                    _, producer, node, slot, stats, q = g
                    key = ("buffer", pos_get(producer, -1) if producer is not None else -1, pos_get(node), slot)
                    if key not in grads:  # the first contribution along an edge (a later one is summed into it)
                        grads[key] = (stats, q)
                elif g[0] == "leaf":
                    grads[("leaf", pos_get(g[1]))] = (g[2], g[3])
                else:
                    grads[("captured", g[1])] = (g[2], g[3])
            t.hooks = [(pos_get(n), kind, hook, q) for n, kind, hook, q in raw.hooks]
            t.errors = [(typ, name(n) if n is not None else None, q) for typ, n, q in raw.errors]
            t.pos = {}  # read: positions are looked up through ``order`` from here on
        del self.nodes  # the graph now lives in the tasks' ``sig``

    def name(self, nid: int | None) -> str:
        info = self.nodes.get(nid) if nid is not None else None
        return info.name if info is not None else f"node {nid}"

    @staticmethod
    def label(t: _Task, p: int | None) -> str:
        """The node at position ``p`` of task ``t``: "MulBackward0 (#3)"."""
        return f"{t.sig[p][0]} (#{p})" if p is not None and 0 <= p < len(t.sig) else "the roots"


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


def _stats_differ(a: tuple | None, b: tuple | None, rtol: float, atol: float) -> str | None:
    """Why two gradients' stats (``_canon``'s tuples, or Stats) differ beyond the tolerance."""
    if a is None or b is None:
        word = {True: "undefined", False: "defined"}
        return None if a is b else f"{word[a is None]} vs {word[b is None]}"
    if type(a) is ev.Stats or type(b) is ev.Stats:
        a, b = _canon(a), _canon(b)
    for k, f in enumerate(("norm", "min", "max")):
        x, y = a[k], b[k]  # type: ignore[index]
        if not _close(x, y, rtol, atol):
            return f"{f} {x:.6g} vs {y:.6g}"
    for k, f in ((3, "nan"), (4, "inf")):
        if a[k] != b[k]:  # type: ignore[index]
            return f"{f} count {a[k]} vs {b[k]}"  # type: ignore[index]
    return None


def _ended(r: Runs) -> str:
    """How a run ended, in words: "finished (ok)", "failed (error: ValueError: ...)", ..."""
    if r.status == "ok":
        return "finished (ok)"
    if r.status == "unfinished":
        return "unfinished (the trace was cut short: no trace_end)"
    err = f": {r.error}" if r.error else ""
    return f"{'failed' if r.status == 'error' else r.status} ({r.status}{err})"


def _error_type(r: Runs) -> str | None:
    return r.error.split(":", 1)[0] if r.error else None


def compare(a: Any, b: Any, *, rtol: float = 1e-4, atol: float = 1e-6) -> Comparison:
    """Compare traces `a` and `b` (``gradviz.load`` results, or ``Runs`` read from them): the
    first divergence of each kind, what was compared and what was not."""
    a = a if isinstance(a, Runs) else Runs(a)
    b = b if isinstance(b, Runs) else Runs(b)
    note = _Found()
    compared: Counter[str] = Counter()
    if a.status != b.status:
        note(Divergence("status", None, f"A {_ended(a)} vs B {_ended(b)}"))
    elif _error_type(a) != _error_type(b):
        note(Divergence("error", None, f"the program raised {_error_type(a)} vs {_error_type(b)}"))
    ra, rb = a, b
    na, nb = a.n_tasks, b.n_tasks
    if na != nb:
        note(Divergence("structure", None, f"{na} tasks vs {nb} tasks"))
        note.skip(f"tasks {min(na, nb) + 1}..{max(na, nb)}: only in {'A' if na > nb else 'B'}")
    n = min(na, nb)
    cut = min(c for c in (ra.cut, rb.cut, n + 1) if c is not None)
    for i, (x, y) in enumerate(zip(ra.tasks, rb.tasks), start=1):
        if i >= cut:
            break
        compared["tasks"] += 1
        if not _task_diff(i, ra, rb, x, y, rtol, atol, note, compared):
            if i < n:
                note.skip(f"tasks {i + 1}..{n}: not comparable once task {i}'s structure differs")
            break
    else:
        if cut <= n:
            note.skip(f"tasks {cut}..{n}: their graphs hold more nodes than the traces have events "
                      f"(a walk of {WALK_PER_EVENT} nodes an event was spent)")
    found = note.found
    return Comparison([found[k] for k in KINDS if k in found], dict(compared), note.skipped, rtol, atol)


def diff(a: Any, b: Any, *, rtol: float = 1e-4, atol: float = 1e-6) -> list[Divergence]:
    """The first divergence of each kind between traces `a` and `b` (``gradviz.load`` results)."""
    return compare(a, b, rtol=rtol, atol=atol).divergences


def _task_diff(
    i: int, ra: Runs, rb: Runs, x: _Task, y: _Task, rtol: float, atol: float, note: _Found,
    compared: Counter[str],
) -> bool:
    """Compare task ``i`` of both; False when its structure differs (nothing more is comparable)."""
    bx, by = x.begin, y.begin
    # Errors first: a task that raised in one run only says more than the gradients after it.
    ex, ey = x.errors, y.errors
    if [e[:2] for e in ex] != [e[:2] for e in ey]:  # the type and the node: messages may word details apart
        k = next((j for j, (p, q) in enumerate(zip(ex, ey)) if p[:2] != q[:2]), min(len(ex), len(ey)))
        da = ex[k] if k < len(ex) else None
        db = ey[k] if k < len(ey) else None

        def fmt(e: Any) -> str:
            return "no error" if e is None else e[0] + (f" in {e[1]}" if e[1] else "")

        note(Divergence("error", i, f"{fmt(da)} vs {fmt(db)}", da[2] if da else None, db[2] if db else None))
    sx, sy = x.sig, y.sig
    if sx != sy:  # (one comparison in C for the usual case: the same graph)
        for p, (nx, ny) in enumerate(zip(sx, sy)):
            if nx[0] != ny[0]:
                note(Divergence("structure", i, f"node #{p}: {nx[0]} vs {ny[0]}", bx.seq, by.seq))
                return False
            if nx[1] != ny[1]:
                note(Divergence("structure", i, f"{nx[0]} (#{p}) edges {_shown(list(nx[1]))} vs "
                                f"{_shown(list(ny[1]))}", bx.seq, by.seq))
                return False
        if len(sx) != len(sy):
            note(Divergence("structure", i, f"{len(sx)} nodes vs {len(sy)} nodes", bx.seq, by.seq))
            return False
        if ra.engine == rb.engine:
            _saved_diff(i, x, y, note, compared)
        else:  # each engine's nodes save their own sets (torch's NllLossBackward0 also its target)
            compared["saved, across engines"] += sum(len(nx[2]) for nx in sx)
    else:
        compared["saved tensors"] += sum(len(nx[2]) for nx in sx)
    compared["nodes"] += len(sx)
    compared["edges"] += sum(len(nx[1]) for nx in sx)
    if not note.has("gradient"):
        _inputs_diff(i, ra, rb, x, y, rtol, atol, note, compared)
    _hooks_diff(i, ra, rb, x, y, note, compared)
    if [r[0] for r in x.ran] != [r[0] for r in y.ran]:  # by position (a name outside the graph)
        for k, (qx, qy) in enumerate(zip(x.ran, y.ran)):
            if qx[0] != qy[0]:
                note(Divergence("order", i, f"step {k}: {_ran_label(ra, x, qx[0])} ran vs {_ran_label(rb, y, qy[0])}",
                                qx[1], qy[1]))
                break
        else:
            note(Divergence("order", i, f"{len(x.ran)} nodes ran vs {len(y.ran)}"))
    if note.has("inputs"):
        note.skip("gradients: the runs' leaf inputs differ, so their gradients would too")
    else:
        _grads_diff(i, ra, x, y, rtol, atol, note, compared)
    return True


def _ran_label(runs: Runs, t: _Task, p: Any) -> str:
    return runs.label(t, p) if type(p) is int else f"{p} (outside the task's graph)"


def _saved_diff(i: int, x: _Task, y: _Task, note: _Found, compared: Counter[str]) -> None:
    for p, (nx, ny) in enumerate(zip(x.sig, y.sig)):
        if bool(nx[2]) != bool(ny[2]):
            # One trace lists none: a recording that cannot see them (torch's hooks do not show
            # what a custom Function saved) rather than a node that saved nothing.
            compared["saved, listed by one trace only"] += 1
            continue
        compared["saved tensors"] += len(nx[2])
        if nx[2] != ny[2] and not note.has("saved"):
            note(Divergence("saved", i, f"{nx[0]} (#{p}) saved shapes {_shown(list(nx[2]))} vs {_shown(list(ny[2]))}",
                            x.begin.seq, y.begin.seq))


def _inputs_diff(i: int, ra: Runs, rb: Runs, x: _Task, y: _Task, rtol: float, atol: float,
                 note: _Found, compared: Counter[str]) -> None:
    """The leaves met in this task for the first time: their values as they joined the graph."""
    leaves_b = dict(y.leaves)
    for p, tensor_a in x.leaves:
        tensor_b = leaves_b.get(p)
        if tensor_b is None or tensor_a in ra.leaves_seen or tensor_b in rb.leaves_seen:
            continue
        ra.leaves_seen.add(tensor_a)
        rb.leaves_seen.add(tensor_b)
        ta, tb = ra.tensors.get(tensor_a), rb.tensors.get(tensor_b)
        if ta is None or tb is None or ta.stats is None or tb.stats is None:
            compared["leaf inputs, not recorded"] += 1
            continue
        compared["leaf inputs"] += 1
        why = _stats_differ(ta.stats, tb.stats, rtol, atol)
        if why is not None:
            name = ta.name or tb.name or f"tensor {tensor_a}"
            note(Divergence("inputs", i, f"leaf {name} at {ra.label(x, p)} differs before any gradient: {why}; "
                            "the runs start from different values (an unseeded script?), so no gradient is blamed",
                            ta.seq, tb.seq))
            return


def _hooks_diff(i: int, ra: Runs, rb: Runs, x: _Task, y: _Task, note: _Found,
                compared: Counter[str]) -> None:
    """Hooks as a multiset of (node position, hook kind, qualified name): the same hooks called
    in another order are no divergence; one more or one fewer is."""
    hx, hy = x.hooks, y.hooks
    if ra.engine != rb.engine:
        # torch keeps retain_grad()'s hook in C++, where its hooks do not see it: gradviz's engine
        # records it, a torch recording cannot, so across engines it is left out (and said so)
        unseen = sum(1 for h in hx + hy if h[1] == "retains_grad")
        if unseen:
            compared["retain_grad hooks, across engines"] += unseen
            hx = [h for h in hx if h[1] != "retains_grad"]
            hy = [h for h in hy if h[1] != "retains_grad"]
    compared["hooks"] += max(len(hx), len(hy))
    cx, cy = Counter(h[:3] for h in hx), Counter(h[:3] for h in hy)
    if cx == cy:
        return
    only_a, only_b = cx - cy, cy - cx
    # The first in event order of either run.
    first = min([(h[3], "A", h) for h in hx if only_a[h[:3]] > 0] + [(h[3], "B", h) for h in hy if only_b[h[:3]] > 0])
    _, side, (pos, kind, name, seq) = first
    runs, t = (ra, x) if side == "A" else (rb, y)
    other = "B" if side == "A" else "A"
    msg = f"{side} called {kind} hook {name} on {runs.label(t, pos)}; {other} did not"
    extra = sum(only_a.values()) + sum(only_b.values()) - 1
    if extra:
        msg += f" (and {extra} more hook call{'s' if extra > 1 else ''} differ)"
    note(Divergence("hook", i, msg, seq if side == "A" else None, seq if side == "B" else None))


def _canon(st: Any) -> tuple | None:
    """Stats as (norm, min, max, nan, inf), from a Stats or as a trace's line holds them."""
    if st is None:
        return None
    t = type(st)
    if t is float and st - st == 0.0:
        return (abs(st), st, st, 0, 0)
    if t is tuple and type(st[0]) is float and type(st[1]) is float and type(st[2]) is float:
        return st
    if t is not ev.Stats:
        st = stats_of_line(st)
    return (st.norm, st.min, st.max, st.nan, st.inf)


def _grads_diff(i: int, ra: Runs, x: _Task, y: _Task, rtol: float, atol: float, note: _Found,
                compared: Counter[str]) -> None:
    gy = y.grads
    first: tuple[int, Divergence] | None = None
    n = 0
    for key, (sa, qa) in x.grads.items():
        hit = gy.get(key)
        if hit is None:
            continue
        n += 1
        sb = hit[0]
        if sa == sb:  # the same numbers as recorded (finite): nothing to weigh
            continue
        why = _stats_differ(_canon(sa), _canon(sb), rtol, atol)
        if why is not None and (first is None or qa < first[0]):
            first = (qa, Divergence("gradient", i, f"{_grad_label(ra, x, key)}: {why}", qa, hit[1]))
    compared["gradients"] += n
    if first is not None:
        note(first[1])


def _grad_label(runs: Runs, t: _Task, key: tuple) -> str:
    if key[0] == "buffer":
        return f"gradient {runs.label(t, key[1])} -> {runs.label(t, key[2])} slot {key[3]}"
    if key[0] == "leaf":
        tensor = dict(t.leaves).get(key[1])
        return f"leaf .grad at {runs.label(t, key[1])}" + (f" (tensor {tensor})" if tensor is not None else "")
    return f"grad() output {key[1]}"


__all__ = ["KINDS", "SKIP", "Comparison", "Divergence", "Lines", "Runs", "compare", "diff"]
