"""torch.distributed for gradviz: not available. gradviz runs one process; the queries answer
so, and the calls that need a process group raise torch's error for a missing one."""

from __future__ import annotations

from typing import Any

_NO_GROUP = "Default process group has not been initialized, please make sure to call init_process_group."


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


def _no_group(*args: Any, **kwargs: Any) -> Any:
    raise ValueError(_NO_GROUP)


get_rank = get_world_size = barrier = all_reduce = broadcast = all_gather = reduce = destroy_process_group = _no_group
get_backend = new_group = _no_group


def init_process_group(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("gradviz has no torch.distributed: it runs in one process (is_available() is False)")


class ReduceOp:
    SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG = range(8)
