"""A trace summarised as data: what ``gradviz info`` shows, usable without the CLI."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gradviz.trace import events as ev
from gradviz.trace import sites
from gradviz.trace.model import Trace


@dataclass
class TaskSummary:
    id: int
    status: str  # ok, error, unfinished
    error: str | None
    reentrant_depth: int
    thread: str  # name of the thread that called backward
    roots: list[str]  # names of the root nodes
    nodes_run: int
    duration_ns: int | None  # None if unfinished


@dataclass
class ThreadSummary:
    tid: int
    name: str
    role: str
    device: str | None
    events: int


@dataclass
class GradientIn:
    """A gradient that reached a node's InputBuffer: its slot and its statistics."""

    slot: int
    producer: str | None  # "MulBackward0 (node 4)"; None for the task's root gradient
    norm: float
    min: float
    max: float
    nan: int
    inf: int

    def text(self) -> str:
        bad = f", {self.nan} NaN" * (self.nan > 0) + f", {self.inf} Inf" * (self.inf > 0)
        return f"slot {self.slot}: norm {self.norm:.4g}, min {self.min:.4g}, max {self.max:.4g}{bad}"


@dataclass
class ErrorSummary:
    seq: int
    task: int | None
    node: str | None  # "MulBackward0 (node 4)"
    type: str
    message: str
    # the forward line that created the node, with the op's column and text where known:
    # "train.py:42:9 (`F.relu(h)`)"
    source: str | None = None
    gradients: list[GradientIn] = field(default_factory=list)  # what the node had received by then

    def context(self) -> str | None:
        """One line: where the node was made, and the gradients it had received."""
        parts = [f"created at {self.source}"] if self.source else []
        if self.gradients:
            parts.append("gradient in: " + "; ".join(g.text() for g in self.gradients))
        return "; ".join(parts) or None


@dataclass
class Summary:
    path: str | None
    format_version: int | None
    gradviz_version: str | None
    argv: list[str]
    status: str  # ok, error, interrupted, unfinished
    error: str | None
    truncated: bool
    events: int
    duration_ns: int
    events_by_kind: dict[str, int]
    tasks: list[TaskSummary]
    nodes: int
    nodes_by_name: dict[str, int]
    edges: int
    tensors: int
    queues: int
    threads: list[ThreadSummary]
    errors: list[ErrorSummary]
    anomalies: list[ErrorSummary] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def summarize(trace: Trace) -> Summary:
    """The facts a first look at a trace wants: tasks, graph size, threads, event counts, errors."""
    # Names, counts and the rare kinds' events only: a lazily loaded trace (load(lazy=True))
    # answers all of them from its index, without making an object per event.
    names = trace.node_names
    threads = trace.threads

    def node_label(n: int | None) -> str | None:
        if n is None:
            return None
        name = names.get(n)
        return f"{name} (node {n})" if name is not None else f"node {n}"

    per_thread = trace.events_by_thread
    runs = trace.runs_by_task
    tasks = []
    for t in trace.tasks.values():
        b = t.begin
        owner = threads.get(b.owner)
        tasks.append(
            TaskSummary(
                id=t.id, status=t.status, error=t.end.error if t.end is not None else None,
                reentrant_depth=b.reentrant_depth, thread=owner.name if owner else f"tid {b.owner}",
                roots=[names[n] if n in names else f"node {n}" for n, _ in b.roots],
                nodes_run=runs.get(t.id, 0),
                duration_ns=t.end.ts - b.ts if t.end is not None else None,
            )
        )
    header = trace.header
    end = trace.end
    return Summary(
        path=trace.path,
        format_version=header.format_version if header else None,
        gradviz_version=header.gradviz_version if header else None,
        argv=list(header.argv) if header else [],
        status=trace.status,
        error=end.error if end is not None else None,
        truncated=trace.truncated,
        events=len(trace),
        duration_ns=trace.duration_ns,
        events_by_kind=dict(sorted(trace.kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        tasks=tasks,
        nodes=len(names),
        nodes_by_name=dict(Counter(names.values()).most_common()),
        edges=trace.n_edges,
        tensors=len(trace.tensors),
        queues=len(trace.queues),
        threads=[
            ThreadSummary(t.tid, t.name, t.role, t.device, per_thread.get(t.tid, 0)) for t in threads.values()
        ],
        errors=[_error(trace, e, e.type, node_label) for e in trace.errors],
        anomalies=[_error(trace, e, "anomaly", node_label) for e in trace.of_kind(ev.Anomaly)],
    )


def _error(trace: Trace, e: Any, kind: str, node_label: Any) -> ErrorSummary:
    node, task = e.node, e.task
    source = None
    grads: list[GradientIn] = []
    if node is not None:
        info = trace.nodes.get(node)
        source = sites.at(info.source, info.columns, short=False) if info is not None else None
        if task is not None:
            grads = gradients_into(trace, node, task, e.seq, node_label)
    return ErrorSummary(e.seq, task, node_label(node), kind, e.message, source, grads)


_BUFFER_ADD = frozenset([ev.BufferAdd])


def gradients_into(trace: Trace, node: int, task: int, before: int, node_label: Any = None) -> list[GradientIn]:
    """The gradients ``node``'s InputBuffer received in ``task`` before event ``before``, the
    last one per slot (the statistics of each arrival; an accumulated slot's sum is not in the
    trace). Reads only the task's own events, and only its buffer_add events."""
    info = trace.tasks.get(task)
    start = info.begin.seq if info is not None else 0
    last: dict[int, ev.BufferAdd] = {}
    for b in trace.iter_events(start, before, _BUFFER_ADD):
        if b.node == node and b.task == task and b.stats is not None:  # type: ignore[attr-defined]
            last[b.slot] = b  # type: ignore[attr-defined,assignment]
    label = node_label or (lambda n: None if n is None else f"node {n}")
    return [GradientIn(slot, label(b.producer), b.stats.norm, b.stats.min, b.stats.max, b.stats.nan,  # type: ignore[union-attr]
                       b.stats.inf) for slot, b in sorted(last.items())]  # type: ignore[union-attr]

