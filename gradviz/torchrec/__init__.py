"""Real PyTorch's autograd engine as a source of gradviz's one recorder
(``gradviz.trace(path, engine="torch")``, ``gradviz.record(engine="torch")``).

The source needs torch; ``detect`` (which engine ``gradviz run`` records) does not, and reading a
torch trace needs nothing of this package (its provenance is gradviz.trace.provenance).
"""

from __future__ import annotations

from typing import Any

__all__ = ["TorchRecorder", "TorchSource", "active", "record", "trace"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gradviz.torchrec import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module 'gradviz.torchrec' has no attribute {name!r}")
