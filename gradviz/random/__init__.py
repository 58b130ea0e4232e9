"""torch.random for gradviz: the CPU generator, bit-identical to torch's, and its seeding API.

``gradviz.manual_seed(s)`` followed by any of gradviz's random functions gives the numbers
``torch.manual_seed(s)`` and the same torch calls give, on the CPU, in float32 and float64.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from gradviz.random._generator import Generator, default_generator

__all__ = [
    "Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
    "set_rng_state",
]


def manual_seed(seed: Any) -> Generator:
    """Seed the default generator (and, as torch, accept the call on machines without a GPU)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the OS and return that seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    """The default generator's state: a 5056-byte uint8 tensor laid out as torch's."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda") -> Iterator[None]:
    """Restore the CPU generator's state on exit (there are no device generators to fork)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def __getattr__(name: str) -> Any:
    # dropout_noise lives with the samplers, which import the ops (loaded after this package's
    # generator): resolve it on first use.
    if name == "dropout_noise":
        from gradviz.random._api import dropout_noise

        return dropout_noise
    raise AttributeError(f"module 'gradviz.random' has no attribute {name!r}")
