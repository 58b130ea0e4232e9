"""torch.save / torch.load and torch.serialization, as pickles.

gradviz's files are plain pickles, not torch's zip archives: a file saved here loads here (not in
torch); a file torch saved loads here too (its tensors, parameters and containers: _torch_zip.py).
A tensor is pickled as its data, dtype and ``requires_grad`` (no history, no ``.grad``, as torch
saves it); a Parameter stays a Parameter.

``weights_only`` is accepted but not enforced: torch's restricted unpickler is a guard against
untrusted files, which this module does not offer; ``safe_globals`` and ``add_safe_globals`` keep
their list so that code written for torch 2.6+ runs unchanged.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np

from gradviz import _torch_zip

__all__ = [
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]

DEFAULT_PROTOCOL = 2
_safe_globals: list[Any] = []


def _rebuild_tensor(cls: type, data: np.ndarray, dtype_name: str, requires_grad: bool) -> Any:
    import gradviz
    from gradviz.tensor import Tensor

    t = Tensor._wrap(np.array(data), getattr(gradviz, dtype_name), gradviz.device("cpu"))
    if cls is not Tensor:
        t = cls(t, requires_grad) if _is_parameter(cls) else Tensor._wrap.__func__(cls, t._data, t.dtype, t.device)
    if requires_grad and not t.requires_grad:
        t.requires_grad_(True)
    return t


def _is_parameter(cls: type) -> bool:
    from gradviz.nn.parameter import Parameter

    return issubclass(cls, Parameter)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        from gradviz.tensor import Tensor

        if isinstance(obj, Tensor):
            host = obj.detach().cpu()._data if obj.device.type != "cpu" else obj._data
            return (
                _rebuild_tensor,
                (type(obj), np.asarray(host), str(obj.dtype).rpartition(".")[2], obj.requires_grad),
            )
        return NotImplemented


def save(obj: Any, f: str | os.PathLike[str] | io.IOBase, pickle_module: Any = pickle,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """torch.save: ``obj`` pickled into the path or file object ``f``."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _Pickler(fh, protocol=pickle_protocol).dump(obj)
    else:
        _Pickler(f, protocol=pickle_protocol).dump(obj)


def load(f: str | os.PathLike[str] | io.IOBase, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """torch.load of a file that ``save`` wrote, or that torch's torch.save wrote (its zip format:
    gradviz/_torch_zip.py); map_location: every gradviz tensor loads on the cpu."""
    if _torch_zip.is_torch_zip(f):
        return _torch_zip.load(f)
    if hasattr(f, "seek"):
        f.seek(0)  # is_zipfile read the file object's end
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return pickle.load(fh, **pickle_load_args)
    return pickle.load(f, **pickle_load_args)


def add_safe_globals(safe_globals: list[Any]) -> None:
    _safe_globals.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    return list(_safe_globals)


def clear_safe_globals() -> None:
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """torch.serialization.safe_globals: the list is added for the block's duration."""
    n = len(_safe_globals)
    _safe_globals.extend(safe_globals)
    try:
        yield
    finally:
        del _safe_globals[n:]
