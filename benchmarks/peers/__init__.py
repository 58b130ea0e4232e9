"""The engines gradviz is measured against, each optional: a missing one is skipped with a reason.

Install them with ``pip install autograd mygrad micrograd`` and torch from the pinned wheel
(``torch==2.13.0``); ``minimal_engine`` (the pure-Python floor) ships here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# name in the tables -> (module to import, pip requirement to suggest)
PEERS = {
    "torch": ("torch", "torch==2.13.0"),
    "autograd": ("autograd", "autograd"),
    "mygrad": ("mygrad", "mygrad"),
    "micrograd": ("micrograd.engine", "micrograd"),
}


def load(name: str) -> ModuleType | str:
    """The peer's module, or why it cannot be used (a string)."""
    module, requirement = PEERS[name]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        return f"not installed ({exc.name or exc}); pip install {requirement}"
    except Exception as exc:  # noqa: BLE001 - a broken install is a reason to skip, not to stop
        return f"import failed: {type(exc).__name__}: {exc}"
