"""DataLoader workers, run in the calling process with each worker's own random state.

torch loads ``num_workers > 0`` batches in worker processes. Each worker seeds ``random`` and
torch with ``base_seed + worker_id`` and numpy with a state mixed from both (``_generate_state``),
runs ``worker_init_fn(worker_id)``, and draws from those states alone: a dataset's augmentations
come from the worker's streams, and the main process's streams do not move. gradviz has no worker
processes, so each fetch runs here between a swap of the three global states to the worker's and
back, and ``get_worker_info()`` answers inside it: the batches, and every number drawn after them,
are torch's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import gradviz

__all__ = ["WorkerInfo", "Worker", "current_info", "generate_state"]

# The worker whose fetch is running now (None in the main process): one at a time, since the
# swap of the global random states is not reentrant across threads any more than torch's fork is.
_current: WorkerInfo | None = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``torch.utils.data.get_worker_info()`` returns inside a worker (torch's frozen dataclass)."""

    id: int  # this worker's number, 0 to num_workers - 1
    num_workers: int  # the loader's num_workers
    seed: int  # base_seed + id: what torch and Python's random were seeded with
    dataset: Any  # the dataset the worker fetches from
    rng: Any = None  # torch's optional RNG container (always None for process workers)
    worker_method: str | None = "multiprocessing"  # torch's default: how the worker runs


def current_info() -> WorkerInfo | None:
    return _current


def generate_state(base_seed: int, worker_id: int) -> list[int]:
    """The numpy seed torch's worker loop derives from (base_seed, worker_id): four 32-bit words
    hashed and mixed from both (torch's SeedSequence-like mixing), so that workers' numpy streams
    differ even for adjacent seeds."""
    mask = 0xFFFFFFFF
    shift = 16
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    mix_l, mix_r = 0xCA01F9DD, 0x4973F715
    const_a = 0x43B0D7E5

    def hash_a(value: int) -> int:
        nonlocal const_a
        value = (value ^ const_a) & mask
        const_a = (const_a * mult_a) & mask
        value = (value * const_a) & mask
        return (value ^ (value >> shift)) & mask

    def mix(x: int, y: int) -> int:
        r = (((mix_l * x) & mask) - ((mix_r * y) & mask)) & mask
        return (r ^ (r >> shift)) & mask

    pool = [hash_a(v) for v in (worker_id, base_seed & mask, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hash_a(pool[src]))
    const_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ const_b) & mask
        const_b = (const_b * mult_b) & mask
        value = (value * const_b) & mask
        state.append((value ^ (value >> shift)) & mask)
    return state


def _main_states() -> tuple[Any, Any, Any]:
    return gradviz.get_rng_state(), random.getstate(), np.random.get_state()


def _set_states(states: tuple[Any, Any, Any]) -> None:
    gradviz.set_rng_state(states[0])
    random.setstate(states[1])
    np.random.set_state(states[2])


class Worker:
    """One worker's random states and its view of the dataset; ``active()`` runs code as the worker."""

    def __init__(self, worker_id: int, num_workers: int, base_seed: int, dataset: Any,
                 init_fn: Callable[[int], Any] | None) -> None:
        self.id = worker_id
        self.seed = base_seed + worker_id
        self.info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=self.seed, dataset=dataset)
        main = _main_states()
        try:
            random.seed(self.seed)
            gradviz.manual_seed(self.seed)
            np.random.seed(generate_state(base_seed, worker_id))
            self._states = _main_states()
        finally:
            _set_states(main)
        if init_fn is not None:
            with self.active():
                init_fn(worker_id)

    @contextmanager
    def active(self) -> Iterator[None]:
        global _current
        main = _main_states()
        previous = _current
        _set_states(self._states)
        _current = self.info
        try:
            yield
        finally:
            self._states = _main_states()
            _current = previous
            _set_states(main)
