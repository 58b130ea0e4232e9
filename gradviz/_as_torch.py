"""gradviz standing in for torch: ``import torch`` and every ``torch.X`` resolve to gradviz.

``install_as_torch()`` puts a meta-path finder in front of the real torch, so that an unmodified
torch script runs on gradviz's engine. ``torch.nn`` is ``gradviz.nn``, ``torch.utils.data`` is
``gradviz.utils.data``, and so on. What gradviz lacks fails at the point of use with one line that
names the missing API and the user's file:line, e.g.::

    gradviz has no torch.fft (used at train.py:42); see README: what runs on gradviz

Each ``torch.X`` in ``sys.modules`` is a thin stand-in module that reads its attributes from the
gradviz object behind it; its ``__getattr__`` is where a missing attribute is caught. The errors
are subclasses of AttributeError / ModuleNotFoundError, so ``hasattr(torch, "compile")`` and
``try: import torch.fft except ImportError`` behave as in a script written for an older torch.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["MissingTorchAPI", "as_torch", "install_as_torch", "is_installed", "uninstall_as_torch"]

_GRADVIZ_DIR = os.path.dirname(os.path.abspath(__file__))
_IMPORTLIB_DIR = os.path.dirname(os.path.abspath(importlib.__file__))
_HINT = "see README: what runs on gradviz"
_TORCH_SERIALIZATION = ("save", "load")


class MissingTorchAPI(Exception):  # noqa: N818 - the mixin both errors share; the CLI catches it
    """Marks an error raised because gradviz lacks a torch API; ``api`` is its torch name."""

    api: str
    where: str | None


class MissingTorchAttribute(MissingTorchAPI, AttributeError):
    pass


class MissingTorchModule(MissingTorchAPI, ModuleNotFoundError):
    pass


def user_location(skip_gradviz: bool = True) -> str | None:
    """file:line of the innermost frame that is neither gradviz's nor the import machinery's."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        path = os.path.abspath(fn)
        internal = (
            fn.startswith("<frozen")
            or path.startswith(_IMPORTLIB_DIR)
            or (skip_gradviz and path.startswith(_GRADVIZ_DIR))
        )
        if not internal:
            return f"{os.path.basename(fn)}:{f.f_lineno}"
        f = f.f_back
    return None


def _message(api: str, where: str | None) -> str:
    at = f" (used at {where})" if where else ""
    return f"gradviz has no {api}{at}; {_HINT}"


def _missing_attribute(api: str, obj: Any, name: str) -> MissingTorchAttribute:
    where = user_location()
    e = MissingTorchAttribute(_message(api, where), name=name, obj=obj)
    e.api, e.where = api, where
    return e


def _missing_module(api: str) -> MissingTorchModule:
    where = user_location()
    # name is not the module asked for, so importlib's `from torch import X` does not swallow it
    e = MissingTorchModule(_message(api, where), name=None)
    e.api, e.where = api, where
    return e


class _StandIn(types.ModuleType):
    """``torch.X``: reads its attributes from the gradviz object behind it (a module or a namespace)."""

    def __init__(self, name: str, target: Any):
        super().__init__(name, getattr(target, "__doc__", None))
        object.__setattr__(self, "_gv_target", target)
        # a package, so that `import torch.X.Y` and `from torch.X import Y` go through the finder
        object.__setattr__(self, "__path__", [])
        object.__setattr__(self, "__file__", getattr(target, "__file__", None))

    def __getattr__(self, attr: str) -> Any:
        target = object.__getattribute__(self, "_gv_target")
        if attr.startswith("__") and attr.endswith("__"):  # __version__ and such: no stand-in error
            return getattr(target, attr)
        name = object.__getattribute__(self, "__name__")
        if name == "torch" and attr in _TORCH_SERIALIZATION:
            # gradviz.load is the trace loader; torch.save/load are gradviz.serialization's pickles
            return getattr(importlib.import_module("gradviz.serialization"), attr)
        try:
            value = getattr(target, attr)
        except AttributeError:
            sub = f"{name}.{attr}"
            if _gradviz_module_name(sub) is not None:  # a gradviz submodule not imported yet
                return _stand_in(sub)
            raise _missing_attribute(sub, self, attr) from None
        if isinstance(value, types.ModuleType) and value.__name__.startswith("gradviz"):
            return _stand_in(f"{name}.{attr}")
        return value

    def __setattr__(self, attr: str, value: Any) -> None:
        # torch.backends.cudnn.benchmark = True and the like land on the gradviz object itself
        if attr in ("__spec__", "__loader__", "__package__", "__path__", "__file__", "__doc__", "__name__"):
            object.__setattr__(self, attr, value)
            return
        if isinstance(value, _StandIn):
            # the import system binding a submodule's stand-in on its parent (`import torch.nn`):
            # kept here, never written over the gradviz module (gradviz.nn must stay gradviz.nn)
            object.__setattr__(self, attr, value)
            return
        setattr(object.__getattribute__(self, "_gv_target"), attr, value)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(object.__getattribute__(self, "_gv_target"))))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (gradviz standing in for torch)>"


def _gradviz_module_name(torch_name: str) -> str | None:
    """gradviz.X.Y for torch.X.Y when that module exists, else None."""
    gv = "gradviz" + torch_name[len("torch") :]
    try:
        return gv if importlib.util.find_spec(gv) is not None else None
    except (ImportError, ValueError, AttributeError):
        return None


def _stand_in(torch_name: str) -> _StandIn:
    mod = sys.modules.get(torch_name)
    if isinstance(mod, _StandIn):
        return mod
    target = _resolve(torch_name)
    mod = _StandIn(torch_name, target)
    mod.__spec__ = importlib.machinery.ModuleSpec(torch_name, _FINDER, is_package=True)
    mod.__loader__ = _FINDER
    mod.__package__ = torch_name
    sys.modules[torch_name] = mod
    parent, _, leaf = torch_name.rpartition(".")
    if parent:  # import torch.X binds X on torch, as the import system does for real packages
        object.__setattr__(_stand_in(parent), leaf, mod)
    return mod


def _resolve(torch_name: str) -> Any:
    """The gradviz object behind torch_name: gradviz's module of that name, or an attribute of the
    parent's object (gradviz.cuda is a namespace class, not a module); raises MissingTorchModule."""
    if torch_name == "torch":
        gradviz = importlib.import_module("gradviz")
        gradviz._load_api()  # standing in for torch: the whole torch-like namespace, Tensor's methods included
        return gradviz
    gv = _gradviz_module_name(torch_name)
    if gv is not None:
        return importlib.import_module(gv)
    parent, _, leaf = torch_name.rpartition(".")
    parent_target = object.__getattribute__(_stand_in(parent), "_gv_target")
    value = getattr(parent_target, leaf, None)
    if value is None or isinstance(value, (int, float, str, bool)):
        raise _missing_module(torch_name)
    return value


class _TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds torch and torch.* while installed, and loads them as stand-ins for gradviz."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        _resolve(fullname)  # fail here, with the one line, when gradviz has no such thing
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _stand_in(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_FINDER = _TorchFinder()
_saved: dict[str, types.ModuleType] = {}


def is_installed() -> bool:
    return _FINDER in sys.meta_path


def install_as_torch() -> None:
    """Make ``import torch`` (and ``torch.X``) resolve to gradviz in this process, until
    ``uninstall_as_torch()``. A real torch already imported is set aside and restored after."""
    if is_installed():
        return
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        _saved[name] = sys.modules.pop(name)
    sys.meta_path.insert(0, _FINDER)
    _stand_in("torch")


def uninstall_as_torch() -> None:
    """Undo ``install_as_torch()``: the stand-ins leave sys.modules and any real torch comes back."""
    if not is_installed():
        return
    sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if isinstance(sys.modules[name], _StandIn):
            del sys.modules[name]
    sys.modules.update(_saved)
    _saved.clear()


@contextlib.contextmanager
def as_torch() -> Iterator[types.ModuleType]:
    """``with gradviz.as_torch() as torch:``: gradviz stands in for torch inside the block."""
    was = is_installed()
    install_as_torch()
    try:
        yield sys.modules["torch"]
    finally:
        if not was:
            uninstall_as_torch()


def _traceback_location(tb: Any) -> str | None:
    """file:line of the last traceback frame outside gradviz and the import machinery."""
    where = None
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        path = os.path.abspath(fn)
        if not (fn.startswith("<frozen") or path.startswith(_IMPORTLIB_DIR) or path.startswith(_GRADVIZ_DIR)):
            where = f"{os.path.basename(fn)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def _raised_in_gradviz(tb: Any) -> bool:
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and os.path.abspath(last.tb_frame.f_code.co_filename).startswith(_GRADVIZ_DIR)


def missing_api(exc: BaseException, loose: bool = False) -> tuple[str, str] | None:
    """(torch API, the one-line message) when exc says that gradviz lacks a torch API, else None.

    Beside the stand-ins' own errors, two more are a missing API rather than a bug: an attribute
    read from a gradviz object that gradviz's class lacks (``x.nelement()``), and a keyword a
    gradviz function does not take (``torch.randn(size=...)``). Python raises the latter in the
    caller's frame, so it cannot be told from a user's own mistake: only with ``loose`` (the
    corpus's status table), never for the CLI's one line."""
    if isinstance(exc, MissingTorchAPI):
        return exc.api, str(exc)
    if isinstance(exc, AttributeError) and not isinstance(exc, MissingTorchAPI):
        obj = getattr(exc, "obj", None)
        cls = obj if isinstance(obj, type) else type(obj)
        if exc.name and getattr(cls, "__module__", "").startswith("gradviz"):
            api = f"torch.{cls.__name__}.{exc.name}"
            return api, _message(api, _traceback_location(exc.__traceback__))
    keyword = isinstance(exc, TypeError) and "unexpected keyword argument" in str(exc)
    if keyword and (loose or _raised_in_gradviz(exc.__traceback__)):
        text = str(exc)
        func, _, rest = text.partition("()")
        kw = rest.split("'")[1] if "'" in rest else rest
        api = f"torch.{func.strip().rsplit('.', 1)[-1]}({kw}=)"
        return api, _message(api, _traceback_location(exc.__traceback__))
    return None
