"""What a rank's trace says about DDP: buckets, which AccumulateGrad fed which bucket, and the
unused-parameter failure. Functions of events alone (``gradviz.trace.events``' distributed kinds),
for render, export and ``why`` alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradviz.trace import events as ev

# DDP's reducer, when a forward begins before the previous iteration's buckets were all reduced
UNUSED_MESSAGE = "Expected to have finished reduction in the prior iteration"


def of_kind(trace: Any, cls: type[ev.Event]) -> list[Any]:
    """A trace's events of one kind; a lazily loaded trace's rare kinds (these are) come from its
    index, without making every event."""
    of = getattr(trace, "_of", None)
    return list(of(cls) if of is not None else trace.by_kind.get(cls, ()))


_of = of_kind


@dataclass(frozen=True)
class Bucket:
    ddp: int
    index: int
    params: tuple[str, ...]  # module paths
    tensors: tuple[int, ...]  # their tensor ids
    bytes: int


def buckets(trace: Any) -> list[Bucket]:
    """Each DDP module's buckets as last seen by the comm hook (DDP rebuilds them after its first
    iteration, in the order gradients became ready)."""
    inits = {e.ddp: e for e in _of(trace, ev.DdpInit)}
    last: dict[tuple[int, int], Any] = {}
    for e in _of(trace, ev.BucketReady):
        last[(e.ddp, e.bucket)] = e
    out = []
    for (ddp, index), e in sorted(last.items()):
        init = inits.get(ddp)
        names = tuple(init.params[i] if init and 0 <= i < len(init.params) else f"#{i}" for i in e.params)
        tensors = tuple(init.tensors[i] for i in e.params if init and 0 <= i < len(init.tensors))
        out.append(Bucket(ddp, index, names, tensors, e.bytes))
    return out


def bucket_of_tensor(trace: Any) -> dict[int, tuple[int, int]]:
    """tensor id -> (ddp, bucket index) of the bucket its gradient is reduced in."""
    return {t: (b.ddp, b.index) for b in buckets(trace) for t in b.tensors}


def bucket_of_node(trace: Any) -> dict[int, str]:
    """AccumulateGrad node id -> "bucket B" (with the DDP module's id when there are several): the
    bucket the node's gradient went into, for a graph's labels."""
    if not _of(trace, ev.BucketReady):
        return {}
    by_tensor = bucket_of_tensor(trace)
    several = len({d for d, _ in by_tensor.values()}) > 1
    out = {}
    for node, tensor in trace.node_tensors.items():
        if tensor in by_tensor:
            ddp, b = by_tensor[tensor]
            out[node] = f"bucket {b}" + (f" (ddp {ddp})" if several else "")
    return out


def _failure(trace: Any) -> Any:
    """The event that carries DDP's unused-parameter error (an ``error`` or the ``trace_end``)."""
    for e in _of(trace, ev.Error):
        if UNUSED_MESSAGE in e.message:
            return e
    for e in _of(trace, ev.TraceEnd):
        if e.error and UNUSED_MESSAGE in e.error:
            return e
    return None


def unused_parameters(trace: Any) -> dict[str, Any] | None:
    """``gradviz why --error``'s answer for DDP's "Expected to have finished reduction in the prior
    iteration": the parameters, by module path, that got no gradient in the iteration before the
    failing forward, on this rank, and the buckets that therefore never became ready. None when
    the trace holds no such error.

    ``{"question": "error", "reason": "unused_parameters", "where", "node", "tensor", "text",
    "rank", "iteration", "parameters", "buckets"}``: ``where`` the forward call that failed,
    ``tensor`` the first unused parameter's path."""
    fail = _failure(trace)
    if fail is None:
        return None
    forwards = [e for e in _of(trace, ev.DdpForward) if e.seq < fail.seq]
    if not forwards:
        return None
    failing = forwards[-1]
    init = next((e for e in _of(trace, ev.DdpInit) if e.ddp == failing.ddp), None)
    grads = [e for e in _of(trace, ev.DdpGrads) if e.ddp == failing.ddp and e.iteration == failing.iteration - 1]
    if init is None or not grads:
        return None
    prev = grads[-1]
    ready = set(prev.ready)
    unused = [i for i in range(len(init.params)) if i not in ready]
    names = [init.params[i] for i in unused]
    # buckets as the hook last saw them before the failure (DDP may rebuild them after its first
    # iteration): those holding a parameter without gradient never filled
    members: dict[int, set[int]] = {}
    for e in _of(trace, ev.BucketReady):
        if e.ddp == failing.ddp and e.seq < fail.seq:
            members[e.bucket] = set(e.params)
    stuck = []
    for b, params in sorted(members.items()):
        missing = sorted(params - ready)
        if b not in prev.buckets and missing:
            stuck.append({"bucket": b, "missing": [init.params[i] for i in missing]})
    unplaced = sorted(set(unused) - {i for p in members.values() for i in p})
    rank = trace.header.rank if trace.header is not None else None
    for e in _of(trace, ev.DistInit):
        rank = e.rank
    on = f" on rank {rank}" if rank is not None else ""
    text = (f"DDP's reduction did not finish{on}: in iteration {prev.iteration} no gradient reached "
            f"{', '.join(names) or 'no parameter'} (not used to compute the loss), so "
            + (", ".join(f"bucket {s['bucket']} (as last seen; waiting for {', '.join(s['missing'])})" for s in stuck)
               if stuck else "the bucket(s) holding " + (", ".join(init.params[i] for i in unplaced) or "them"))
            + " never became ready and the next forward failed. Use those parameters in the loss, "
            "freeze them (requires_grad=False) or pass find_unused_parameters=True to DDP.")
    return {
        "question": "error", "reason": "unused_parameters", "where": failing.source,
        "node": None, "tensor": names[0] if names else None, "text": text,
        "rank": rank, "iteration": prev.iteration, "parameters": names, "buckets": stuck,
    }
