"""Recording the engine, and reading recordings back.

- ``gradviz.trace(path, values=False)``: a recorder streaming to ``path``; use it in a ``with``.
- ``gradviz.record(values=False)``: a recorder keeping the events in memory (``rec.trace``).
- ``gradviz.load(path) -> Trace``; ``TraceError`` (a ValueError) for a malformed file,
  ``TraceWarning`` for one cut short.

This package is itself callable: ``gradviz.trace("run.trace.json")`` is
``gradviz.trace.recorder.trace(...)``, so ``gradviz.trace`` works both as the function and as the
package (``gradviz.trace.TraceError``, ``gradviz.trace.load``, ``from gradviz.trace import trace``).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from gradviz.trace.errors import TraceError, TraceWarning
from gradviz.trace.file import load
from gradviz.trace.model import Trace

if TYPE_CHECKING:
    from gradviz.trace.recorder import Recorder, record, source_for

# The recorder (``Recorder``, ``record``, and calling this package) is imported at its first use: it
# sits on the engine, which reading a trace never needs (the trace-reading commands start without it).
_RECORDER_NAMES = ("Recorder", "record", "source_for")

__all__ = ["trace", "record", "load", "Trace", "TraceError", "TraceWarning", "Recorder"]


class _CallableModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:  # only names not yet in the namespace
        if name not in _RECORDER_NAMES:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.recorder"), name)
        setattr(self, name, value)
        return value

    def __call__(self, path: Any, *, values: bool = False, engine: str = "gradviz") -> Any:
        """Record to a file: ``with gradviz.trace("run.trace.json"): ...``; ``engine="torch"``
        records real PyTorch's engine instead (gradviz.torchrec)."""
        return self.Recorder(path, values=values, source=self.source_for(engine, values))


sys.modules[__name__].__class__ = _CallableModule
# `from gradviz.trace import trace` and `gradviz.trace` are the same callable package.
trace = sys.modules[__name__]
