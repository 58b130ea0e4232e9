"""A trace summarised as data: what ``gradviz info`` shows, usable without the CLI."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gradviz.trace import events as ev
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
class ErrorSummary:
    seq: int
    task: int | None
    node: str | None  # "MulBackward0 (node 4)"
    type: str
    message: str


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
            )  # fmt: skip
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
        errors=[ErrorSummary(e.seq, e.task, node_label(e.node), e.type, e.message) for e in trace.errors],
        anomalies=[
            ErrorSummary(e.seq, e.task, node_label(e.node), "anomaly", e.message)
            for e in trace.of_kind(ev.Anomaly)
        ],
    )

