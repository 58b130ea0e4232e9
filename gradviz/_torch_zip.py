"""Reading the files torch.save writes (its zip format, torch >= 1.6) without torch: state dicts
and checkpoints that torch saved or torch.hub downloaded load as gradviz tensors.

The archive holds ``<name>/data.pkl``, a pickle whose tensors refer to storages by key
(``persistent_load``), and each storage's bytes in ``<name>/data/<key>``. A tensor is rebuilt by
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)``; this module answers those
names with numpy views of the stored bytes (copied, so the archive can close). Objects other than
tensors, parameters, containers and dtypes (a pickled nn.Module, say) fail with one line.
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.device import CPU
from gradviz.nn.parameter import Parameter
from gradviz.tensor import Tensor

# torch's legacy storage classes -> numpy dtype (bfloat16 through the dtype table)
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool",
}


class _StorageType:
    def __init__(self, dtype_name: str) -> None:
        self.dtype = getattr(_dtype, "bool_" if dtype_name == "bool" else dtype_name)


class _Storage:
    def __init__(self, data: np.ndarray, dtype: _dtype.dtype) -> None:
        self.data, self.dtype = data, dtype


def _rebuild_tensor_v2(storage: _Storage, offset: int, size: tuple, stride: tuple, requires_grad: bool,
                       backward_hooks: Any, metadata: Any = None) -> Tensor:
    item = storage.data.itemsize
    if not size:
        arr = storage.data[offset : offset + 1].reshape(())
    else:
        arr = np.lib.stride_tricks.as_strided(storage.data[offset:], tuple(size), tuple(s * item for s in stride))
    t = Tensor._wrap(np.array(arr, order="K"), storage.dtype, CPU)  # strides kept, as torch loads them
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any, *state: Any) -> Any:
    return Parameter(data, requires_grad)


class _Unpickler(pickle.Unpickler):
    def __init__(self, f: Any, archive: zipfile.ZipFile, prefix: str) -> None:
        super().__init__(f)
        self.archive, self.prefix = archive, prefix
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor_v2
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if module == "torch" and isinstance(getattr(_dtype, name, None), _dtype.dtype):
            return getattr(_dtype, name)
        if module in ("builtins", "copyreg", "_codecs") or module.startswith("numpy"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"gradviz reads tensors, parameters and containers from torch's files, not {module}.{name}"
        )

    def persistent_load(self, saved_id: Any) -> _Storage:
        kind, storage_type, key, _location, _numel = saved_id
        if kind != "storage":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r} in a torch file")
        if key not in self.storages:
            dt = storage_type.dtype
            raw = self.archive.read(f"{self.prefix}/data/{key}")
            self.storages[key] = _Storage(np.frombuffer(raw, dtype=dt.np), dt)
        return self.storages[key]


def is_torch_zip(f: Any) -> bool:
    return zipfile.is_zipfile(f)


def load(f: Any) -> Any:
    """The object torch.save wrote into ``f`` (a path or a binary file object)."""
    with zipfile.ZipFile(f) as archive:
        pkl = next((n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
        if pkl is None:
            raise pickle.UnpicklingError("not a file torch.save wrote: the zip holds no data.pkl")
        prefix = pkl[: -len("/data.pkl")] if "/" in pkl else ""
        return _Unpickler(io.BytesIO(archive.read(pkl)), archive, prefix).load()
