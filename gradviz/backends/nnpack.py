"""torch.backends.nnpack: gradviz has no NNPACK; the flag can be set and read, as torch's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_enabled = False


def is_available() -> bool:
    return False


def set_flags(_enabled_: bool) -> tuple[bool]:
    """Sets the flag; the old value, as torch returns it."""
    global _enabled
    old = (_enabled,)
    _enabled = bool(_enabled_)
    return old


@contextlib.contextmanager
def flags(enabled: bool = False) -> Iterator[None]:
    (old,) = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(old)
