"""Reading a clean trace by its lines: checked once, its events made only when asked for.

``gradviz.load`` turns every event into a Python object and then checks every field of every
event; a million events cost seconds and hundreds of megabytes before a command starts. Most
lines of a recording are group lines (``codec.GROUPS``) whose events share their fields, and
most commands need a few facts about most events (how many of each kind, which nodes exist)
and the objects of only some of them. So, for a file of this gradviz's own layout, ``scan``:

- decodes each megabyte of lines into msgspec's typed line records (every field's type checked
  in C, as the general reader's typed batches are);
- checks each line's values once for all of its events (``gradviz.trace.validate``'s rules,
  inlined for the kinds a backward is made of; other kinds become events and go through
  ``validate.check_event``);
- counts what summaries need (events by kind and by thread, node runs by task, node names) and
  keeps the events of the rare kinds (tasks, threads, queues, tensors, errors, ...);
- and either keeps every event (``keep_events``: the command wants them all) or only the file's
  bytes and where each megabyte starts (``Index``): events are decoded again, chunk by chunk,
  when a reader walks them (``Trace.iter_events``) or asks for all of them (``Trace.events``).

Anything it does not take for certain (a line msgspec refuses, a value a check rejects, a
bookend out of place, a file cut short, strings with terminal controls, a format 2 file)
raises ``Fallback``, and the general reader reads the file from the start: every damaged
trace gets the same one-line error or warning as before, from the same code. The fast checks
are never looser than ``validate``'s (their limit is a lower bound of the trace's, confirmed
once the events are counted), so what passes here passes there.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any, Protocol

from gradviz.trace import codec
from gradviz.trace import events as ev
from gradviz.trace.codec_typed import LINES, _typed_stats, converters_for
from gradviz.trace.validate import I64, U64, _Bad, _Checker, check_event, limit_for

CHUNK_BYTES = 1 << 20  # lines decoded per msgspec call

# Event kinds that group lines (and the common single lines) carry: counted, not kept, when lazy.
BULK = frozenset({
    ev.DependencyDecrement, ev.BufferAdd, ev.QueuePush, ev.QueuePop, ev.NodeBegin, ev.NodeEnd,
    ev.NodeCreated, ev.EdgeCreated,
})
_MEMBERS = {kind: tuple(m for m, _ in members) for kind, (_, members) in codec.GROUPS.items()}


# The line kinds whose records ``Index.fold_events`` hands on as they are: the fold applies their
# events from the record's fields (gradviz.replay.lines has a fold for each).
FOLD_RAW = frozenset({
    "gradient_in", "node_pop", "chain_step", "node_begin", "node_end", "queue_push", "queue_pop",
    "dependency_decrement", "buffer_add", "node_edges",
})

_tid_of = attrgetter("tid")
_ts_of = attrgetter("ts")
_seq_of = attrgetter("seq")


class Fallback(Exception):
    """This path does not take the file: the general reader reads it (and names any problem)."""


def available() -> bool:
    return bool(LINES) and LINES.get("decode") is not None


class BulkSink(Protocol):
    """Where ``Index.iter_task_events`` sends the fields of the lines it does not make events of
    (``add``'s ``norm``: the gradient's stats' norm, None without stats; ``bad``: a NaN or Inf
    in it)."""

    def begin(self, seq: int, tid: int, task: int, node: int) -> None: ...
    def end(self, seq: int, tid: int, task: int, node: int, status: str) -> None: ...
    def add(self, seq: int, task: int, node: int, producer: int | None, slot: int,
            shape: tuple[int, ...] | None, norm: float | None, bad: bool) -> None: ...

    # A sink that needs the whole stats (gradviz diff) also has ``add_raw(seq, task, node,
    # producer, slot, mode, stats)``, called instead of ``add`` with the stats as the line holds
    # them (``stats_of_line`` reads them).


def stats_of_line(st: Any) -> ev.Stats | None:
    """A line's stats as recorded (a finite float, a five-item array, or None), as a Stats."""
    return None if st is None else _typed_stats(st)


def norm_and_bad(st: Any) -> tuple[float | None, bool]:
    """(norm, NaN or Inf in it) of a line's stats as recorded (its Stats' norm and counts): a
    finite float, the usual form, without making the Stats."""
    if type(st) is float and st - st == 0.0:
        return abs(st), False
    return ev.norm_and_bad(None if st is None else _typed_stats(st))


class Index:
    """A checked trace's bytes, where each chunk of lines starts, and what a summary needs."""

    def __init__(self, data: bytes, chunks: list[tuple[int, int, int]], n_events: int) -> None:
        self.data = data
        self.chunks = chunks  # (start, end, seq of its first event): data[start:end] is its lines
        self.n_events = n_events
        self.graph_chunks: set[int] = set()  # the chunks that announce nodes or edges
        self.kinds: dict[str, int] = {}  # events by kind, in order of first appearance
        self.per_thread: dict[int, int] = {}  # events by tid
        self.runs: dict[int, int] = {}  # node_begin events by task
        self.node_names: dict[int, str] = {}  # node id -> name (the last node_created of the id)
        self.node_tensors: dict[int, int] = {}  # AccumulateGrad node -> its leaf
        self.rare: dict[type[ev.Event], list[ev.Event]] = {}  # events of the kinds not in BULK
        self.first: ev.Event | None = None  # trace_begin
        self.last: ev.Event | None = None  # trace_end
        self.records: dict[int, list[Any]] = {}  # chunk -> its line records, kept from the check
        self.skipped: frozenset[type[ev.Event]] = frozenset()  # rare kinds not kept (scan's skip)
        # The events the file declares, where only the chunks before a step were read (scan's
        # prefix_to; n_events counts theirs); None where all of them were.
        self.total: int | None = None

    def _chunk_events(self, start: int, end: int, seq: int) -> list[ev.Event]:
        records = LINES["decode"](b"[" + self.data[start:end] + b"]")
        conv = LINES["convert"]
        out: list[ev.Event] = []
        append = out.append
        for r in records:
            seq = conv[type(r)](r, seq, append)
        return out

    def _chunk_events_of(self, start: int, end: int, seq: int, conv: dict[Any, Any]) -> list[ev.Event]:
        """The chunk's events of some types only (``conv``: converters_for's)."""
        out: list[ev.Event] = []
        append = out.append
        for r in LINES["decode"](b"[" + self.data[start:end] + b"]"):
            c = conv[type(r)]
            seq = c(r, seq, append) if c is not None else seq + _width(r)
        return out

    def _chunks_between(self, start: int, stop: int) -> Iterator[tuple[int, int, int, int]]:
        """(start byte, end byte, seq of its first event, seq after its last) of each chunk that
        holds events ``start`` to ``stop`` (exclusive)."""
        chunks = self.chunks
        for k, (s, e, seq) in enumerate(chunks):
            nxt = chunks[k + 1][2] if k + 1 < len(chunks) else self.n_events
            if nxt <= start:
                continue
            if seq >= stop:
                return
            yield s, e, seq, nxt

    def iter_events(self, start: int = 0, stop: int | None = None,
                    types: frozenset[type] | None = None) -> Iterator[ev.Event]:
        """Events ``start`` to ``stop`` (exclusive), decoded a chunk at a time and not kept;
        ``types``: only the events of these types (the others are not made at all)."""
        stop = self.n_events if stop is None else min(stop, self.n_events)
        conv = converters_for(types) if types is not None else None
        for s, e, seq, nxt in self._chunks_between(start, stop):
            if conv is not None:
                evs = self._chunk_events_of(s, e, seq, conv)
                if seq < start or nxt > stop:
                    evs = [x for x in evs if start <= x.seq < stop]
                yield from evs
                continue
            evs = self._chunk_events(s, e, seq)
            lo, hi = max(0, start - seq), min(len(evs), stop - seq)
            yield from evs[lo:hi] if lo or hi < len(evs) else evs

    def iter_task_events(self, start: int, stop: int | None, types: frozenset[type],
                         bulk: BulkSink) -> Iterator[ev.Event]:
        """``iter_events(start, stop, types)`` for render's task pass, except that the
        node_begin, node_end and gradient_in lines, most of a backward's lines, are not made
        into events: their fields go to ``bulk``'s methods as each is reached (in order with
        the events yielded). Making 600k event objects only to read four fields of
        each was most of the pass. ``types`` must hold NodeBegin, NodeEnd and BufferAdd."""
        stop = self.n_events if stop is None else min(stop, self.n_events)
        T = LINES["types"]
        NB, NE, GI = T["node_begin"], T["node_end"], T["gradient_in"]
        gi_width = len(_MEMBERS["gradient_in"])
        add_at = _MEMBERS["gradient_in"].index("buffer_add")  # the buffer_add's seq in its line
        begin, end, add = bulk.begin, bulk.end, bulk.add
        add_raw = getattr(bulk, "add_raw", None)
        conv = converters_for(types)
        NED = T["node_edges"]  # the one line whose width varies (a node and its edges)
        widths = {rec: len(_MEMBERS.get(tag, (tag,))) for tag, rec in T.items()}
        out: list[ev.Event] = []
        append = out.append
        kept = self.records  # the check's records, where the load kept them (``fold_to``): read once
        for k, (s, e, seq, _) in enumerate(self._chunks_between(start, stop)):
            records = kept.pop(k, None) if start == 0 else None  # (k counts from chunk 0 only then)
            for r in records if records is not None else LINES["decode"](b"[" + self.data[s:e] + b"]"):
                t = type(r)
                if t is NB:
                    if start <= seq < stop:
                        begin(seq, r.tid, r.task, r.node)
                    seq += 1
                elif t is NE:
                    if start <= seq < stop:
                        end(seq, r.tid, r.task, r.node, r.status)
                    seq += 1
                elif t is GI:
                    if start <= seq + add_at < stop:  # as its converter makes the buffer_add
                        st = r.stats
                        if add_raw is not None:
                            add_raw(seq + add_at, r.task, r.node, r.by, r.slot, r.mode, st)
                        elif type(st) is float and st - st == 0.0:  # (norm_and_bad's usual case, inlined)
                            add(seq + add_at, r.task, r.node, r.by, r.slot, r.shape, abs(st), False)
                        else:
                            add(seq + add_at, r.task, r.node, r.by, r.slot, r.shape, *norm_and_bad(st))
                    seq += gi_width
                elif (c := conv[t]) is None:  # queue lines and the like: only counted
                    seq += _width(r) if t is NED else widths[t]
                else:
                    seq = c(r, seq, append)
                    yield from (x for x in out if start <= x.seq < stop)
                    out.clear()

    def fold_events(self, stop: int) -> Iterator[Any]:
        """Events 0 to ``stop`` (exclusive) for a fold (gradviz.replay.state): the lines of the
        kinds in ``FOLD_RAW`` as their records, which the fold applies from their fields
        (gradviz.replay.lines), and the others' events; the line that holds the last event
        before ``stop`` always as events. Made a chunk at a time, into a list that
        itertools.chain hands on: no Python frame resumed for each item."""
        return itertools.chain.from_iterable(self._fold_chunks(min(stop, self.n_events)))

    def _fold_chunks(self, stop: int) -> Iterator[list[Any]]:
        """``fold_events``' items, a list a chunk."""
        decode, conv, T = LINES["decode"], LINES["convert"], LINES["types"]
        NE = T["node_edges"]
        raw = {T[kind]: len(_MEMBERS.get(kind, (kind,))) for kind in FOLD_RAW if kind in T and kind != "node_edges"}
        all_raw = {*raw, NE}
        chunks = self.chunks
        for k, (s, e, seq) in enumerate(chunks):
            if seq >= stop:
                return
            records = self.records.pop(k, None)  # read once: kept no longer than that
            if records is None:
                records = decode(b"[" + self.data[s:e] + b"]")
            after = chunks[k + 1][2] if k + 1 < len(chunks) else self.n_events
            if after < stop and all_raw.issuperset(map(type, records)):
                yield records  # every line whole before the stop, and each one the fold takes as is
                continue
            out: list[Any] = []
            append = out.append
            for r in records:
                if seq >= stop:
                    break
                t = type(r)
                w = raw.get(t)
                if w is None and t is NE:
                    w = 1 + len(r.edges)
                if w is not None and seq + w < stop:
                    append(r)
                    seq += w
                else:
                    seq = conv[t](r, seq, append)
            if seq > stop:  # the last line's events past the stop (events, never a count)
                del out[len(out) - (seq - stop) :]
            yield out

    def head(self, n: int) -> list[ev.Event]:
        """The first ``n`` events, from the first ``n`` lines alone (each holds an event or more):
        a summary's look at the start of a trace (which engine recorded it) decoded the whole
        first chunk, and made its thousands of events, for a few."""
        s, e, _ = self.chunks[0]
        cut = s
        for _ in range(n):  # a line ends at ",\n": JSON strings hold no raw newline
            cut = self.data.find(b",\n", cut, e) + 2
            if cut == 1:  # the chunk is shorter than that: the general way
                return list(self.iter_events(0, n))
        out: list[ev.Event] = []
        seq = 0
        conv = LINES["convert"]
        for r in LINES["decode"](b"[" + self.data[s : cut - 2] + b"]") if n > 0 else ():
            seq = conv[type(r)](r, seq, out.append)
        return out[:n]

    def graph_events(self) -> tuple[list[ev.Event], list[ev.Event]]:
        """(node_created events, edge_created events), from the chunks that hold them, and the
        other lines of those chunks left as they are (``Trace.nodes`` without every event)."""
        types = LINES["types"]
        wanted = {types["node_edges"], types["node_created"], types["edge_created"]}
        conv = LINES["convert"]
        made: list[ev.Event] = []
        edges: list[ev.Event] = []
        for k in sorted(self.graph_chunks):
            s, e, seq = self.chunks[k]
            for r in LINES["decode"](b"[" + self.data[s:e] + b"]"):
                t = type(r)
                if t in wanted:
                    out: list[ev.Event] = []
                    seq = conv[t](r, seq, out.append)
                    for x in out:
                        (made if type(x) is ev.NodeCreated else edges).append(x)
                else:
                    seq += _width(r)
        return made, edges

    def node_infos(self, info: Any) -> dict[int, Any]:
        """``Trace.nodes`` (``info``: its NodeInfo class) straight from the lines that announce
        nodes and edges, in file order, as Trace._index_nodes fills it from their events. The
        line records kept from the check for a fold (``records``) are read, not decoded again,
        and left for the fold."""
        nodes: dict[int, Any] = {}
        for k in sorted(self.graph_chunks):
            s, e, seq = self.chunks[k]
            records = self.records.get(k)
            if records is None:
                records = LINES["decode"](b"[" + self.data[s:e] + b"]")
            node_lines(records, seq, nodes, info)
        return nodes

    def events(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        for s, e, seq in self.chunks:
            out += self._chunk_events(s, e, seq)
        return out


def node_lines(records: list[Any], seq: int, nodes: dict[int, Any], info: Callable[..., Any]) -> None:
    """Fill ``nodes`` (node id -> ``info(id, name, sequence_nr, topological_nr, num_inputs,
    num_outputs, device, saved, source, tensor, tid, seq, next_edges, columns)``, which has ``seq`` and
    ``next_edges``) from a chunk's line records (``seq``: its first event's) that announce
    nodes and edges, as Trace._index_nodes fills it from their events: the last node of an id
    counts, and an edge only of a node made before it."""
    T = LINES["types"]
    graph = {T["node_edges"], T["node_created"], T["edge_created"]}
    widths = _widths()
    for r in records:
        t = type(r)
        seq = _node_line(r, seq, nodes, info) if t in graph else seq + widths[t]


def _node_line(r: Any, seq: int, nodes: dict[int, Any], info: Callable[..., Any]) -> int:
    """``node_lines`` for one node_edges, node_created or edge_created line: the next seq."""
    T = LINES["types"]
    t = type(r)
    if t is T["node_edges"]:
        n_out, edges = r.num_outputs, r.edges
        nxt = [(None, 0)] * n_out
        nxt[: len(edges)] = edges  # validated: len(edges) <= n_out, each a (dst, input_nr)
        nodes[r.node] = info(r.node, r.name, r.sequence_nr, r.topological_nr, r.num_inputs, n_out,
                             r.device, r.saved, r.source, r.tensor, r.tid, seq, nxt, r.columns)
        return seq + 1 + len(edges)
    out: list[Any] = []
    seq = LINES["convert"][t](r, seq, out.append)
    x = out[0]
    if t is T["node_created"]:
        nodes[x.node] = info(x.node, x.name, x.sequence_nr, x.topological_nr, x.num_inputs,
                             x.num_outputs, x.device, x.saved, x.source, x.tensor, x.tid, x.seq,
                             [(None, 0)] * x.num_outputs, x.columns)
    else:
        src = nodes.get(x.src)
        if src is not None and src.seq < x.seq and 0 <= x.slot < len(src.next_edges):
            src.next_edges[x.slot] = (x.dst, x.input_nr)
    return seq


@functools.cache
def _widths() -> dict[Any, int]:
    """Line record type -> how many events a line of it stands for (node_edges, whose count is
    1 + its edges, is not here)."""
    return {rec: len(_MEMBERS.get(tag, (tag,))) for tag, rec in LINES["types"].items() if tag != "node_edges"}


def task_lines(records: list[Any], seq: int, conv: dict[Any, Any], bulk: Any,
               nodes: dict[int, Any] | None = None, info: Callable[..., Any] | None = None) -> None:
    """A chunk's line records (``seq``: its first event's) as ``Index.iter_task_events`` reads
    them, for a reader handed the chunks as they are checked (``scan``'s ``then``): the
    node_begin, node_end and gradient_in lines' fields to ``bulk.begin``, ``bulk.end`` and
    ``bulk.add_raw`` (the stats as the line holds them: ``stats_of_line``), the other lines'
    events of ``conv``'s types (``converters_for``) to ``bulk.event``, all in file order; with
    ``nodes``, the lines that announce nodes and edges fill it as ``node_lines`` does (one loop
    over the lines, not two). ``conv`` must not make node_created or edge_created events."""
    T = LINES["types"]
    NB, NE, GI, NED = T["node_begin"], T["node_end"], T["gradient_in"], T["node_edges"]
    gi_width = len(_MEMBERS["gradient_in"])
    add_at = _MEMBERS["gradient_in"].index("buffer_add")  # the buffer_add's seq in its line
    begin, end, add_raw, event = bulk.begin, bulk.end, bulk.add_raw, bulk.event
    widths = _widths()
    graph = {NED, T["node_created"], T["edge_created"]} if nodes is not None else set()
    out: list[ev.Event] = []
    append = out.append
    for r in records:
        t = type(r)
        if t is NB:
            begin(seq, r.tid, r.task, r.node)
            seq += 1
        elif t is NE:
            end(seq, r.tid, r.task, r.node, r.status)
            seq += 1
        elif t is GI:
            add_raw(seq + add_at, r.task, r.node, r.by, r.slot, r.mode, r.stats)
            seq += gi_width
        elif (c := conv[t]) is None:
            if t in graph:
                seq = _node_line(r, seq, nodes, info)  # type: ignore[arg-type]
            else:
                seq += _width(r) if t is NED else widths[t]
        else:
            seq = c(r, seq, append)
            for x in out:
                event(x)
            out.clear()


def _width(r: Any) -> int:
    """How many events a line record stands for."""
    tag = r.__struct_config__.tag
    if tag == "node_edges":
        return 1 + len(r.edges)
    return len(_MEMBERS.get(tag, (tag,)))


def _stats_ok(st: Any) -> bool:
    """A line's raw stats that become a Stats without a problem, with valid NaN/Inf counts."""
    if st is None:
        return True
    if type(st) is float:
        return st - st == 0.0
    return (type(st[0]) is float and type(st[1]) is float and type(st[2]) is float
            and 0 <= st[3] <= I64 and 0 <= st[4] <= I64)


def _shape_ok(sh: Any) -> bool:
    return not sh or (min(sh) >= 0 and max(sh) <= I64)


def _declared_total(last: tuple[int, int], data: bytes) -> int | None:
    """The events in the file as its last line declares them, if that line is a trace_end (its
    count is of the events before it)."""
    try:
        records = LINES["decode"](b"[" + data[last[0] : last[1]] + b"]")
    except (ValueError, RecursionError):
        return None
    if len(records) != 1 or type(records[0]) is not LINES["types"]["trace_end"]:
        return None
    return records[0].events + 1


def _chunks(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of whole lines, about CHUNK_BYTES each; the last is the last event's line,
    which must be followed by the footer alone (else: not a finished file, Fallback)."""
    out = []
    pos = 0
    while True:
        end = data.find(b",\n", pos + CHUNK_BYTES)
        if end < 0:
            end = data.rfind(b",\n", pos)
            if end < pos:
                break
        out.append((pos, end))
        pos = end + 2
    tail = data[pos:]
    body = tail.rstrip()
    if not body.endswith(b"]}"):
        raise Fallback
    body = body[:-2].rstrip()
    lead = len(body) - len(body.lstrip())
    body = body.strip()
    if not body or b"\n" in body or body.endswith(b","):
        raise Fallback
    out.append((pos + lead, pos + lead + len(body)))
    return out


def scan(data: bytes, keep_events: bool, records_to: int = 0, prefix_to: int = 0,
         then: Callable[[list[Any], int], None] | None = None,
         skip: frozenset[type[ev.Event]] = frozenset()) -> tuple[list[ev.Event] | None, Index]:
    """Check a format 3+ stream's lines (``data``: everything after the header line); see the
    module doc. Returns (every event if ``keep_events`` else None, the index). ``records_to``:
    the line records of the chunks that hold events before it stay in the index, for a fold to
    that step (``Index.fold_events``) that would otherwise decode them a second time.

    ``then(records, seq)``: called with each chunk's line records (``seq``: its first event's)
    once the chunk is checked, before they are let go: a reader that needs one pass over all of
    the lines (gradviz diff) reads them as the check decodes them, without keeping them. What it
    was handed counts only if ``scan`` returns: a later chunk may still send the file the
    general way (``Fallback``).

    ``skip`` (without ``keep_events``): rare kinds whose events the index does not keep (their
    lines are checked and counted as any other's); ``Index.skipped`` names them, and a Trace
    decodes them again if asked (``Trace.of_kind``). A reader that needs none of them (diff
    and the forward side's ops, one a forward op) spares making and keeping them.

    ``prefix_to`` (without ``keep_events``): only the chunks that hold the events before it are
    read and checked, in a file whose last line is its trace_end; the index is theirs (its
    ``n_events`` theirs too), and ``Index.total`` the count that trace_end declares. A command
    that shows one step needs nothing after it (replay --step)."""
    ranges = _chunks(data)
    total = _declared_total(ranges[-1], data) if prefix_to > 0 and not keep_events else None
    decode, conv, T = LINES["decode"], LINES["convert"], LINES["types"]
    # A lower bound of limit_for(events): at least an event a line but the footer's.
    limit = limit_for(max(0, data.count(b"\n") - 2))
    c = _Checker(limit)
    threads, tasks, nodes, queues, tensors = c.threads, c.tasks, c.nodes, c.queues, c.tensors
    GI, NP, CS, NE = T["gradient_in"], T["node_pop"], T["chain_step"], T["node_edges"]
    NB, ND, PU, PO = T["node_begin"], T["node_end"], T["queue_push"], T["queue_pop"]
    DD, BA = T["dependency_decrement"], T["buffer_add"]
    TB, TE, FO = T["trace_begin"], T["trace_end"], T["forward_op"]
    fo_conv = conv[FO]
    fo_kept: list[ev.Event] | None = None if ev.ForwardOp in skip else []
    graph_types = {NE, T["node_created"], T["edge_created"]}
    graph_chunks: set[int] = set()
    line_count: dict[type, int] = {}
    seen: set[type] = set()
    order: list[str] = []  # event kinds in order of first appearance
    per_thread: dict[int, int] = {}
    runs: dict[int, int] = {}
    names: dict[int, str] = {}
    node_tensors: dict[int, int] = {}
    rare: dict[type[ev.Event], list[ev.Event]] = {}
    kept_records: dict[int, list[Any]] = {}  # none when every event is made here (keep_events)
    kept: list[ev.Event] | None = [] if keep_events else None
    chunks: list[tuple[int, int, int]] = []
    n_edges = 0
    edges_seen = False
    seq = 0
    first = last = None
    ended = False

    def slow(r: Any, seq: int) -> list[ev.Event]:
        """A line the inlined checks do not take: its events, each checked in full."""
        out: list[ev.Event] = []
        try:
            conv[type(r)](r, seq, out.append)
        except (codec.FieldProblem, ValueError, TypeError):
            raise Fallback from None
        for e in out:
            check_event(c, e)
        return out

    try:
        for start, end in ranges:
            if total is not None and seq >= prefix_to:
                break  # every event before prefix_to is in the chunks checked
            try:
                records = decode(b"[" + data[start:end] + b"]")
            except (ValueError, RecursionError):
                raise Fallback from None
            if ended:
                raise Fallback  # something after trace_end
            chunks.append((start, end, seq))
            seq0 = seq
            if seq < records_to and kept is None:
                kept_records[len(chunks) - 1] = records
            here = Counter(map(type, records))  # lines by kind, counted in C
            if not graph_types.isdisjoint(here):
                graph_chunks.add(len(chunks) - 1)  # Index.graph_events decodes only these again
            for t, n in here.items():
                line_count[t] = line_count.get(t, 0) + n
            if not seen.issuperset(here) or (not edges_seen and NE in here):
                for r in records:  # a kind's first line: its events' kinds, in order of appearance
                    t = type(r)
                    if t not in seen:
                        seen.add(t)
                        order.extend(_MEMBERS.get(t.__struct_config__.tag, (t.__struct_config__.tag,)))
                    if t is NE and r.edges and not edges_seen:  # after its node_created
                        edges_seen = True
                        order.append("edge_created")
            # What each line's inlined check starts with, for the whole chunk at once in C: times
            # in range, threads announced before the chunk (they are never taken back). A chunk
            # that fails it (one with a thread_start, say) is checked line by line.
            tids = set(map(_tid_of, records))
            times = list(map(_ts_of, records))
            chunk_ok = bool(records) and 0 <= min(times) and max(times) <= I64 and threads.issuperset(tids)
            for r in records:
                t = type(r)
                if chunk_ok or (0 <= r.ts <= I64 and r.tid in threads):
                    if t is GI:
                        node, task, by, p = r.node, r.task, r.by, r.priority
                        nd = nodes.get(node)
                        if (nd is not None and task in tasks and by in nodes and 0 <= r.remaining <= limit
                                and 0 <= r.slot < nd[0] and _stats_ok(r.stats) and r.values is None
                                and _shape_ok(r.shape) and r.queue in queues and p[0] == 2 and 0 <= p[1] <= limit
                                and 0 <= p[2] <= U64 and 0 <= r.size <= limit):
                            seq += 3
                            continue
                    elif t is NE:
                        node, n_in, n_out, tensor, edges = r.node, r.num_inputs, r.num_outputs, r.tensor, r.edges
                        if (0 <= node <= I64 and 0 <= r.sequence_nr <= U64 and 0 <= r.topological_nr <= I64
                                and 0 <= n_in and 0 <= n_out and c.total_in + n_in <= limit
                                and c.total_out + n_out <= limit and len(edges) <= n_out
                                and (tensor is None or tensor in tensors)
                                and all(_shape_ok(s) for s in r.saved)):
                            for dst, nr in edges:
                                if dst is None:
                                    if not 0 <= nr <= limit:
                                        break
                                else:
                                    d = (n_in, n_out) if dst == node else nodes.get(dst)
                                    if d is None or not 0 <= nr < d[0]:
                                        break
                            else:
                                nodes[node] = (n_in, n_out)
                                c.total_in += n_in
                                c.total_out += n_out
                                names[node] = r.name
                                if tensor is not None:
                                    node_tensors[node] = tensor
                                elif node in node_tensors:  # an id made again: the last one counts
                                    del node_tensors[node]
                                n_edges += len(edges)
                                seq += 1 + len(edges)
                                continue
                    elif t is NP:
                        task, p = r.task, r.priority
                        if (r.queue in queues and task in tasks and r.node in nodes and p[0] == 2
                                and 0 <= p[1] <= limit and 0 <= p[2] <= U64 and 0 <= r.size <= limit
                                and 0 <= r.depth <= limit):
                            runs[task] = runs.get(task, 0) + 1
                            seq += 2
                            continue
                    elif t is NB or t is ND:
                        task = r.task
                        if task in tasks and r.node in nodes and (t is ND or 0 <= r.depth <= limit):
                            if t is NB:
                                runs[task] = runs.get(task, 0) + 1
                            seq += 1
                            continue
                    elif t is PU or t is PO:
                        p = r.priority
                        if (r.queue in queues and r.task in tasks and r.node in nodes and p[0] == 2
                                and 0 <= p[1] <= limit and 0 <= p[2] <= U64 and 0 <= r.size <= limit):
                            seq += 1
                            continue
                    elif t is CS:
                        node, task, by, p = r.node, r.task, r.by, r.priority
                        nd = nodes.get(node)
                        if (nd is not None and task in tasks and by in nodes and 0 <= r.slot < nd[0]
                                and _stats_ok(r.stats) and r.values is None and _shape_ok(r.shape)
                                and r.queue in queues and p[0] == 2 and 0 <= p[1] <= limit and 0 <= p[2] <= U64
                                and 0 <= r.push_size <= limit and 0 <= r.size <= limit
                                and 0 <= r.depth <= limit):
                            runs[task] = runs.get(task, 0) + 1
                            seq += 6
                            continue
                    elif t is DD:
                        if r.task in tasks and r.node in nodes and r.by in nodes and 0 <= r.remaining <= limit:
                            seq += 1
                            continue
                    elif t is FO:
                        if r.grad_fn is None or r.grad_fn in nodes:  # validate's one check of its fields
                            seq = seq + 1 if fo_kept is None else fo_conv(r, seq, fo_kept.append)
                            continue
                    elif t is BA:
                        nd = nodes.get(r.node)
                        if (nd is not None and r.task in tasks and 0 <= r.slot < nd[0] and r.producer in nodes
                                and _stats_ok(r.stats) and r.values is None and _shape_ok(r.shape)):
                            seq += 1
                            continue
                # everything else, and any line an inlined check did not pass: event by event
                if t is TB:
                    if seq != 0 or r.format_version > ev.FORMAT_VERSION:
                        raise Fallback
                elif seq == 0:
                    raise Fallback  # the first event must be trace_begin: the general reader says so
                elif t is TE:
                    if r.events != seq or r is not records[-1]:
                        raise Fallback  # a wrong count, or something after trace_end
                    ended = True
                evs = slow(r, seq)
                for e in evs:
                    te = type(e)
                    if te is ev.NodeBegin:
                        runs[e.task] = runs.get(e.task, 0) + 1
                    elif te is ev.NodeCreated:
                        names[e.node] = e.name
                        if e.tensor is not None:
                            node_tensors[e.node] = e.tensor
                        else:
                            node_tensors.pop(e.node, None)
                    elif te is ev.EdgeCreated and t is NE:  # a plain edge_created line is counted as a line
                        n_edges += 1
                    if te not in BULK and te not in skip:
                        rare.setdefault(te, []).append(e)
                seq += len(evs)
                if t is TB:
                    first = evs[0]
                elif t is TE:
                    last = evs[0]
            if len(tids) == 1:  # one thread's lines (the usual chunk): all the chunk's events are its
                tid = tids.pop()
                per_thread[tid] = per_thread.get(tid, 0) + seq - seq0
            else:  # every event of a line has the line's tid
                for r in records:
                    per_thread[r.tid] = per_thread.get(r.tid, 0) + _width(r)
            if then is not None:
                then(records, seq0)
            if kept is not None:
                append = kept.append
                try:
                    s = seq0
                    for r in records:
                        s = conv[type(r)](r, s, append)
                except (codec.FieldProblem, ValueError, TypeError):
                    raise Fallback from None
    except _Bad:
        raise Fallback from None
    if ended:
        total = None  # all of it was read after all
    elif total is None or first is None or seq > total:
        raise Fallback  # not finished, or a prefix longer than the file says it is
    if ended and (first is None or limit_for(seq) < limit):
        raise Fallback  # the bound used here was not a lower bound after all
    if fo_kept:
        rare[ev.ForwardOp] = sorted(rare.get(ev.ForwardOp, []) + fo_kept, key=_seq_of)
    index = Index(b"" if keep_events else data, chunks, seq)
    index.total = total
    index.skipped = skip
    counts: dict[str, int] = {}
    for t, n in line_count.items():
        tag = t.__struct_config__.tag
        for m in _MEMBERS.get(tag, (tag,)):
            counts[m] = counts.get(m, 0) + n
    if n_edges:
        counts["edge_created"] = counts.get("edge_created", 0) + n_edges
    index.kinds = {k: counts[k] for k in dict.fromkeys(order) if counts.get(k)}
    index.per_thread, index.runs, index.node_names, index.node_tensors = per_thread, runs, names, node_tensors
    index.rare, index.first, index.last, index.graph_chunks = rare, first, last, graph_chunks
    index.records = kept_records
    return kept, index
