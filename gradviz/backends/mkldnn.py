"""torch.backends.mkldnn: gradviz calls no mkldnn kernels of its own (numpy's are its business)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def is_available() -> bool:
    return False


# torch's flags, settable; gradviz's kernels do not read them
enabled = True
deterministic = False


def set_flags(_enabled: bool | None = None, _deterministic: bool | None = None) -> tuple[bool, bool]:
    global enabled, deterministic
    old = (enabled, deterministic)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    return old


@contextlib.contextmanager
def flags(enabled: bool = False, deterministic: bool = False) -> Iterator[None]:  # noqa: F811 - torch's names
    old = set_flags(enabled, deterministic)
    try:
        yield
    finally:
        set_flags(*old)
