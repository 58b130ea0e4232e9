"""LU and QR by reflectors as Tensor methods and torch functions: lu, geqrf, ormqr."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import linalg_more as _linalg_more
from gradviz.ops._common import _new
from gradviz.tensor import Tensor

__all__ = ["geqrf", "lu", "ormqr"]


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


METHODS: dict[str, Any] = {"lu": lu, "geqrf": geqrf, "ormqr": ormqr}
