"""Which rank of a distributed job a process, or a trace, is.

A launcher (torchrun, ``gradviz run --nproc-per-node``, SLURM through torchrun) tells each process
its place through the environment: RANK, LOCAL_RANK, WORLD_SIZE. A trace's header keeps them, and
each rank writes its own file, ``NAME.rankR.trace.json``, so that ranks sharing a folder (or the
files of several machines copied into one) never overwrite each other.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gradviz.trace import events as ev


@dataclass(frozen=True)
class RankEnv:
    rank: int
    local_rank: int | None
    world_size: int | None


def _int_env(env: Mapping[str, str], key: str) -> int | None:
    v = env.get(key)
    if v is None or not v.strip().lstrip("-").isdigit():
        return None
    return int(v)


def rank_env(env: Mapping[str, str] | None = None) -> RankEnv | None:
    """This process's rank from the launcher's environment; None outside a distributed job."""
    env = os.environ if env is None else env
    rank = _int_env(env, "RANK")
    if rank is None:
        return None
    return RankEnv(rank, _int_env(env, "LOCAL_RANK"), _int_env(env, "WORLD_SIZE"))


def header_fields(env: Mapping[str, str] | None = None) -> dict[str, int | None]:
    """The trace_begin fields a recorder adds in a rank's process (none outside a job)."""
    r = rank_env(env)
    if r is None:
        return {}
    return {"rank": r.rank, "local_rank": r.local_rank, "world_size": r.world_size}


_SUFFIX = ".trace.json"


def rank_path(path: str, rank: int) -> str:
    """``NAME.trace.json`` -> ``NAME.rankR.trace.json``; any other name gets ``.rankR`` before
    its extension (``out.json`` -> ``out.rank1.json``, ``out`` -> ``out.rank1``)."""
    if path.endswith(_SUFFIX):
        return f"{path[: -len(_SUFFIX)]}.rank{rank}{_SUFFIX}"
    head, sep, ext = path.rpartition(".")
    if sep and "/" not in ext and os.sep not in ext and head and not head.endswith(("/", os.sep)):
        return f"{head}.rank{rank}.{ext}"
    return f"{path}.rank{rank}"


_RANK_IN_NAME = re.compile(r"\.rank(\d+)\.")


@dataclass(frozen=True)
class RankInfo:
    """A trace's place in its job: from its header, completed by its dist_init event."""

    rank: int | None
    local_rank: int | None
    world_size: int | None
    backend: str | None
    clock: int | None  # ts of the start barrier's return (dist_init), to line ranks' times up
    wall: int | None


def rank_info(events: list[ev.Event], path: str | None = None) -> RankInfo:
    """Rank, local rank, world size, backend of a trace. The header says what the launcher said;
    a ``dist_init`` event what the process group said (it wins for rank and world size, and is
    the only source of the backend when the group was made after the trace began). A trace of
    neither falls back to the ``.rankR.`` in its file name."""
    h = events[0] if events and isinstance(events[0], ev.TraceBegin) else None
    rank = h.rank if h is not None else None
    local = h.local_rank if h is not None else None
    world = h.world_size if h is not None else None
    backend = h.backend if h is not None else None
    clock = wall = None
    for e in events:
        if isinstance(e, ev.DistInit):
            rank, world, backend, clock, wall = e.rank, e.world_size, e.backend, e.clock, e.wall
            break
    if rank is None and path is not None:
        m = _RANK_IN_NAME.search(os.path.basename(path))
        if m:
            rank = int(m.group(1))
    return RankInfo(rank, local, world, backend, clock, wall)
