"""torch's storages over gradviz's memory: ``UntypedStorage`` (the bytes under a tensor: its
outermost numpy buffer, so ``data_ptr``, ``nbytes`` and writes agree with the tensor's),
``TypedStorage`` (those bytes read as one dtype, deprecated in torch: it warns once) and the legacy
``FloatStorage``... classes (a TypedStorage of their dtype; ``isinstance`` asks for the dtype).
``Tensor.untyped_storage()``, ``storage()`` and ``storage_type()`` hand them out."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.device import device as Device
from gradviz.ops.as_strided import memory_of
from gradviz.tensor import Tensor

__all__ = [
    "BoolStorage", "ByteStorage", "CharStorage", "DoubleStorage", "FloatStorage", "IntStorage", "LongStorage",
    "ShortStorage", "TypedStorage", "UntypedStorage",
]

_warned: list[bool] = []


def _warn_typed() -> None:
    if not _warned:  # torch warns once per process
        _warned.append(True)
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage "
            "class. This should only matter to you if you are using storages directly.  To access UntypedStorage "
            "directly, use tensor.untyped_storage() instead of tensor.storage()", UserWarning, stacklevel=3)


def _repr(values: list, footer: str) -> str:
    return "\n".join([f" {v}" for v in values] + [footer])


class UntypedStorage:
    """Bytes: a uint8 view of a numpy buffer (shared with the tensors over it)."""

    def __init__(self, *args: Any, device: Any = None) -> None:
        if len(args) == 1 and isinstance(args[0], np.ndarray) and args[0].dtype == np.uint8:
            self._bytes = args[0]
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            self._bytes = np.array(args[0], dtype=np.uint8)
        else:
            self._bytes = np.zeros(int(args[0]) if args else 0, dtype=np.uint8)
        self.device = Device("cpu") if device is None else Device(device)

    @classmethod
    def _of(cls, t: Tensor) -> UntypedStorage:
        root = memory_of(t)
        return cls(np.ascontiguousarray(root).reshape(-1).view(np.uint8))

    def nbytes(self) -> int:
        return int(self._bytes.size)

    size = nbytes

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return int(self._bytes.__array_interface__["data"][0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return UntypedStorage(self._bytes[i])
        return int(self._bytes[i])

    def __setitem__(self, i: Any, value: Any) -> None:
        self._bytes[i] = value

    def __iter__(self) -> Any:
        return iter(self.tolist())

    def tolist(self) -> list[int]:
        return self._bytes.tolist()

    def fill_(self, value: int) -> UntypedStorage:
        self._bytes[...] = value
        return self

    def copy_(self, source: UntypedStorage, non_blocking: bool | None = None) -> UntypedStorage:
        self._bytes[...] = source._bytes
        return self

    def clone(self) -> UntypedStorage:
        return UntypedStorage(self._bytes.copy())

    def cpu(self) -> UntypedStorage:
        return self

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device: Any = "cuda") -> bool:
        return False

    @property
    def is_cuda(self) -> bool:
        return False

    def untyped(self) -> UntypedStorage:
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UntypedStorage) and self.data_ptr() == other.data_ptr() and \
            self.nbytes() == other.nbytes()

    def __hash__(self) -> int:
        return hash((self.data_ptr(), self.nbytes()))

    def __repr__(self) -> str:
        return _repr(self.tolist(), f"[torch.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}]")


class TypedStorage:
    """The bytes of an UntypedStorage read as ``dtype``."""

    is_sparse = False

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None, wrap_storage: UntypedStorage | None = None,
                 _internal: bool = False) -> None:
        if not _internal:
            _warn_typed()
        self.dtype = dtype if dtype is not None else _dtype._default[0]
        if wrap_storage is not None:
            self._untyped = wrap_storage
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            values = np.array(args[0], dtype=np.float64 if self.dtype.is_floating_point else None)
            self._untyped = UntypedStorage(values.astype(self.dtype.np).reshape(-1).view(np.uint8))
        else:
            n = int(args[0]) if args else 0
            self._untyped = UntypedStorage(np.zeros(n, dtype=self.dtype.np).view(np.uint8))
        self.device = self._untyped.device

    def _values(self) -> np.ndarray:
        return self._untyped._bytes.view(self.dtype.np)

    def size(self) -> int:
        return self._untyped.nbytes() // self.dtype.np.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def __getitem__(self, i: Any) -> Any:
        return self._values()[i].item()

    def __setitem__(self, i: Any, value: Any) -> None:
        self._values()[i] = value

    def __iter__(self) -> Any:
        return iter(self.tolist())

    def tolist(self) -> list:
        return self._values().tolist()

    def fill_(self, value: Any) -> TypedStorage:
        self._values()[...] = value
        return self

    def cpu(self) -> TypedStorage:
        return self

    def is_shared(self) -> bool:
        return False

    @property
    def is_cuda(self) -> bool:
        return False

    def __repr__(self) -> str:
        return _repr(self.tolist(), f"[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
                                    f"{self.size()}]")


class _LegacyStorageMeta(type):
    """FloatStorage(...) builds a TypedStorage of float32; isinstance asks for that dtype."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype

    def __call__(cls, *args: Any, device: Any = None) -> TypedStorage:  # type: ignore[override]
        return TypedStorage(*args, dtype=cls.dtype, device=device, _internal=True)


def _legacy(name: str, dt: Any) -> type:
    return _LegacyStorageMeta(name, (TypedStorage,), {"dtype": dt, "__module__": "torch"})


FloatStorage = _legacy("FloatStorage", _dtype.float32)
DoubleStorage = _legacy("DoubleStorage", _dtype.float64)
HalfStorage = _legacy("HalfStorage", _dtype.float16)
LongStorage = _legacy("LongStorage", _dtype.int64)
IntStorage = _legacy("IntStorage", _dtype.int32)
ShortStorage = _legacy("ShortStorage", _dtype.int16)
CharStorage = _legacy("CharStorage", _dtype.int8)
ByteStorage = _legacy("ByteStorage", _dtype.uint8)
BoolStorage = _legacy("BoolStorage", _dtype.bool_)
_BY_DTYPE = {c.dtype: c for c in (FloatStorage, DoubleStorage, HalfStorage, LongStorage, IntStorage, ShortStorage,
                                  CharStorage, ByteStorage, BoolStorage)}


def untyped_storage(self: Tensor) -> UntypedStorage:
    return UntypedStorage._of(self)


def storage(self: Tensor) -> TypedStorage:
    _warn_typed()
    return TypedStorage(dtype=self.dtype, wrap_storage=UntypedStorage._of(self), _internal=True)


def storage_type(self: Tensor) -> type:
    if self.dtype not in _BY_DTYPE:
        raise TypeError(f"gradviz has no storage class for {self.dtype}")
    return _BY_DTYPE[self.dtype]


def install() -> None:
    Tensor.untyped_storage = untyped_storage  # type: ignore[attr-defined]
    Tensor.storage = storage  # type: ignore[attr-defined]
    Tensor.storage_type = storage_type  # type: ignore[attr-defined]
