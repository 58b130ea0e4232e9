"""torch.compile for gradviz: there is no compiler, so the model or function comes back as it
is (gradviz records every eager step); the first call says so once on stderr."""

from __future__ import annotations

import sys
from typing import Any

_said = False


def _say() -> None:
    global _said
    if not _said:
        _said = True
        print("gradviz: torch.compile has no effect (gradviz has no compiler); running eagerly", file=sys.stderr)


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend: Any = "inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """``compile(fn)`` returns fn; ``compile(mode=...)`` returns a decorator that does."""
    _say()
    if model is None:
        return lambda fn: fn
    return model
