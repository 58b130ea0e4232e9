"""Issue 4, must show 1: for every differential program of the core, the recorded trace's
execution order is the order torch runs the same program in, and the trace's nodes and edges
are exactly the program's graph (torch's next_functions).

torch is the oracle, run with pre-hooks on every node (tests/_diff.py); gradviz runs the same
program inside ``gradviz.record()`` with no hooks at all, so the trace alone has to tell.
"""

from __future__ import annotations

import pytest
import torch  # noqa: F401 - the oracle is required: missing, these tests fail rather than skip
from _diff import run_on, walk

import gradviz
from gradviz.trace import events as ev
from gradviz.trace.check import invariants
from tests.ops.test_differential import PROGRAMS


def _recorded(prog):
    gradviz.manual_seed(0)
    with gradviz.record() as rec:
        case = prog(gradviz)
        structure, nodes = walk(case.roots)
        # torch's pre-hooks go on here, so only what run() does is compared: note where it starts.
        start = len(rec.trace.events)
        if case.run is not None:
            case.run()
    return rec.trace, start, structure, nodes, case


def _trace_structure(trace, ids: list[int]) -> list[tuple[str, tuple]]:
    """The walked nodes as the trace knows them, edges pointing at walk positions."""
    position = {node_id: i for i, node_id in enumerate(ids)}
    out = []
    for node_id in ids:
        info = trace.nodes[node_id]
        edges = tuple((None if dst is None else position[dst], nr) for dst, nr in info.next_edges)
        out.append((info.name, edges))
    return out


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_trace_order_and_graph_match_torch(name):
    prog = PROGRAMS[name]
    ref = run_on(prog, torch)
    trace, start, structure, nodes, case = _recorded(prog)
    ids = [fn._id for fn in nodes]
    # The trace's graph, rebuilt from node_created/edge_created events alone, is torch's graph.
    assert _trace_structure(trace, ids) == ref.structure
    # The order nodes began running in the trace (restricted, as the pre-hooks are, to the
    # program's graph: reentrant and create_graph passes make nodes of their own) is torch's.
    position = {node_id: i for i, node_id in enumerate(ids)}
    begins = [e.node for e in trace.events[start:] if isinstance(e, ev.NodeBegin)]
    order = [position[n] for n in begins if n in position]
    assert order == ref.order
    assert invariants(trace) == []
    del case
