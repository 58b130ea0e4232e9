"""Which engine a trace recorded, and which of its events a hook observed or a source derived
(the Trace's ``engine``, ``derived`` and ``origin(seq)``; these functions take any trace).

A trace of gradviz's own engine is all observed (the engine reports each step itself). A trace
of real torch lists its derived events in ``derived`` events (format 4); everything else in it
was seen by a hook on torch's nodes. Needs no torch.
"""

from __future__ import annotations

from typing import Any

from gradviz.trace import events as ev

OBSERVED = "observed"
DERIVED = "derived"


def engine(trace: Any) -> tuple[str, str | None]:
    """("gradviz", None) or ("torch", torch's version)."""
    head = trace.head(8) if hasattr(trace, "head") else trace.events[:8]  # a lazy Trace: 8, not all
    for e in head:
        if type(e) is ev.EngineInfo:
            return e.engine, e.torch_version
    return "gradviz", None


def derived_seqs(trace: Any) -> frozenset[int]:
    """The seqs of the events listed in the trace's ``derived`` events."""
    cached = getattr(trace, "_gradviz_derived", None)
    if cached is None:
        cached = frozenset(s for e in trace.events if type(e) is ev.Derived for s in e.events)
        try:
            trace._gradviz_derived = cached
        except AttributeError:  # pragma: no cover - a trace type without a __dict__
            pass
    return cached


def origin(trace: Any, seq: int) -> str:
    """"observed" or "derived" for the event at `seq`."""
    return DERIVED if seq in derived_seqs(trace) else OBSERVED


def label(trace: Any) -> str:
    """One line for headers: which engine recorded the trace."""
    name, version = engine(trace)
    return f"torch {version} (real PyTorch, observed by hooks)" if name == "torch" else "gradviz"


def counts(trace: Any) -> dict[str, Any]:
    """What info --json adds: the engine, and per kind how many events were observed/derived."""
    name, version = engine(trace)
    d = derived_seqs(trace)
    by_kind: dict[str, list[int]] = {}
    for e in trace.events:
        if type(e) is ev.Derived:
            continue
        row = by_kind.setdefault(e.kind, [0, 0])
        row[e.seq in d] += 1
    return {
        "engine": name,
        "torch_version": version,
        "observed": sum(r[0] for r in by_kind.values()),
        "derived": sum(r[1] for r in by_kind.values()),
        "derived_kinds": sorted(k for k, r in by_kind.items() if r[1]),
    }


def summary_line(trace: Any) -> str:
    if engine(trace)[0] != "torch":  # before counts(): two passes over every event for nothing
        return "engine: gradviz (every event reported by the engine itself)"
    c = counts(trace)
    return (f"engine: torch {c['torch_version']}: {c['observed']:,} events observed by hooks, "
            f"{c['derived']:,} derived by the recorder ({', '.join(c['derived_kinds'])})")
