"""Tensor members about a tensor's memory and its legacy element-wise Python hooks: ``new``,
``resize_``/``resize_as_``, ``share_memory_``/``is_shared``, ``pin_memory``, ``as_subclass``,
``dim_order``, and ``apply_``/``map_``/``map2_`` (a Python callable per element, CPU only, as
torch's). gradviz's memory is a numpy array: a shrinking or same-size ``resize_`` of a contiguous
tensor keeps the memory (its old views still see it), a growing one moves to new memory as
torch's reallocation does, keeping the old elements first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz.ops.as_strided import memory_of
from gradviz.ops.indexing import alias
from gradviz.ops.tensor_info import storage_offset, stride
from gradviz.tensor import Tensor, _legacy_init, _shape

__all__ = ["install"]


def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """torch's legacy constructor with this tensor's dtype (and device): sizes, data or nothing."""
    t = object.__new__(Tensor)
    _legacy_init(t, self.dtype, args, device if device is not None else self.device)
    return t


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
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
    self._version_counter[0] += 1
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    return resize_(self, *the_template.shape)


def share_memory_(self: Tensor) -> Tensor:
    """A CPU tensor's memory moved to shared memory: gradviz's stays where it is, and says shared."""
    self.__dict__["_shared"] = True
    return self


def is_shared(self: Tensor) -> bool:
    return bool(self.__dict__.get("_shared", False))


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
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


def install() -> None:
    for name, fn in {
        "new": new, "resize_": resize_, "resize_as_": resize_as_, "share_memory_": share_memory_,
        "is_shared": is_shared, "pin_memory": pin_memory, "as_subclass": as_subclass, "dim_order": dim_order,
        "apply_": apply_, "map_": map_, "map2_": map2_,
    }.items():
        setattr(Tensor, name, fn)

