"""Tensor's questions about itself that torch answers from its metadata: strides and the storage
offset (from the numpy array's, in elements), the data pointer, the sizes in bytes, which device
kinds it is on (a gradviz tensor is never quantized, nested, sparse CSR, conjugated or on an
XLA/MPS/IPU/... device), and the conj/neg views, which a real tensor answers with itself."""

from __future__ import annotations

from typing import Any

from gradviz.ops import views as _views
from gradviz.tensor import Tensor

# the ones torch has as functions too (torch.is_signed(t), torch.conj(t), ...)
__all__ = ["adjoint", "conj", "get_device", "is_complex", "is_conj", "is_inference", "is_neg", "is_nonzero",
           "is_same_size", "is_signed", "resolve_conj", "resolve_neg"]


def _pointer(a: Any) -> int:
    iface = getattr(a, "__array_interface__", None) or getattr(a, "__cuda_array_interface__", None)
    return iface["data"][0] if iface else 0


def stride(t: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
    item = t._data.itemsize
    s = tuple(st // item for st in t._data.strides)
    if dim is None:
        return s
    n = len(s)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return s[dim]


def storage_offset(t: Tensor) -> int:
    """Elements from the start of the memory the tensor's array views (its outermost base)."""
    root = t._data
    while getattr(root, "base", None) is not None and hasattr(root.base, "__array_interface__"):
        root = root.base
    return (_pointer(t._data) - _pointer(root)) // t._data.itemsize


def _false(t: Tensor) -> bool:
    return False


def _self(t: Tensor) -> Tensor:
    return t


def get_device(t: Tensor) -> int:
    return -1 if t.device.type == "cpu" else (t.device.index or 0)


def is_signed(t: Tensor) -> bool:
    return t.dtype.is_signed


is_complex = is_conj = is_neg = is_inference = _false
conj = resolve_conj = resolve_neg = _self


def is_nonzero(t: Tensor) -> bool:
    if t.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if t.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(t._data.reshape(-1)[0] != 0)


def is_same_size(t: Tensor, other: Tensor) -> bool:
    return tuple(t.shape) == tuple(other.shape)


def adjoint(t: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims: for a real tensor transpose(-2, -1)."""
    return _views.transpose(t, -2, -1)


def _h(t: Tensor) -> Tensor:
    if t.ndim > 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got 3-D tensor.".replace(
            "3-D", f"{t.ndim}-D"))
    return _views.transpose(t, 0, 1) if t.ndim == 2 else t


METHODS: dict[str, Any] = {
    "stride": stride,
    "storage_offset": storage_offset,
    "data_ptr": lambda t: _pointer(t._data),
    "const_data_ptr": lambda t: _pointer(t._data),
    "get_device": get_device,
    "ndimension": lambda t: t.ndim,
    "is_signed": is_signed,
    "is_complex": _false, "is_conj": _false, "is_neg": _false, "is_inference": _false, "is_shared": _false,
    "is_pinned": _false, "is_nonzero": is_nonzero, "is_same_size": is_same_size, "adjoint": adjoint,
    "resolve_conj": _self, "resolve_neg": _self, "conj": _self,
    "mH": property(adjoint), "H": property(_h),
    "itemsize": property(lambda t: t._data.itemsize),
    "nbytes": property(lambda t: t._data.size * t._data.itemsize),
    "is_cpu": property(lambda t: t.device.type == "cpu"),
    "real": property(_self),
    **{name: property(_false) for name in (
        "is_nested", "is_meta", "is_quantized", "is_mkldnn", "is_sparse_csr", "is_xla", "is_mps", "is_ipu",
        "is_vulkan", "is_maia", "is_mtia",
    )},
}
