"""torch.backends.cudnn: settable flags with torch's defaults; cuDNN itself is never present."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:
    g = globals()
    old = {k: g[k] for k in ("enabled", "benchmark", "deterministic", "allow_tf32")}
    g.update(enabled=enabled, benchmark=benchmark, deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(old)
