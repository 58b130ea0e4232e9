"""Large traces (issue 18, item 9): what a command costs grows with the events once, not once
per index. benchmarks/bench_large.py measures a million events; these tests pin the shape."""

from __future__ import annotations

from trace_builders import diamond, reentrant

from gradviz.trace.model import Trace
from gradviz.trace.summary import summarize


class CountingList(list):
    """A list of events that counts how often it is walked from the start."""

    walks = 0

    def __iter__(self):
        CountingList.walks += 1
        return super().__iter__()


def test_summarize_walks_the_events_twice_not_once_per_index():
    """info on a million events took 11 s: each index (nodes, tasks, threads, queues, kinds,
    errors, execution order, per-thread counts, anomalies) walked every event again."""
    for build in (diamond, reentrant):
        events = build().events
        CountingList.walks = 0
        t = Trace(CountingList(events))
        s = summarize(t)
        assert CountingList.walks <= 2, CountingList.walks  # by_kind, and the per-thread counts
        plain = summarize(Trace(list(events)))
        assert s == plain


def test_the_indexes_read_from_one_pass_agree_with_the_events():
    t = Trace(reentrant().events)
    for kind, n in t.kinds.items():
        assert n == sum(1 for e in t.events if e.kind == kind)
    assert list(t.kinds) == list(dict.fromkeys(e.kind for e in t.events))  # order of first appearance
    assert t.execution_order_ids() == [e.node for e in t.events if e.kind == "node_begin"]
    for nid, info in t.nodes.items():
        edges = [(e.dst, e.input_nr) for e in t.events if e.kind == "edge_created" and e.src == nid]
        assert info.next_edges == edges
