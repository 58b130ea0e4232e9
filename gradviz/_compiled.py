"""The engine's hot-path modules, compiled where a build made them, else their Python source.

``scripts/build_compiled.py`` (run by ``scripts/setup.sh`` where a C compiler exists) compiles
the modules in ``COMPILED_MODULES`` with Cython from their unchanged ``.py`` source, next to it:
the same code, without the interpreter's per-bytecode dispatch on the path every backward node
takes. The ``.py`` files stay the code a reader reads and the code that runs where nothing was
built.

Python's import system picks an extension module over a ``.py`` of the same name; the finder
here decides instead, per module, so that the source wins whenever the compiled copy cannot be
trusted to be it:

- ``GRADVIZ_PURE_PYTHON=1`` (any value but empty or 0): the source, always (CI runs the engine
  tests this way too);
- a compiled copy older than its source (the source was edited or checked out since the
  build): the source, silently, until the next build.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# Modules every backward node passes through: engine.py's loop, the ready queue, the input
# buffer, the graph task, and an op node's apply (ops/core.py). Not graph.py: AccumulateGrad
# decides by reference counts whether it may steal a gradient, and compiled code holds
# references differently (input_buffer.py measures its count at import for that reason).
COMPILED_MODULES = (
    "gradviz.autograd.engine",
    "gradviz.autograd.graph_task",
    "gradviz.autograd.input_buffer",
    "gradviz.autograd.ready_queue",
    "gradviz.ops.core",
)

PURE_ENV = "GRADVIZ_PURE_PYTHON"


def pure_python_requested() -> bool:
    """Whether GRADVIZ_PURE_PYTHON asks for the Python source of every module."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def compiled_path(source: str) -> str | None:
    """The extension module built from the .py file ``source`` (engine.cpython-311-x86_64-linux-gnu.so
    beside engine.py), if any. (Paths as strings: pathlib is not imported at ``import gradviz``.)"""
    stem = source[: -len(".py")]
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if os.path.exists(stem + suffix):
            return stem + suffix
    return None


def _usable(source: str, built: str | None) -> bool:
    return built is not None and os.stat(built).st_mtime >= os.stat(source).st_mtime


class _CompiledOrSource:
    """A meta path finder for COMPILED_MODULES only: the compiled copy when it may be used, else
    the .py source (never a stale or unwanted compiled copy)."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name not in COMPILED_MODULES or not path:
            return None
        leaf = name.rpartition(".")[2]
        for folder in path:
            source = os.path.join(folder, f"{leaf}.py")
            if not os.path.exists(source):
                continue
            built = None if pure_python_requested() else compiled_path(source)
            if _usable(source, built):
                loader = importlib.machinery.ExtensionFileLoader(name, str(built))
                return importlib.util.spec_from_file_location(name, built, loader=loader)
            return importlib.util.spec_from_file_location(name, source)
        return None


def install() -> None:
    """Put the finder first on sys.meta_path (once)."""
    if not any(type(f) is _CompiledOrSource for f in sys.meta_path):
        sys.meta_path.insert(0, _CompiledOrSource())


def status() -> dict[str, str]:
    """For each module: "compiled" or "python", as imported (or as it would be imported now)."""
    out = {}
    for name in COMPILED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            origin = getattr(module, "__file__", "") or ""
            out[name] = "python" if origin.endswith(".py") else "compiled"
            continue
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else ""
        out[name] = "python" if not origin or origin.endswith(".py") else "compiled"
    return out
