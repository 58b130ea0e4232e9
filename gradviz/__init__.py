"""gradviz: an autograd engine you can watch.

``import gradviz as torch`` runs torch code that uses the implemented ops, with torch's backward
node names and execution order; ``gradviz.trace(...)`` records what the engine does.

The torch-like namespace (gradviz/_api.py: tensors, ops, nn, optim, and the engine under them)
is imported at the first use of a name from it, not by ``import gradviz``: the command line's
trace-reading commands (info, render, replay, export, diff) and ``gradviz --version`` import the
package for its trace, replay and render layers, which never touch the engine, and start in a
fraction of the ~2 s the engine, nn and ml_dtypes take to import.
"""

import importlib
import importlib.util
import sys
import types
from typing import Any

from gradviz import (
    _compiled,
    _numpy_warnings,  # noqa: F401,I001 - its filter at `import gradviz`, so the user's later filters win
)
from gradviz._missing import missing_names as _missing_names

__version__ = "0.1.0"

# The engine's hot path compiled where scripts/setup.sh built it (gradviz/_compiled.py), before
# anything imports it.
_compiled.install()

# Where the torch-like namespace stands: not imported, importing (its modules run and may import
# each other through this package), or published into this package's namespace.
_NOT_LOADED, _LOADING, _LOADED = "not loaded", "loading", "loaded"
_state = _NOT_LOADED

# Submodules whose names the torch-like namespace gives to something else, as torch does:
# ``gradviz.tensor`` and ``gradviz.diff`` are functions and ``gradviz.device`` the class, while the
# import system binds the modules gradviz/tensor.py, diff.py and device.py to the same names. (A test keeps this list
# complete: tests/test_import_light.py.)
_SHADOWED = ("device", "diff", "tensor")


def _load_api() -> None:
    """Import gradviz._api and publish its names here, once; a no-op while it is being imported."""
    global _state
    if _state != _NOT_LOADED:
        return
    _state = _LOADING
    try:
        api = importlib.import_module("gradviz._api")
    except BaseException:
        _state = _NOT_LOADED
        raise
    package = sys.modules[__name__]
    for name, value in vars(api).items():
        if not (name.startswith("__") and name.endswith("__")):
            setattr(package, name, value)
    _state = _LOADED


def _importing_own_module() -> bool:
    """Whether one of gradviz's modules is being imported (its code is running) right now."""
    prefix = __name__ + "."
    return any(key.startswith(prefix) and getattr(getattr(module, "__spec__", None), "_initializing", False)
               for key, module in list(sys.modules.items()))


def _shadowed(name: str) -> property:
    def get(package: types.ModuleType) -> Any:
        if _state == _LOADING:  # gradviz's own modules mid-import see the submodule, as they always did
            try:
                return sys.modules[f"{__name__}.{name}"]
            except KeyError:
                raise AttributeError(name) from None
        _load_api()
        return vars(sys.modules[f"{__name__}._api"])[name]

    def set_(package: types.ModuleType, value: Any) -> None:
        """The import system binding the submodule is ignored (torch's name keeps the attribute);
        anything else is an assignment, as on any module (``gradviz.tensor = my_wrapper``)."""
        if isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}":
            return
        _load_api()
        vars(sys.modules[f"{__name__}._api"])[name] = value

    return property(get, set_)


class _Package(types.ModuleType):
    """This package, with the torch-like namespace imported on first use."""

    def __getattr__(self, name: str) -> Any:  # called only for names not (yet) in the namespace
        if name.startswith("__") and name != "__all__":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        if _state == _NOT_LOADED and _importing_own_module() and importlib.util.find_spec(f"{__name__}.{name}"):
            # ``from gradviz import nn`` inside one of gradviz's modules that is being imported on its own
            # (``import gradviz.nn`` before any use of the namespace): the submodule only, as the import
            # system would give it; the namespace's modules cannot be imported in its order from mid-way.
            return importlib.import_module(f"{__name__}.{name}")
        _load_api()
        if name == "__all__":  # ``from gradviz import *`` takes what it took from the eager package
            return [n for n in vars(self) if not n.startswith("_")] + list(_SHADOWED)
        try:
            return vars(self)[name]
        except KeyError:
            pass
        # a submodule not imported yet, else a torch name gradviz lacks: "gradviz has no torch.X (used at
        # file:line)", an AttributeError (gradviz/_missing.py)
        return _missing_names(__name__)(name)

    def __dir__(self) -> list[str]:
        _load_api()
        return vars(sys.modules[f"{__name__}._api"])["__dir__"]()


# Sources of recordings besides gradviz's own engine, by engine name (gradviz.trace(path, engine=...)):
# registered here, in the package that wires the layers together, so that the trace layer never
# imports them (gradviz/trace/recorder.py reads this dict).
_engine_sources: dict[str, Any] = {}


def _torch_source(values: bool) -> Any:
    """Real torch's source (torchrec); torch is imported only when a recording asks for it."""
    from gradviz.torchrec.recorder import TorchSource

    return TorchSource(values)


_engine_sources["torch"] = _torch_source

# Questions about a run are answered a layer above the trace (gradviz.replay.why): Trace.why looks
# its answerer up here (gradviz/trace/model.py), imported at the first question.
_answerers: dict[str, Any] = {}


def _why(trace: Any, **question: Any) -> Any:
    from gradviz.replay.why import why

    return why(trace, **question)


_answerers["why"] = _why

for _name in _SHADOWED:
    setattr(_Package, _name, _shadowed(_name))
sys.modules[__name__].__class__ = _Package
