"""More Tensor methods: the Python-callable maps (apply_, map_, map2_), the legacy constructor
``new``, new_empty_strided, storage changes in place (resize_, resize_as_, set_, is_set_to),
the removed ``volatile`` flag, and LU / QR-by-reflectors (lu, geqrf, ormqr, as torch.lu too)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import linalg_more as _linalg_more
from gradviz.ops import products as _products
from gradviz.ops import views as _views
from gradviz.ops._common import NODES, _new, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_write import bump_version, check_inplace
from gradviz.ops.misc_more import empty_strided
from gradviz.tensor import Tensor

__all__ = ["geqrf", "lu", "norm_except_dim", "ormqr", "resize_as_"]


def _elementwise(name: str, a: Tensor, fn: Callable[..., Any], *others: Tensor) -> Tensor:
    check_inplace(a)
    if a.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    arrays = [np.broadcast_to(o._data, a.shape) for o in others]
    flat = a._data.reshape(-1) if a._data.flags["C_CONTIGUOUS"] else None
    values = [fn(*vals) for vals in zip(a._data.reshape(-1).tolist(), *(x.reshape(-1).tolist() for x in arrays),
                                         strict=True)]
    result = np.asarray(values, dtype=a._data.dtype).reshape(a.shape)
    if flat is not None:
        flat[...] = result.reshape(-1)
    else:
        a._data[...] = result
    # no version bump, as torch's: its apply_/map_ write through the raw data, past the counter
    return a


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002
    """callable applied to every element, in place (CPU only, no autograd: torch's)."""
    return _elementwise("apply_", self, callable)


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
    return _elementwise("map_", self, callable, tensor)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[..., Any]) -> Tensor:  # noqa: A002
    return _elementwise("map2_", self, callable, x, y)


def new(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """The legacy constructor in self's dtype and device: new() is empty, new(2, 3) a new
    (zero-filled) tensor of that size, new(data) one holding data."""
    device = kwargs.pop("device", self.device)
    if kwargs:
        raise TypeError(f"new() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not args:
        return _construction.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0] if args[0].dtype is self.dtype else _construction.tensor(args[0].tolist(), dtype=self.dtype)
    if all(isinstance(a, int) for a in args) or (len(args) == 1 and type(args[0]).__name__ == "Size"):
        size = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args
        return _construction.zeros(*size, dtype=self.dtype, device=device)
    return _construction.tensor(args[0], dtype=self.dtype, device=device)


def new_empty_strided(self: Tensor, size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """self given a new size in place: the elements it keeps are its first ones, in order; new
    ones are uninitialised (zeros here)."""
    size = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else tuple(sizes)
    return _resize("resize_", self, size)


def _resize(name: str, self: Tensor, size: tuple[int, ...]) -> Tensor:
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = int(np.prod(size))
    old = self._data.reshape(-1)
    data = np.zeros(n, dtype=old.dtype)
    keep = min(n, old.size)
    data[:keep] = old[:keep]
    self._data = data.reshape(size)
    bump_version(self, name)
    return self


def resize_as_(self: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    return _resize("resize_as_", self, tuple(other.shape))


def set_(self: Tensor, source: Tensor | None = None, *args: Any) -> Tensor:
    """self made to share source's data (an empty tensor without one)."""
    if args:
        raise NotImplementedError("gradviz has no Tensor.set_ with a storage offset, size and stride")
    if source is None:
        self._data = np.zeros(0, dtype=self._data.dtype)
    else:
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Could not set tensor of type {_dtype.scalar_type_name(source.dtype)} to a tensor of "
                               f"type {_dtype.scalar_type_name(self.dtype)}")
        self._data = source._data
    bump_version(self, "set_")
    return self


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    a, b = self._data, tensor._data
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.shape == b.shape
            and a.strides == b.strides)


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:  # noqa: N803
    """torch.lu (deprecated): (LU, pivots) or (LU, pivots, infos), linalg.lu_factor_ex's."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
                  "be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be "
                  "replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
                  "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                  "torch.linalg.lu_factor_ex(A, compute_pivots)", UserWarning, stacklevel=2)
    lu_, piv, info = _linalg_more.lu_factor_ex(A, pivot=pivot)
    return (lu_, piv, info) if get_infos else (lu_, piv)


def _no_grad_support(name: str, *ts: Tensor) -> None:
    if _grad_state.enabled and any(t._tracked for t in ts):
        raise NotImplementedError(f"gradviz has no derivative for torch.{name}")


class _Geqrf(tuple):
    @property
    def a(self) -> Tensor:
        return self[0]

    @property
    def tau(self) -> Tensor:
        return self[1]


def geqrf(a: Tensor) -> _Geqrf:
    """LAPACK's QR by Householder reflectors: R above the diagonal, the reflectors below, and tau."""
    _no_grad_support("geqrf", a)
    if a.ndim != 2:
        h = [np.linalg.qr(m, mode="raw") for m in a._data.reshape(-1, *a.shape[-2:])]
        packed = np.stack([np.swapaxes(x[0], -1, -2) for x in h]).reshape(a.shape)
        tau = np.stack([x[1] for x in h]).reshape(*a.shape[:-2], -1)
    else:
        raw, tau = np.linalg.qr(a._data, mode="raw")
        packed = raw.T
    return _Geqrf((_new(np.ascontiguousarray(packed, dtype=a._data.dtype), a.device),
                   _new(np.ascontiguousarray(tau, dtype=a._data.dtype), a.device)))


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,  # noqa: A002
          transpose: bool = False) -> Tensor:
    """other multiplied by Q (or Q^T) of the reflectors geqrf packed (on the left or the right)."""
    _no_grad_support("ormqr", input, tau, other)
    m = input.shape[-2]
    q = np.broadcast_to(np.eye(m, dtype=input._data.dtype), (*input.shape[:-2], m, m)).copy()
    vs = []
    for i in range(tau.shape[-1]):
        v = np.array(input._data[..., :, i])
        v[..., :i] = 0
        v[..., i] = 1
        vs.append(v)
    for i in range(tau.shape[-1] - 1, -1, -1):
        v = vs[i]
        q = q - tau._data[..., i, None, None] * v[..., :, None] * (v[..., None, :] @ q)
    if transpose:
        q = np.swapaxes(q, -1, -2)
    data = q @ other._data if left else other._data @ q
    return _new(np.ascontiguousarray(data), other.device)


def _resize_copy(name: str, self: Tensor, size: tuple[int, ...]) -> Tensor:
    """The deprecated out-of-place resize: a view-free copy with the new size (ResizeBackward,
    the old autograd Function's node)."""
    warnings.warn(f"non-inplace {name} is deprecated", UserWarning, stacklevel=3)
    n = int(np.prod(size))
    if n != self.numel():
        raise RuntimeError(f"Requested size has {n} elements, but the tensor has {self.numel()}")
    out = _new(np.array(self._data, order="C").reshape(size), self.device)
    if _grad_state.enabled and self._tracked:
        record(NODES["resize"], (self,), [out], {"shape": self.shape})
    return out


def resize(self: Tensor, *sizes: Any) -> Tensor:
    size = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else tuple(sizes)
    return _resize_copy("resize", self, size)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    return _resize_copy("resize_as", self, tuple(tensor.shape))


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """self's data as a ``cls`` (a Tensor subclass), still in self's graph (AliasBackward0)."""
    out = _indexing.alias(self)
    if cls is not Tensor:
        if not issubclass(cls, Tensor):
            raise TypeError(f"as_subclass(): expected a subclass of torch.Tensor, got {cls.__name__}")
        out.__class__ = cls
    return out


def _aten_norm(v: Tensor, p: float, dim: int | None = None) -> Tensor:
    """ATen's norm (NormBackward0 over everything, NormBackward1 over a dim), which torch's C++
    compositions call (Python's torch.norm goes to linalg.vector_norm instead)."""
    x = v._data.astype(np.float64)
    axis = None if dim is None else dim
    a = np.abs(x)
    if p == float("inf"):
        data = a.max(axis=axis)
    elif p == 0:
        data = (a != 0).sum(axis=axis).astype(np.float64)
    else:
        data = (a ** p).sum(axis=axis) ** (1.0 / p)
    out = _new(np.asarray(data, dtype=v._data.dtype), v.device)
    if _grad_state.enabled and v._tracked:
        record(NODES["aten_norm" if dim is None else "aten_norm_dim"], (v,), [out],
               {"self": save(v), "result": save(out, True), "p": p, "dim": dim})
    return out


def _aten_norm_grad(n, g):
    x, r, p, d = n["self"], n["result"], n["p"], n["dim"]
    if d is not None:
        g, r = _views.unsqueeze(g, d), _views.unsqueeze(r, d)
    return _arith.mul(g, _products._pnorm_grad(x, r, p))


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The p-norm over every dim but ``dim``, kept with size 1 (weight_norm's), as torch composes it."""
    if dim == -1:
        return _aten_norm(v, pow)
    if dim == 0:
        shape = (v.shape[0],) + (1,) * (v.ndim - 1)
        return _views.view(_aten_norm(_views.view(_views.contiguous(v), (v.shape[0], -1)), pow, 1), shape)
    if dim == v.ndim - 1:
        shape = (1,) * (v.ndim - 1) + (v.shape[-1],)
        return _views.view(_aten_norm(_views.view(_views.contiguous(v), (-1, v.shape[-1])), pow, 0), shape)
    return _views.transpose(norm_except_dim(_views.transpose(v, 0, dim), pow, 0), 0, dim)


register({"resize": D("ResizeBackward", (lambda n, g: _views.view(_views.contiguous(g), n["shape"]),)),
          "aten_norm": D("NormBackward0", (_aten_norm_grad,)),
          "aten_norm_dim": D("NormBackward1", (_aten_norm_grad,))})

METHODS: dict[str, Any] = {
    "resize": resize, "resize_as": resize_as, "as_subclass": as_subclass,
    "apply_": apply_, "map_": map_, "map2_": map2_, "new": new, "new_empty_strided": new_empty_strided,
    "resize_": resize_, "resize_as_": resize_as_, "set_": set_, "is_set_to": is_set_to,
    "volatile": property(_volatile), "lu": lu, "geqrf": geqrf, "ormqr": ormqr,
}
