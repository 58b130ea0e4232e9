"""torch.backends.cusparselt: no cuSPARSELt without CUDA, as torch's CPU build answers."""

from __future__ import annotations


def is_available() -> bool:
    return False


def version() -> None:
    return None
