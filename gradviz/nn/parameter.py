"""torch.nn.Parameter: a leaf tensor that a Module registers as one of its parameters."""

from __future__ import annotations

from typing import Any

from gradviz.ops.construction import empty
from gradviz.tensor import Tensor


class Parameter(Tensor):
    """A tensor that requires grad by default and that Module attributes register.

    It shares the data and the version counter of the tensor it is made from (torch's
    ``_make_subclass``), but none of its history: a parameter is always a leaf."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = empty(0)
        p = Tensor._wrap.__func__(cls, data._data, data.dtype, data.device)
        p._version_counter = data._version_counter
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass  # __new__ made it

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        # order="K": a transposed parameter's copy keeps its strides, as torch's clone keeps them
        # (random draws into it then land where torch's do)
        t = Tensor._wrap(self._data.copy(order="K"), self.dtype, self.device)
        p = Parameter(t, self.requires_grad)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild, (self.detach(), self.requires_grad))


def _rebuild(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """torch.nn.Buffer: marks a tensor to be registered as a buffer when assigned to a Module."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            data = empty(0)
        b = Tensor._wrap.__func__(cls, data._data, data.dtype, data.device)
        b._version_counter = data._version_counter
        b.persistent = persistent
        return b

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        pass


Parameter.__str__ = Parameter.__repr__  # Tensor binds __str__ to its own repr
