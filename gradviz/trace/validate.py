"""Every field a reader uses, checked against what the trace itself declares.

The file reader (``gradviz.trace.file``) checks each field's type and the events' numbering;
this pass checks their values, in one walk over the events, so that nothing downstream (replay,
render, export, info) meets a number it would index with, allocate by or overflow on:

- ids refer to something announced before: a thread (thread_start), a queue (queue_created), a
  leaf (tensor_created), a node (node_created), a graph task (task_begin);
- slots are within the node's declaration: an edge's slot below its source's ``num_outputs``, an
  InputBuffer slot (``buffer_add.slot``, an edge's or root's ``input_nr``) below the node's
  ``num_inputs``;
- counts, depths and sizes are non-negative and below a bound proportional to the file
  (``limit_for``), and so are the sums of the nodes' ``num_inputs`` and ``num_outputs`` (what
  readers allocate by: one InputBuffer slot, one next_edges entry each), so memory stays
  proportional to the file's size; every other integer fits the 64 bits the engine writes
  (``sequence_nr``: unsigned, as torch's).

A bad value raises ``TraceError``: one line naming the event, its kind and the field. What is
not checked is what no reader relies on (e.g. whether the counts agree with each other: that is
``gradviz.trace.check.invariants``' job, for tests of the engine).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from gradviz.trace import events as ev
from gradviz.trace.errors import TraceError

I64 = 2**63 - 1
U64 = 2**64 - 1
MIN_LIMIT = 1 << 16  # a small trace may still declare a node with many inputs (split into 1000)


class _Bad(Exception):
    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message


def _int(v: Any, field: str, hi: int = I64) -> None:
    if not (0 <= v <= hi):
        raise _Bad(field, f"field '{field}' is {v}, outside 0..{hi}")


class _Checker:
    """The walk's state: what the events so far have announced."""

    def __init__(self, limit: int):
        self.limit = limit
        self.threads: set[int] = set()
        self.queues: set[int] = set()
        self.tensors: set[int] = set()
        self.tasks: set[int] = set()
        self.nodes: dict[int, tuple[int, int]] = {}  # node -> (num_inputs, num_outputs)
        self.total_in = self.total_out = 0  # the nodes' num_inputs and num_outputs, summed

    # -- references
    def thread(self, v: Any, field: str) -> None:
        if v not in self.threads:
            raise _Bad(field, f"field '{field}' is thread {v}, which no thread_start announced before")

    def queue(self, v: Any, field: str) -> None:
        if v not in self.queues:
            raise _Bad(field, f"field '{field}' is queue {v}, which no queue_created announced before")

    def task(self, v: Any, field: str) -> None:
        if v not in self.tasks:
            raise _Bad(field, f"field '{field}' is task {v}, which no task_begin announced before")

    def tensor(self, v: Any, field: str) -> None:
        if v not in self.tensors:
            raise _Bad(field, f"field '{field}' is tensor {v}, which no tensor_created announced before")

    def node(self, v: Any, field: str) -> tuple[int, int]:
        n = self.nodes.get(v)
        if n is None:
            raise _Bad(field, f"field '{field}' is node {v}, which no node_created announced before")
        return n

    def input_slot(self, node: Any, slot: Any, field: str) -> None:
        """``slot`` is one of ``node``'s InputBuffer slots (``node`` checked already)."""
        n_in = self.nodes[node][0]
        if not (0 <= slot < n_in):
            raise _Bad(field, f"field '{field}' is {slot}, but node {node} has {n_in} inputs (slots 0..{n_in - 1})")

    def output_slot(self, node: Any, slot: Any, field: str) -> None:
        """An output edge's slot: an input slot, or 0 of a node of no inputs. grad() gives an input
        that the graph cannot reach and that has no AccumulateGrad an edge (Identity, 0), as
        torch's run_backward does, and the task names it among its outputs and captures."""
        if not (slot == 0 and self.nodes[node][0] == 0):
            self.input_slot(node, slot, field)

    def count(self, v: Any, field: str) -> None:
        if not (0 <= v <= self.limit):
            raise _Bad(field, f"field '{field}' is {v}, outside 0..{self.limit} (the bound for this trace's size)")

    def shape(self, shape: Any, field: str) -> None:
        if shape is not None:
            for d in shape:
                if not (0 <= d <= I64):
                    raise _Bad(field, f"field '{field}' has a dimension {d}, outside 0..{I64}")

    def stats(self, s: Any, field: str) -> None:
        if s is not None and not (0 <= s.nan <= I64 and 0 <= s.inf <= I64):
            raise _Bad(field, f"field '{field}' has NaN/Inf counts {s.nan}/{s.inf}, outside 0..{I64}")

    def edge(self, pair: Any, field: str) -> None:
        """A root or output edge ``(node, input_nr)``."""
        node, nr = pair
        self.node(node, field)
        self.input_slot(node, nr, field)

    def priority(self, p: Any) -> None:
        cls, depth, seq_nr = p
        if cls not in (ev.PRIORITY_SHUTDOWN, ev.PRIORITY_WAKEUP, ev.PRIORITY_NODE):
            raise _Bad("priority", f"field 'priority' has class {cls}, not 0, 1 or 2")
        self.count(depth, "priority")
        _int(seq_nr, "priority", U64)

    def opt_task(self, v: Any, field: str) -> None:
        if v is not None:
            self.task(v, field)

    def opt_node(self, v: Any, field: str) -> None:
        if v is not None:
            self.node(v, field)


def _trace_begin(c: _Checker, e: Any) -> None:
    c.threads.add(e.tid)  # the recorder's first thread, announced by its thread_start next
    _int(e.pid, "pid")


def _thread_start(c: _Checker, e: Any) -> None:
    c.threads.add(e.tid)


def _queue_created(c: _Checker, e: Any) -> None:
    _int(e.queue, "queue")
    if e.owner is not None:
        c.thread(e.owner, "owner")
    c.queues.add(e.queue)


def _tensor_created(c: _Checker, e: Any) -> None:
    _int(e.tensor, "tensor")
    c.shape(e.shape, "shape")
    c.tensors.add(e.tensor)


def _node_created(c: _Checker, e: Any) -> None:
    _int(e.node, "node")
    _int(e.sequence_nr, "sequence_nr", U64)
    _int(e.topological_nr, "topological_nr")
    c.count(e.num_inputs, "num_inputs")
    c.count(e.num_outputs, "num_outputs")
    # Readers allocate by these (InputBuffer slots, next_edges): their sums, not only each one,
    # stay within the bound, so that memory stays proportional to the file's size.
    for field, total in (("num_inputs", c.total_in + e.num_inputs), ("num_outputs", c.total_out + e.num_outputs)):
        if total > c.limit:
            raise _Bad(field, f"field '{field}' is {getattr(e, field)}: the trace's nodes would declare {total} "
                              f"in all, over {c.limit} (the bound for this trace's size)")
    c.total_in += e.num_inputs
    c.total_out += e.num_outputs
    for s in e.saved:
        c.shape(s, "saved")
    if e.tensor is not None:
        c.tensor(e.tensor, "tensor")
    c.nodes[e.node] = (e.num_inputs, e.num_outputs)


def _edge_created(c: _Checker, e: Any) -> None:
    n_out = c.node(e.src, "src")[1]
    if not (0 <= e.slot < n_out):
        raise _Bad("slot", f"field 'slot' is {e.slot}, but node {e.src} has {n_out} outputs")
    if e.dst is None:
        c.count(e.input_nr, "input_nr")
    else:
        c.node(e.dst, "dst")
        c.input_slot(e.dst, e.input_nr, "input_nr")


def _task_begin(c: _Checker, e: Any) -> None:
    _int(e.task, "task")
    for r in e.roots:
        c.edge(r, "roots")
    c.opt_node(e.graph_root, "graph_root")
    for node, nr in e.outputs:
        c.node(node, "outputs")
        c.output_slot(node, nr, "outputs")
    c.count(e.reentrant_depth, "reentrant_depth")
    c.thread(e.owner, "owner")
    c.queue(e.cpu_queue, "cpu_queue")
    c.tasks.add(e.task)


def _task(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")


def _task_node(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")
    c.node(e.node, "node")


def _dependencies(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")
    counts = e.counts
    # One pair a node of the task's graph (200k for a 200k-node task): checked in C first; the
    # loop below names the first wrong one.
    if counts and all(map(c.nodes.__contains__, map(itemgetter(0), counts))):
        n = list(map(itemgetter(1), counts))
        if 0 <= min(n) and max(n) <= c.limit:
            return
    for node, n in counts:
        c.node(node, "counts")
        c.count(n, "counts")


def _exec_info(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")
    for node in e.needed:
        c.node(node, "needed")
    for node, nr, index in e.captured:
        c.node(node, "captured")
        c.output_slot(node, nr, "captured")
        c.count(index, "captured")


def _dependency_decrement(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")
    c.node(e.node, "node")
    c.node(e.by, "by")
    c.count(e.remaining, "remaining")


def _queue_op(c: _Checker, e: Any) -> None:
    c.queue(e.queue, "queue")
    c.opt_task(e.task, "task")
    c.opt_node(e.node, "node")
    c.priority(e.priority)
    c.count(e.size, "size")


def _buffer_add(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")
    c.node(e.node, "node")
    c.input_slot(e.node, e.slot, "slot")
    c.opt_node(e.producer, "producer")
    c.shape(e.shape, "shape")
    c.stats(e.stats, "stats")


def _not_ready_park(c: _Checker, e: Any) -> None:
    _task_node(c, e)
    c.count(e.remaining, "remaining")


def _node_begin(c: _Checker, e: Any) -> None:
    _task_node(c, e)
    c.count(e.depth, "depth")


def _accumulate_grad(c: _Checker, e: Any) -> None:
    _task_node(c, e)
    c.tensor(e.tensor, "tensor")
    c.stats(e.before, "before")
    c.stats(e.after, "after")


def _captured_grad(c: _Checker, e: Any) -> None:
    _task_node(c, e)
    c.output_slot(e.node, e.input_nr, "input_nr")
    c.count(e.index, "index")
    c.stats(e.stats, "stats")


def _saved_release(c: _Checker, e: Any) -> None:
    c.node(e.node, "node")
    c.count(e.count, "count")


def _pool_push(c: _Checker, e: Any) -> None:
    c.task(e.task, "task")
    c.count(e.depth, "depth")


def _error(c: _Checker, e: Any) -> None:
    c.opt_task(e.task, "task")
    c.opt_node(e.node, "node")


def _nothing(c: _Checker, e: Any) -> None:
    pass


def _forward_op(c: _Checker, e: Any) -> None:
    c.opt_node(e.grad_fn, "grad_fn")


def _derived(c: _Checker, e: Any) -> None:
    # a torch recording's list of the events its recorder inferred: each an earlier event
    for s in e.events:
        if not (0 <= s < e.seq):
            raise _Bad("events", f"field 'events' names event {s}, which is not an earlier event")


def _ddp_init(c: _Checker, e: Any) -> None:  # distributed kinds: the only ids they name are leaves
    if len(e.tensors) != len(e.params):
        raise _Bad("tensors", f"field 'tensors' has {len(e.tensors)} ids for {len(e.params)} params")
    for t in e.tensors:
        c.tensor(t, "tensors")


def _collective(c: _Checker, e: Any) -> None:
    _int(e.number, "number")
    if e.kind == "collective_begin":
        c.shape(e.shape, "shape")


_CHECKS: dict[type, Callable[[_Checker, Any], None]] = {
    ev.TraceBegin: _trace_begin, ev.TraceEnd: _nothing, ev.ThreadStart: _thread_start, ev.ThreadEnd: _nothing,
    ev.QueueCreated: _queue_created, ev.TensorCreated: _tensor_created, ev.NodeCreated: _node_created,
    ev.EdgeCreated: _edge_created, ev.TaskBegin: _task_begin, ev.TaskEnd: _task, ev.Dependencies: _dependencies,
    ev.ExecInfo: _exec_info, ev.DependencyDecrement: _dependency_decrement, ev.QueuePush: _queue_op,
    ev.QueuePop: _queue_op, ev.BufferAdd: _buffer_add, ev.NotReadyPark: _not_ready_park,
    ev.NotReadyTake: _task_node, ev.NodeBegin: _node_begin, ev.NodeEnd: _task_node, ev.Hook: _task_node,
    ev.AccumulateGradUpdate: _accumulate_grad, ev.CapturedGrad: _captured_grad, ev.SavedRelease: _saved_release,
    ev.Callback: _task, ev.PoolPush: _pool_push, ev.PoolTake: _task, ev.Error: _error, ev.Anomaly: _task_node,
    ev.EngineInfo: _nothing, ev.Derived: _derived,
    ev.DistInit: _nothing, ev.DdpInit: _ddp_init, ev.DdpForward: _nothing, ev.DdpGrads: _nothing,
    ev.BucketReady: _nothing, ev.BucketDone: _nothing, ev.CollectiveBegin: _collective, ev.CollectiveEnd: _collective,
    # the forward side: tensor ids there name any tensor, not only announced leaves
    ev.ForwardOp: _forward_op, ev.VersionBump: _nothing, ev.GradMode: _nothing, ev.GradReset: _nothing,
    ev.NonLeafGradRead: _nothing, ev.WarningShown: _nothing, ev.Detach: _nothing, ev.BackwardCall: _nothing,
    ev.TensorAtEnd: _nothing,
}
# Events that name no thread of their own before one is announced: the bookends.
_OWN_TID = (ev.TraceBegin, ev.ThreadStart, ev.TraceEnd)


def check_event(c: _Checker, e: Any) -> None:
    """Check one event against what ``c`` has seen (and record what it announces); ``_Bad`` if a
    field is wrong. ``validate``'s loop without its inlined cases, for readers that check lines
    (gradviz.trace.fastload) and meet an event of a kind they do not check themselves."""
    if not (0 <= e.ts <= I64):
        raise _Bad("ts", f"field 'ts' is {e.ts}, outside 0..{I64}")
    t = type(e)
    if e.tid not in c.threads and t not in _OWN_TID:
        c.thread(e.tid, "tid")
    _CHECKS[t](c, e)


def limit_for(n_events: int) -> int:
    """The largest count, size or depth a trace of ``n_events`` events may declare."""
    return max(MIN_LIMIT, 4 * n_events)


def validate(events: list[ev.Event], name: str) -> None:
    """Raise ``TraceError`` at the first field whose value no reader could use (module doc)."""
    limit = limit_for(len(events))
    c = _Checker(limit)
    checks = _CHECKS
    threads, tasks, nodes, queues = c.threads, c.tasks, c.nodes, c.queues
    # The kinds a backward is made of, checked inline (a function call an event was half the
    # time of a million-event trace): a value that passes here is valid; one that does not
    # goes through the kind's check, which names the problem.
    begin, end, push, pop, add, dec = (ev.NodeBegin, ev.NodeEnd, ev.QueuePush, ev.QueuePop, ev.BufferAdd,
                                       ev.DependencyDecrement)
    edge, made = ev.EdgeCreated, ev.NodeCreated
    e: Any = None
    try:
        for e in events:
            ts = e.ts
            if not (0 <= ts <= I64):
                raise _Bad("ts", f"field 'ts' is {ts}, outside 0..{I64}")
            t = type(e)
            if e.tid not in threads and t not in _OWN_TID:
                c.thread(e.tid, "tid")
            if t is begin or t is end:
                if e.task in tasks and e.node in nodes and (t is end or 0 <= e.depth <= limit):
                    continue
            elif t is push or t is pop:
                p = e.priority
                if (e.queue in queues and e.task in tasks and e.node in nodes and p[0] == 2
                        and 0 <= p[1] <= limit and 0 <= p[2] <= U64 and 0 <= e.size <= limit):
                    continue
            elif t is add:
                n = nodes.get(e.node)
                st = e.stats
                if (n is not None and e.task in tasks and 0 <= e.slot < n[0] and e.producer in nodes
                        and (st is None or (0 <= st.nan <= I64 and 0 <= st.inf <= I64))
                        and (not (sh := e.shape) or (min(sh) >= 0 and max(sh) <= I64))):
                    continue
            elif t is made:
                tensor = e.tensor
                n_in, n_out = e.num_inputs, e.num_outputs
                if (0 <= e.node <= I64 and 0 <= e.sequence_nr <= U64 and 0 <= e.topological_nr <= I64
                        and 0 <= n_in and 0 <= n_out and c.total_in + n_in <= limit
                        and c.total_out + n_out <= limit and not e.saved
                        and (tensor is None or tensor in c.tensors)):
                    nodes[e.node] = (n_in, n_out)
                    c.total_in += n_in
                    c.total_out += n_out
                    continue
            elif t is edge:
                src, dst = nodes.get(e.src), e.dst
                if src is not None and 0 <= e.slot < src[1]:
                    if dst is None:
                        if 0 <= e.input_nr <= limit:
                            continue
                    else:
                        d = nodes.get(dst)
                        if d is not None and 0 <= e.input_nr < d[0]:
                            continue
            elif t is dec:
                if e.task in tasks and e.node in nodes and e.by in nodes and 0 <= e.remaining <= limit:
                    continue
            checks[t](c, e)
    except _Bad as b:
        raise TraceError(f"{name}: event {e.seq} ({e.kind}): {b.message}") from None
