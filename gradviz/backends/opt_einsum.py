"""torch.backends.opt_einsum: torch uses the opt_einsum package for einsum's contraction order
when it is installed; gradviz never does, so it answers as torch does without the package."""

from __future__ import annotations

enabled = False
strategy = None


def is_available() -> bool:
    return False


def get_opt_einsum() -> None:
    return None
