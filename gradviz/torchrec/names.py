"""Names of torch's leaves as gradviz's engine gives them: a module's parameter by its path in
the module tree (``fc1.weight``), as the outermost module called names it (gradviz's
Module._name_parameters); another leaf by the user's variable bound to it.

Naming only reads, and never fails the user's program: a module whose named_parameters()
raises, or a variable whose attribute access raises (a lazy proxy), is left unnamed."""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch

from gradviz.torchrec.lines import ours

_Module = torch.nn.Module
_Tensor = torch.Tensor


class LeafNames:
    """id(parameter) -> its module path, learnt from a global module forward pre-hook."""

    def __init__(self) -> None:
        self._names: dict[int, tuple[Any, str]] = {}  # id(param) -> (weak reference, path)
        self._seen: weakref.WeakSet[Any] = weakref.WeakSet()
        self._handle: Any = None

    def start(self) -> None:
        self._handle = torch.nn.modules.module.register_module_forward_pre_hook(self._pre)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        self._names.clear()

    def _pre(self, module: Any, args: Any) -> None:
        # a module's first call names its parameters; an outer module's call comes before its
        # children's, and a path from further out is longer: the longest path wins
        try:
            if module in self._seen:
                return None
            self._seen.add(module)
            names = self._names
            for path, p in module.named_parameters():
                known = names.get(id(p))
                if known is None or known[0]() is not p or len(known[1]) < len(path):
                    names[id(p)] = (weakref.ref(p, functools.partial(self._gone, id(p))), path)
        except Exception:  # noqa: BLE001 - naming never breaks the user's program
            pass
        return None

    def _gone(self, key: int, ref: Any) -> None:
        known = self._names.get(key)
        if known is not None and known[0] is ref:
            del self._names[key]

    def name(self, t: torch.Tensor, frame: Any) -> str | None:
        known = self._names.get(id(t))
        if known is not None and known[0]() is t:
            return known[1]
        return variable_name(t, frame)


def variable_name(t: torch.Tensor, frame: Any, limit: int = 8) -> str | None:
    """A variable of the user's code (the innermost ``limit`` frames outside torch and gradviz)
    bound to ``t``, or None. Looks only at what the variables are, never at their attributes."""
    f, k = frame, 0
    try:
        while f is not None and k < limit:
            if not ours(f.f_code.co_filename):
                scopes = [f.f_locals] if f.f_locals is not f.f_globals else []
                scopes.append(f.f_globals)
                for scope in scopes:
                    for name, v in list(scope.items()):
                        if v is t and not name.startswith("_"):
                            return name
                k += 1
            f = f.f_back
    except Exception:  # noqa: BLE001 - naming never breaks the user's program
        return None
    return None
