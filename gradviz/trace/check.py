"""Invariants every trace of a correct engine satisfies; ``invariants(trace)`` lists violations.

Meant for tests: ``assert invariants(trace) == []`` after any recorded run. A trace cut short
(``trace.truncated``) or interrupted (Ctrl-C, SIGTERM) is checked as the prefix it is: only what
must already hold at its end.

What is checked:
- seq: strictly increasing, numbered from 0 in order; trace_begin first, trace_end last.
- self-contained: every thread, queue, node and leaf an event refers to was announced before
  (thread_start, queue_created, node_created, tensor_created).
- queues: every pop takes something pushed to that queue before; each push is popped exactly
  once (in a finished trace); the recorded sizes agree with the pushes and pops.
- dependencies: each node's count at the start of a task equals its in-degree from the nodes
  reachable from the task's roots, for every node the task needs (all reachable nodes, or
  exec_info's needed set).
- InputBuffers: a node runs only after its dependency count reached zero and every producer's
  gradient arrived (one buffer_add per counted dependency), and nothing arrives after it ran.
- tasks and nodes: each task_begin has a task_end and each node_begin a node_end (finished traces).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from gradviz.trace import events as ev
from gradviz.trace.model import Trace

_NODE_FIELDS = ("node", "src", "dst", "producer", "by", "graph_root")


# The forward side's kinds name any tensor by id, not only the leaves tensor_created announces.
_ANY_TENSOR = (ev.VersionBump, ev.GradReset, ev.NonLeafGradRead, ev.Detach, ev.TensorAtEnd)

def _where(e: ev.Event) -> str:
    return f"event {e.seq} ({e.kind})"


def invariants(trace: Trace) -> list[str]:
    """Problems found in ``trace``, one sentence each; empty when everything holds."""
    problems: list[str] = []
    add = problems.append
    events = trace.events
    # an interrupted program (Ctrl-C, SIGTERM) stopped wherever it was: check it as a prefix too
    finished = not trace.truncated and trace.status in ("ok", "error")

    # -- ordering and references
    threads: set[int] = set()
    queues: set[int] = set()
    nodes: set[int] = set()
    tensors: set[int] = set()
    prev = -1
    for i, e in enumerate(events):
        if e.seq <= prev:
            add(f"{_where(e)}: seq {e.seq} does not increase (previous {prev})")
        prev = e.seq
        if i == 0 and not isinstance(e, ev.TraceBegin):
            add(f"{_where(e)}: the first event is not trace_begin")
        if isinstance(e, ev.TraceEnd) and i != len(events) - 1:
            add(f"{_where(e)}: trace_end is not the last event")
        if isinstance(e, ev.ThreadStart):
            threads.add(e.tid)
        elif not isinstance(e, (ev.TraceBegin, ev.TraceEnd)) and e.tid not in threads:
            add(f"{_where(e)}: thread {e.tid} has no thread_start before it")
        if isinstance(e, ev.QueueCreated):
            queues.add(e.queue)
        elif isinstance(e, ev.TensorCreated):
            tensors.add(e.tensor)
        elif isinstance(e, ev.NodeCreated):
            nodes.add(e.node)
        q = getattr(e, "queue", None)
        if q is not None and q not in queues:
            add(f"{_where(e)}: queue {q} has no queue_created before it")
        for f in _NODE_FIELDS:
            n = getattr(e, f, None)
            if n is not None and n not in nodes and not (isinstance(e, ev.NodeCreated) and f == "node"):
                add(f"{_where(e)}: node {n} ({f}) has no node_created before it")
        t = getattr(e, "tensor", None)
        if t is not None and t not in tensors and not isinstance(e, (ev.TensorCreated, *_ANY_TENSOR)):
            add(f"{_where(e)}: tensor {t} has no tensor_created before it")
        if isinstance(e, ev.TaskBegin):
            for n, _ in (*e.roots, *e.outputs):
                if n not in nodes:
                    add(f"{_where(e)}: node {n} (roots/outputs) has no node_created before it")
        elif isinstance(e, ev.Dependencies):
            for n, _ in e.counts:
                if n not in nodes:
                    add(f"{_where(e)}: node {n} (counts) has no node_created before it")

    _check_queues(trace, finished, add)
    _check_tasks(trace, finished, add)
    return problems


def _check_queues(trace: Trace, finished: bool, add) -> None:  # type: ignore[no-untyped-def]
    waiting: dict[int, Counter] = defaultdict(Counter)  # queue -> pushed, not yet popped
    pushed_at: dict[tuple, list[int]] = defaultdict(list)
    for e in trace.events:
        if isinstance(e, ev.QueuePush):
            key = (e.task, e.node, e.what)
            waiting[e.queue][key] += 1
            pushed_at[(e.queue, *key)].append(e.seq)
            size = sum(waiting[e.queue].values())
            if e.size != size:
                add(f"{_where(e)}: queue {e.queue} size after push is {e.size}, but {size} are waiting")
        elif isinstance(e, ev.QueuePop):
            key = (e.task, e.node, e.what)
            if waiting[e.queue][key] <= 0:
                add(f"{_where(e)}: pops task {e.task} node {e.node} ({e.what}) from queue {e.queue}, "
                    "which was not pushed there")
                continue
            waiting[e.queue][key] -= 1
            pushed_at[(e.queue, *key)].pop(0)
            size = sum(waiting[e.queue].values())
            if e.size != size:
                add(f"{_where(e)}: queue {e.queue} size after pop is {e.size}, but {size} are waiting")
    if finished:
        for (q, task, node, what), seqs in pushed_at.items():
            for s in seqs:
                add(f"event {s} (queue_push): task {task} node {node} ({what}) pushed to queue {q} "
                    "is never popped")


def _check_tasks(trace: Trace, finished: bool, add) -> None:  # type: ignore[no-untyped-def]
    graph = trace.nodes
    counts: dict[int, dict[int, int]] = {}
    needed: dict[int, set[int]] = {}
    remaining: dict[int, dict[int, int]] = {}
    arrived: dict[tuple[int, int], int] = defaultdict(int)  # (task, node) -> gradients from producers
    began: dict[tuple[int, int], int] = {}  # (task, node) -> seq of node_begin
    ended: set[tuple[int, int]] = set()
    begins: dict[int, ev.TaskBegin] = {}
    task_ends: set[int] = set()
    computed: dict[int, tuple[ev.Dependencies, set[int]]] = {}  # task -> (its counts, reachable)
    for e in trace.events:
        if isinstance(e, ev.TaskBegin):
            begins[e.task] = e
        elif isinstance(e, ev.TaskEnd):
            task_ends.add(e.task)
        elif isinstance(e, ev.Dependencies):
            counts[e.task] = dict(e.counts)
            remaining[e.task] = dict(e.counts)
            b = begins.get(e.task)
            if b is None:
                add(f"{_where(e)}: task {e.task} has no task_begin before it")
                continue
            starts = [b.graph_root] if b.graph_root is not None else [n for n, _ in b.roots]
            reach = _reachable(graph, starts)
            needed[e.task] = reach
            computed[e.task] = (e, reach)
        elif isinstance(e, ev.ExecInfo):
            needed[e.task] = set(e.needed)
            reach = computed[e.task][1] if e.task in computed else set()
            for n in e.needed:
                if n not in reach:
                    add(f"{_where(e)}: needed node {n} is not reachable from the task's roots")
        elif isinstance(e, ev.DependencyDecrement):
            rem = remaining.get(e.task)
            if rem is None:
                continue
            left = rem.get(e.node, 0) - 1
            rem[e.node] = left
            if left != e.remaining:
                add(f"{_where(e)}: node {e.node} has {left} dependencies left by the counts, "
                    f"the event says {e.remaining}")
        elif isinstance(e, ev.BufferAdd):
            key = (e.task, e.node)
            if key in began:
                add(
                    f"{_where(e)}: a gradient reaches node {e.node} after it began (event {began[key]})"
                )
            if e.producer is not None:
                arrived[key] += 1
        elif isinstance(e, ev.NodeBegin):
            key = (e.task, e.node)
            began[key] = e.seq
            rem = remaining.get(e.task)
            if rem is not None and rem.get(e.node, 0) != 0:
                add(f"{_where(e)}: node {e.node} runs with {rem[e.node]} dependencies outstanding")
            expected = counts.get(e.task, {}).get(e.node, 0)
            if e.task in counts and arrived[key] != expected:
                add(f"{_where(e)}: node {e.node} runs with {arrived[key]} of its {expected} gradients "
                    "in its InputBuffer")
            need = needed.get(e.task)
            if need is not None and e.node not in need:
                add(f"{_where(e)}: node {e.node} runs but task {e.task} does not need it")
        elif isinstance(e, ev.NodeEnd):
            ended.add((e.task, e.node))
    for task, (e, reach) in computed.items():
        _check_counts(graph, e, reach, needed[task], add)
    if finished:
        for t in begins:
            if t not in task_ends:
                add(f"task {t} has no task_end")
        for key, s in began.items():
            if key not in ended:
                add(f"event {s} (node_begin): node {key[1]} of task {key[0]} has no node_end")


def _check_counts(graph: dict, e: ev.Dependencies, reach: set[int], need: set[int], add) -> None:  # type: ignore[no-untyped-def]
    counts = dict(e.counts)
    indeg: Counter = Counter()
    for src in reach:
        info = graph.get(src)
        for dst, _ in info.next_edges if info is not None else ():
            if dst is not None:
                indeg[dst] += 1
    for n in need:
        if counts.get(n, 0) != indeg.get(n, 0):
            add(f"{_where(e)}: node {n} has dependency count {counts.get(n, 0)}, but {indeg.get(n, 0)} "
                "edges from reachable nodes point at it")
    for n in counts:
        if n not in reach:
            add(f"{_where(e)}: node {n} has a dependency count but is not reachable from the roots")


def _reachable(graph: dict, starts: list[int]) -> set[int]:
    seen: set[int] = set()
    stack = [n for n in starts if n is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        info = graph.get(n)
        if info is not None:
            stack.extend(d for d, _ in info.next_edges if d is not None and d not in seen)
    return seen
