"""A loaded trace: the events, plus indexes a reader wants (nodes, edges, tasks, threads).

Built from events alone; never imports the engine. ``Trace(events)`` works on any list of
events, so tests and tools can build traces in memory.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any

from gradviz import _answerers
from gradviz._gc import paused
from gradviz.trace import events as ev
from gradviz.trace import provenance


@dataclass
class NodeInfo:
    id: int
    name: str
    sequence_nr: int
    topological_nr: int
    num_inputs: int
    num_outputs: int
    device: str
    saved: tuple[tuple[int, ...], ...]
    source: str | None
    tensor: int | None  # AccumulateGrad: the leaf
    tid: int  # thread that created it
    seq: int  # seq of its node_created event
    next_edges: list[tuple[int | None, int]] = field(default_factory=list)  # (dst, input_nr) per slot
    columns: tuple[int, int] | None = None  # the op's columns on source's line (node_created's)


@dataclass
class TaskInfo:
    id: int
    begin: ev.TaskBegin
    end: ev.TaskEnd | None = None  # None if the trace was cut before the task ended

    @property
    def status(self) -> str:
        return self.end.status if self.end is not None else "unfinished"


@dataclass
class ThreadInfo:
    tid: int
    name: str
    device: str | None
    role: str


class Trace:
    """Events in seq order, and what can be derived from them."""

    def __init__(self, events: list[ev.Event] | None, *, truncated: bool = False, path: str | None = None,
                 index: Any = None):
        # ``index`` (gradviz.trace.fastload.Index, from ``load(lazy=True)``): until the events are
        # made, counts, node names and the rare kinds' events come from it.
        self._events = events
        self._index = index if events is None else None
        self.truncated = truncated  # the file was cut short (crash, kill): events are a prefix
        self.path = path

    @property
    def events(self) -> list[ev.Event]:
        """Every event, in seq order (made on first use for a lazily loaded trace)."""
        events = self._events
        if events is None:
            with paused():  # a million objects without cycles
                events = self._events = self._index.events()
            self._index.data = b""  # decoded for good: the file's bytes are not needed again
        return events

    @events.setter
    def events(self, events: list[ev.Event]) -> None:
        self._events = events
        self._index = None

    @property
    def _lazy(self) -> Any:
        """The index while the events are not made yet, else None."""
        return self._index if self._events is None else None

    def iter_events(self, start: int = 0, stop: int | None = None,
                    types: frozenset[type[ev.Event]] | None = None) -> Iterator[ev.Event]:
        """Events ``start`` to ``stop`` (exclusive) in order, or only those of ``types``; a lazily
        loaded trace decodes them as they are read, makes only those, and keeps none."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.iter_events(start, stop, types)
        span = itertools.islice(self._events, start, stop)  # type: ignore[arg-type]
        return span if types is None else (e for e in span if type(e) in types)

    def fold_events(self, stop: int) -> Iterator[Any]:
        """The first ``stop`` events as a replay fold (``gradviz.replay.state.fold``) reads
        them: a lazily loaded trace gives most of its lines as their records, which the fold
        applies from their fields (``fastload.Index.fold_events``); the fold's steps and its
        state are the same."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.fold_events(stop)
        return itertools.islice(self._events, stop)  # type: ignore[arg-type]

    def __len__(self) -> int:
        lazy = self._lazy
        return lazy.n_events if lazy is not None else len(self.events)

    @property
    def total_events(self) -> int:
        """The events in the file: ``len``, or, for a trace read only up to a step
        (``load(prefix=True)``), the count the file's trace_end declares."""
        lazy = self._lazy
        return lazy.total if lazy is not None and lazy.total is not None else len(self)

    def __repr__(self) -> str:
        cut = ", truncated" if self.truncated else ""
        return f"<Trace {len(self)} events, {len(self.node_names)} nodes, {len(self.tasks)} tasks{cut}>"

    @cached_property
    def header(self) -> ev.TraceBegin | None:
        lazy = self._lazy
        first = lazy.first if lazy is not None else self.events[0] if self.events else None
        return first if isinstance(first, ev.TraceBegin) else None

    def head(self, n: int) -> list[ev.Event]:
        """The first ``n`` events (a lazily loaded trace decodes only the lines that hold them)."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.head(n)
        return list(self.iter_events(0, n))

    @cached_property
    def by_kind(self) -> dict[type[ev.Event], list[ev.Event]]:
        """The events of each type, in seq order; the types in order of first appearance. One
        pass, which every index below then reads instead of walking all events again (a
        million-event trace: a tenth of a second instead of a second an index)."""
        groups: dict[type[ev.Event], list[ev.Event]] = {}
        get = groups.get
        for e in self.events:
            t = type(e)
            lst = get(t)
            if lst is None:
                lst = groups[t] = []
            lst.append(e)
        return groups

    def _of(self, t: type[ev.Event]) -> list[Any]:
        lazy = self._lazy
        if lazy is not None:
            if t not in _BULK:  # the index kept these, but those the load was told to skip
                if t in lazy.skipped:
                    return self._skipped(t)
                return lazy.rare.get(t, _NONE)
            if t is ev.NodeCreated or t is ev.EdgeCreated:  # the graph, without the backward's events
                return self._graph_events[t is ev.EdgeCreated]
        return self.by_kind.get(t, _NONE)

    def _skipped(self, t: type[ev.Event]) -> list[Any]:
        """The events of a rare kind the load did not keep (``load``'s ``skip``), made once."""
        got = self._made.get(t)
        if got is None:
            with paused():
                got = self._made[t] = list(self._index.iter_events(types=frozenset({t})))
        return got

    @cached_property
    def _made(self) -> dict[type[ev.Event], list[Any]]:
        return {}

    @cached_property
    def _graph_events(self) -> tuple[list[ev.Event], list[ev.Event]]:
        with paused():
            return self._index.graph_events()

    @cached_property
    def node_names(self) -> dict[int, str]:
        """node id -> name, every node of the trace (``nodes`` without the rest of NodeInfo)."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.node_names
        return {e.node: e.name for e in self._of(ev.NodeCreated)}  # as nodes has them: the last of an id

    @cached_property
    def node_tensors(self) -> dict[int, int]:
        """AccumulateGrad node id -> the leaf tensor it writes into."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.node_tensors
        return {n: info.tensor for n, info in self.nodes.items() if info.tensor is not None}

    @cached_property
    def events_by_thread(self) -> dict[int, int]:
        """tid -> how many events the thread emitted."""
        lazy = self._lazy
        if lazy is not None:
            return dict(lazy.per_thread)
        return dict(Counter(map(attrgetter("tid"), self.events)))

    @cached_property
    def runs_by_task(self) -> dict[int, int]:
        """task -> how many node_begin events it has (nodes run)."""
        lazy = self._lazy
        if lazy is not None:
            return dict(lazy.runs)
        return dict(Counter(map(attrgetter("task"), self._of(ev.NodeBegin))))

    @cached_property
    def nodes(self) -> dict[int, NodeInfo]:
        lazy = self._lazy
        if lazy is not None:  # from the lines that announce them: no event objects on the way
            with paused():
                return lazy.node_infos(NodeInfo)
        nodes: dict[int, NodeInfo] = {}
        created = self._of(ev.NodeCreated)
        edges = self._of(ev.EdgeCreated)
        if len({e.node for e in created}) != len(created):  # an id made twice: in file order
            merged = sorted(created + edges, key=_seq_of)
        else:  # each id once: nodes first, then the edges of nodes made before them
            merged = created + edges
        with paused():  # a NodeInfo and a list a node
            self._index_nodes(merged, nodes)
        return nodes

    @staticmethod
    def _index_nodes(merged: list[Any], nodes: dict[int, NodeInfo]) -> None:
        for e in merged:
            if type(e) is ev.NodeCreated:
                nodes[e.node] = NodeInfo(
                    e.node, e.name, e.sequence_nr, e.topological_nr, e.num_inputs, e.num_outputs,
                    e.device, e.saved, e.source, e.tensor, e.tid, e.seq,
                    [(None, 0)] * e.num_outputs, e.columns,
                )
            else:
                info = nodes.get(e.src)
                if info is not None and info.seq < e.seq:
                    edges_of = info.next_edges
                    if 0 <= e.slot < len(edges_of):
                        edges_of[e.slot] = (e.dst, e.input_nr)

    @property
    def n_edges(self) -> int:
        lazy = self._lazy
        return len(self.edges) if lazy is None else lazy.kinds.get("edge_created", 0)

    @cached_property
    def edges(self) -> list[ev.EdgeCreated]:
        return list(self._of(ev.EdgeCreated))

    @cached_property
    def tensors(self) -> dict[int, ev.TensorCreated]:
        return {e.tensor: e for e in self._of(ev.TensorCreated)}

    @cached_property
    def tasks(self) -> dict[int, TaskInfo]:
        tasks: dict[int, TaskInfo] = {}
        for e in sorted(self._of(ev.TaskBegin) + self._of(ev.TaskEnd), key=_seq_of):
            if type(e) is ev.TaskBegin:
                tasks[e.task] = TaskInfo(e.task, e)
            elif e.task in tasks:
                tasks[e.task].end = e
        return tasks

    @cached_property
    def threads(self) -> dict[int, ThreadInfo]:
        return {e.tid: ThreadInfo(e.tid, e.name, e.device, e.role) for e in self._of(ev.ThreadStart)}

    @cached_property
    def queues(self) -> dict[int, ev.QueueCreated]:
        return {e.queue: e for e in self._of(ev.QueueCreated)}

    @cached_property
    def _runs(self) -> dict[int, list[int]]:
        runs: dict[int, list[int]] = defaultdict(list)
        for e in self._of(ev.NodeBegin):
            runs[e.task].append(e.node)
        return runs

    def execution_order(self, task: int | None = None) -> list[str]:
        """Names of the nodes in the order they started running (all tasks, or one)."""
        if task is None:
            return [self.nodes[e.node].name for e in self._of(ev.NodeBegin)]
        return [self.nodes[n].name for n in self._runs.get(task, [])]

    def execution_order_ids(self, task: int | None = None) -> list[int]:
        """Node ids in the order they started running (all tasks, or one)."""
        if task is None:
            return [e.node for e in self._of(ev.NodeBegin)]
        return list(self._runs.get(task, []))

    def of_kind(self, kind: type[ev.Event]) -> list[ev.Event]:
        if kind in ev.EVENT_TYPES:  # no event type has subclasses: its own list
            return list(self._of(kind))
        return [e for e in self.events if isinstance(e, kind)]

    def why(self, grad: str | None = None, nan: bool = False, error: bool = False) -> Any:
        """Why NAME's .grad is None (``grad="w"``), where the first NaN/Inf came from (``nan``),
        what caused the error (``error``), or, with no question, the first problem: an Answer
        (reason, where, node, tensor, text). See gradviz.replay.why."""
        answerer = ANSWERERS.get("why")
        if answerer is None:
            raise RuntimeError("Trace.why needs gradviz.replay.why (import gradviz, or it)")
        return answerer(self, grad=grad, nan=nan, error=error)

    @cached_property
    def end(self) -> ev.TraceEnd | None:
        """The trace_end event; None when the recording did not finish (``truncated``)."""
        lazy = self._lazy
        last = lazy.last if lazy is not None else self.events[-1] if self.events else None
        return last if isinstance(last, ev.TraceEnd) else None

    @property
    def engine(self) -> tuple[str, str | None]:
        """Which engine recorded the trace: ("gradviz", None) or ("torch", torch's version)."""
        return provenance.engine(self)

    @property
    def derived(self) -> frozenset[int]:
        """Seqs of the events a source inferred rather than observed (real torch's)."""
        return provenance.derived_seqs(self)

    def origin(self, seq: int) -> str:
        """"observed" or "derived" for the event at ``seq``."""
        return provenance.origin(self, seq)

    @property
    def status(self) -> str:
        """How the recorded program ended: ok, error, interrupted, or unfinished (no trace_end)."""
        return self.end.status if self.end is not None else "unfinished"

    @property
    def duration_ns(self) -> int:
        """Time from the first to the last event."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.last.ts - lazy.first.ts
        return self.events[-1].ts - self.events[0].ts if self.events else 0

    @cached_property
    def errors(self) -> list[ev.Error]:
        return list(self._of(ev.Error))

    @cached_property
    def kinds(self) -> dict[str, int]:
        """Number of events of each kind, in order of first appearance."""
        lazy = self._lazy
        if lazy is not None:
            return dict(lazy.kinds)
        return {t.kind: len(lst) for t, lst in self.by_kind.items()}


# Questions about a run are answered a layer above this one (gradviz.replay.why); the package root
# registers it (lazily) and that module again as it is imported, so a Trace offers ``why`` without
# the trace layer importing replay.
ANSWERERS: dict[str, Callable[..., Any]] = _answerers  # the root package's (gradviz/__init__.py) dict

_NONE: list[Any] = []
# Kinds a lazily loaded trace counts but does not keep (gradviz.trace.fastload.BULK).
_BULK = frozenset({
    ev.DependencyDecrement, ev.BufferAdd, ev.QueuePush, ev.QueuePop, ev.NodeBegin, ev.NodeEnd,
    ev.NodeCreated, ev.EdgeCreated,
})
_seq_of = attrgetter("seq")
