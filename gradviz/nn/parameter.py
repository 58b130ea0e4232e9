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


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (lazy modules): it holds no values
    until ``materialize`` gives it a shape, and it becomes a plain Parameter or tensor then."""

    cls_to_become: type

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        self.data = empty(*(shape if isinstance(shape, (tuple, list)) else (shape,)), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes."
        )

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of unknown shape (torch.nn.parameter.UninitializedParameter)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> UninitializedParameter:
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of unknown shape (torch.nn.parameter.UninitializedBuffer)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        data = empty(0, device=device, dtype=dtype)
        b = Tensor._wrap.__func__(cls, data._data, data.dtype, data.device)
        b.persistent = persistent
        return b

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        pass


def is_lazy(param: Any) -> bool:
    return isinstance(param, UninitializedTensorMixin)
