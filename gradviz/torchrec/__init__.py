"""Record real PyTorch's autograd engine as a gradviz trace (``gradviz.trace(path, engine="torch")``).

The recorder needs torch; ``provenance`` (which engine, which events were derived) and ``detect``
do not, so ``info``/``render``/``replay`` read torch traces without torch installed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TorchRecorder", "active", "record", "trace"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gradviz.torchrec import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module 'gradviz.torchrec' has no attribute {name!r}")
