"""The fold of a lazily loaded trace's line records, without making their events.

A checked line (``gradviz.trace.fastload``) holds one event or a group of them whose fields it
shares (``codec.GROUPS``: a gradient_in line is a dependency_decrement, a buffer_add and a
queue_push). Making those events only for the fold to read their fields again was half of a
fold's time (two microseconds an event). ``Trace.fold_events`` hands on the records of the
kinds in ``fastload.FOLD_RAW`` as they are, and here each kind applies its events' state
changes, member by member in the group's order, through the same functions of the fields that
the events' handlers call (``gradviz.replay.state``): the state, step for step, is the same.

Each fold takes ``(state, record, seq of its first event)`` and returns the seq after it.
"""

from __future__ import annotations

import sys
from typing import Any

from gradviz.replay.state import _begin, _buffer_add, _created, _decrement, _end, _pop, _push
from gradviz.replay.state_types import EngineState


def _gradient_in(s: EngineState, r: Any, seq: int) -> int:
    task, node = r.task, r.node
    _decrement(s, task, node, r.remaining)
    _buffer_add(s, task, node, r.slot, r.mode, r.by)
    _push(s, r.queue, r.queue_device, task, node, "node", r.priority, seq + 2)
    return seq + 3


def _node_pop(s: EngineState, r: Any, seq: int) -> int:
    task, node, tid = r.task, r.node, r.tid
    _pop(s, r.queue, r.device, task, node, "node", tid)
    _begin(s, node, task, tid, r.depth)
    return seq + 2


def _chain_step(s: EngineState, r: Any, seq: int) -> int:
    task, node, tid, by = r.task, r.node, r.tid, r.by
    _end(s, by, task, tid, "ok")
    _decrement(s, task, node, 0)
    _buffer_add(s, task, node, r.slot, r.mode, by)
    _push(s, r.queue, r.queue_device, task, node, "node", r.priority, seq + 3)
    _pop(s, r.queue, r.queue_device, task, node, "node", tid)
    _begin(s, node, task, tid, r.depth)
    return seq + 6


def _node_begin(s: EngineState, r: Any, seq: int) -> int:
    _begin(s, r.node, r.task, r.tid, r.depth)
    return seq + 1


def _node_end(s: EngineState, r: Any, seq: int) -> int:
    _end(s, r.node, r.task, r.tid, r.status)
    return seq + 1


def _queue_push(s: EngineState, r: Any, seq: int) -> int:
    _push(s, r.queue, r.device, r.task, r.node, r.what, r.priority, seq)
    return seq + 1


def _queue_pop(s: EngineState, r: Any, seq: int) -> int:
    _pop(s, r.queue, r.device, r.task, r.node, r.what, r.tid)
    return seq + 1


def _dependency_decrement(s: EngineState, r: Any, seq: int) -> int:
    _decrement(s, r.task, r.node, r.remaining)
    return seq + 1


def _buffer_add_line(s: EngineState, r: Any, seq: int) -> int:
    _buffer_add(s, r.task, r.node, r.slot, r.mode, r.producer)
    return seq + 1


def _node_edges(s: EngineState, r: Any, seq: int) -> int:
    # node_created's handler; its edges change no state. The name interned as the line's
    # converter interns it: a fold keeps it, a million times over for a long recording.
    _created(s, r.node, sys.intern(r.name), r.num_inputs, r.sequence_nr)
    return seq + 1 + len(r.edges)


BY_KIND = {
    "gradient_in": _gradient_in,
    "node_pop": _node_pop,
    "chain_step": _chain_step,
    "node_begin": _node_begin,
    "node_end": _node_end,
    "queue_push": _queue_push,
    "queue_pop": _queue_pop,
    "dependency_decrement": _dependency_decrement,
    "buffer_add": _buffer_add_line,
    "node_edges": _node_edges,
}


def by_type() -> dict[type, Any]:
    """The folds by line record type (the typed decoder's, once it is built; else none)."""
    from gradviz.trace.codec_typed import LINES

    types = LINES.get("types") or {}
    return {types[kind]: fold for kind, fold in BY_KIND.items() if kind in types}
