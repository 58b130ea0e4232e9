"""One line for a torch name gradviz lacks, under ``import gradviz as torch`` as under the stand-in.

A gradviz module that mirrors a torch module ends with ``__getattr__ = missing_names(__name__)``:
a name it lacks is first looked for as a gradviz submodule not imported yet (``gradviz.nn.utils.rnn``,
as torch's packages import theirs), else raises ``gradviz has no torch.<module>.<name> (used at
file:line); see README: what runs on gradviz``, an AttributeError (``hasattr`` and
``getattr(m, x, default)`` behave as for any missing attribute).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from gradviz._as_torch import MissingTorchAttribute, _message, user_location


def torch_name(gradviz_module: str) -> str:
    return "torch" + gradviz_module[len("gradviz") :]


def missing_attribute(api: str, obj: Any, name: str) -> MissingTorchAttribute:
    where = user_location()
    e = MissingTorchAttribute(_message(api, where), name=name, obj=obj)
    e.api, e.where = api, where
    return e


def missing_names(module_name: str) -> Callable[[str], Any]:
    """The module-level ``__getattr__`` of the gradviz module ``module_name``."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook
        if name.startswith("__"):  # __path__, __wrapped__...: the import system's probes, not an API
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        sub = f"{module_name}.{name}"
        try:
            found = importlib.util.find_spec(sub) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            return importlib.import_module(sub)
        raise missing_attribute(f"{torch_name(module_name)}.{name}", importlib.import_module(module_name), name)

    return __getattr__


class MissingMember:
    """A torch.Tensor member gradviz lacks, on gradviz's Tensor: reading it raises the one line
    naming it, an AttributeError (``hasattr`` is False). Members, not a ``__getattr__`` on Tensor:
    a class with one makes CPython read every attribute of every tensor by the slow, uncached
    path (the engine's backward is 5-10% slower with it)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        raise missing_attribute(f"torch.Tensor.{self.name}", obj, self.name)


def name_missing_members(cls: type, names: Any) -> None:
    """Give ``cls`` a MissingMember for each of torch's ``names`` it still lacks (run once every
    module has put its methods on it; a method set later replaces the member)."""
    for name in names:
        if not any(name in vars(c) for c in cls.__mro__):
            setattr(cls, name, MissingMember(name))

