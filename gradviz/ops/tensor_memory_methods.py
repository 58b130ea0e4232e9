"""Tensor members about a tensor's memory and its legacy element-wise Python hooks: ``new``,
``resize_``/``resize_as_``, ``share_memory_``/``is_shared``, ``pin_memory``, ``as_subclass``,
``dim_order``, and ``apply_``/``map_``/``map2_`` (a Python callable per element, CPU only, as
torch's). gradviz's memory is a numpy array: a shrinking or same-size ``resize_`` of a contiguous
tensor keeps the memory (its old views still see it), a growing one moves to new memory as
torch's reallocation does, keeping the old elements first."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz._construction_more import empty_strided
from gradviz._dtype import cpp_type_name
from gradviz._process_switches import is_distributed
from gradviz._storage import TypedStorage, UntypedStorage
from gradviz.amp import _TYPES as _DEVICE_TYPES
from gradviz.ops.as_strided import as_strided, memory_of
from gradviz.ops.indexing import alias
from gradviz.ops.inplace_write import bump_version
from gradviz.ops.tensor_info import storage_offset, stride
from gradviz.tensor import Tensor, _legacy_init, _shape

__all__ = ["install"]


def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """torch's legacy constructor with this tensor's dtype (and device): sizes, data or nothing."""
    t = object.__new__(Tensor)
    _legacy_init(t, self.dtype, args, device if device is not None else self.device)
    return t


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    return _resize(self, "resize_", *sizes)


def _resize(self: Tensor, op: str, *sizes: Any) -> Tensor:
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(int(s) for s in _shape(sizes))
    if any(s < 0 for s in shape):
        raise RuntimeError("numel: integer multiplication overflow")  # torch's check, on the product
    n = int(np.prod(shape, dtype=np.int64))
    # the memory under the tensor (its outermost numpy base), from the tensor's offset on
    root = memory_of(self)
    offset = storage_offset(self)
    if root.flags.c_contiguous and root.dtype == self._data.dtype and offset + n <= root.size:
        self._data = root.reshape(-1)[offset:offset + n].reshape(shape)
    else:
        grown = np.zeros(n, dtype=self._data.dtype)
        flat = root.reshape(-1)[offset:] if root.flags.c_contiguous and root.dtype == self._data.dtype \
            else self._data.reshape(-1)
        k = min(n, flat.size)
        grown[:k] = flat[:k]
        self._data = grown.reshape(shape)
    bump_version(self, op)
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    return _resize(self, "resize_as_", *the_template.shape)


def set_(self: Tensor, source: Any = None, storage_offset: int = 0, size: Any = None,
         stride: Any = None) -> Tensor:
    """This tensor made to look at ``source``'s memory (all of it, or the given geometry), or at
    nothing when no source is given; its autograd state and version counter stay its own."""
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if source is None:
        self._data = np.zeros(0, dtype=self._data.dtype)
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        values = source.untyped()._bytes.view(self._data.dtype)
        self._data = values if size is None else np.lib.stride_tricks.as_strided(
            values[storage_offset:], tuple(size),
            tuple(st * values.itemsize for st in (stride if stride is not None else _contiguous(size))))
    else:
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Could not set tensor of type {cpp_type_name(source.dtype)} to a tensor of type "
                               f"{cpp_type_name(self.dtype)}")
        if size is None:
            self._data = source._data
        else:
            self._data = as_strided(source, size, stride if stride is not None else _contiguous(size),
                                    storage_offset)._data
    bump_version(self, "set_")
    return self


def _contiguous(size: Any) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(tuple(size)):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Same memory, offset, sizes and strides."""
    return (memory_of(self) is memory_of(tensor) or _same_buffer(self, tensor)) and \
        storage_offset(self) == storage_offset(tensor) and tuple(self.shape) == tuple(tensor.shape) and \
        stride(self) == stride(tensor)


def _same_buffer(a: Tensor, b: Tensor) -> bool:
    ma, mb = memory_of(a), memory_of(b)
    return ma.__array_interface__["data"][0] == mb.__array_interface__["data"][0] and ma.nbytes == mb.nbytes


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, **_: Any) -> Tensor:
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def share_memory_(self: Tensor) -> Tensor:
    """A CPU tensor's memory moved to shared memory: gradviz's stays where it is, and says shared."""
    self.__dict__["_shared"] = True
    return self


def is_shared(self: Tensor) -> bool:
    return bool(self.__dict__.get("_shared", False))


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """Pinned memory is an accelerator's: with none, torch's errors (the argument deprecated)."""
    if device is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please do not pass this argument.",
                  DeprecationWarning, stacklevel=2)
    kind = device if isinstance(device, str) else str(getattr(device, "type", device))
    if kind.split(":")[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{kind}")
    if kind.split(":")[0] == "cpu":
        raise RuntimeError("CPU device type not an accelerator.")
    raise RuntimeError("Cannot access accelerator device when none is available.")


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of this tensor (AliasBackward0, same memory) whose class is ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    out = alias(self)
    out.__class__ = cls
    return out


def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory: by stride, larger first (ties in dim order)."""
    strides = stride(self)
    return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))


def _elementwise(self: Tensor, name: str, others: tuple[Tensor, ...], fn: Callable[..., Any]) -> Tensor:
    if self.device.type != "cpu":
        raise RuntimeError(f"{name}() is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    arrays = [np.broadcast_to(o._data, self._data.shape) for o in others]
    out = self._data
    cast = bool if self.dtype.name == "bool" else int if not self.dtype.is_floating_point else float
    for idx in np.ndindex(out.shape):
        out[idx] = fn(cast(out[idx]), *(cast(a[idx]) for a in arrays))
    return self  # torch's apply_/map_ leave the version counter alone


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002 - torch's parameter name
    return _elementwise(self, "apply_", (), callable)


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
    return _elementwise(self, "map_", (tensor,), callable)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:  # noqa: A002
    return _elementwise(self, "map2_", (x, y), callable)


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def install() -> None:
    Tensor.volatile = property(_volatile)  # type: ignore[attr-defined] - torch's removed flag, always False
    for name, fn in {
        "new": new, "resize_": resize_, "resize_as_": resize_as_, "share_memory_": share_memory_,
        "is_shared": is_shared, "pin_memory": pin_memory, "as_subclass": as_subclass, "dim_order": dim_order,
        "apply_": apply_, "map_": map_, "map2_": map2_, "set_": set_, "is_set_to": is_set_to,
        "new_empty_strided": new_empty_strided, "is_distributed": is_distributed,
    }.items():
        setattr(Tensor, name, fn)

