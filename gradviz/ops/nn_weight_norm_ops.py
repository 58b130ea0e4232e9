"""Weight normalisation: ``_weight_norm_interface`` and its WeightNormInterfaceBackward0 row (one
node for w = g * v / ||v||, the norm over every dim but ``dim``, as torch's CPU kernel records it),
``norm_except_dim`` and ``_weight_norm``, which torch builds of other ops when the fused kernel does
not apply (``dim`` neither the first nor the last, or None)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops import functions as F
from gradviz.ops import reductions as _reductions
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.ops.nn_pad_ops import norm_dim
from gradviz.tensor import Tensor

__all__ = ["norm_except_dim"]


def _other_axes(ndim: int, dim: int) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i != dim)


def _norms(v: np.ndarray, dim: int) -> np.ndarray:
    axes = _other_axes(v.ndim, dim)
    return np.sqrt(np.sum(v * v, axis=axes, keepdims=True, dtype=v.dtype))


def _weight_norm_interface(v: Tensor, g: Tensor, dim: int = 0) -> tuple[Tensor, Tensor]:
    """(w, norms): w = v * g / norms, norms of v's slices along ``dim`` kept as g's shape."""
    dim = dim % v.ndim
    norms = _norms(v._data, dim)
    w = v._data * (g._data.reshape(norms.shape) / norms)
    out, n_out = _out(w.astype(v._data.dtype, copy=False), v), _out(norms.astype(v._data.dtype, copy=False), v)
    if _grad_state.enabled and (_requires(v) or _requires(g)):
        record(_WEIGHT_NORM, (v, g), [out, n_out], {
            "v": SavedVariable(v), "g": SavedVariable(g), "result1": SavedVariable(n_out, True), "dim": dim,
        })
    return out, n_out


def _wn_grads(n: Any, gw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v, g, norms = n["v"]._data, n["g"]._data, n["result1"]._data
    axes = _other_axes(v.ndim, n["dim"])
    gs = g.reshape(norms.shape)
    dot = np.sum(gw * v, axis=axes, keepdims=True, dtype=v.dtype)
    grad_g = (dot / norms).reshape(g.shape)
    grad_v = (gs / norms) * (gw - v * (dot / (norms * norms)))
    return grad_v, grad_g


def _wn_part(i: int) -> Any:
    def grad(n: Any, grads: list) -> Tensor | None:
        gw = grads[0]
        if gw is None:
            return None
        part = _wn_grads(n, gw._data)[i]
        return _out(part.astype(gw._data.dtype, copy=False), gw)

    return grad


_WEIGHT_NORM = _register("_weight_norm_interface", D(
    "WeightNormInterfaceBackward0", (_wn_part(0), _wn_part(1)), multi_output=True,
))


def _norm_all(input: Tensor, p: float) -> Tensor:
    """at::norm(self, p) over every element, with its node NormBackward0 (torch.norm from Python
    goes to linalg.vector_norm instead)."""
    with no_grad():
        out = _reductions.norm(input, p)
    if _grad_state.enabled and _requires(input):
        record(_NORM_ALL, (input,), [out], {"self": SavedVariable(input), "result": SavedVariable(out, True),
                                            "ord": float(p), "dim": None, "keepdim": False})
    return out


_NORM_ALL = _register("norm_Scalar", D("NormBackward0", (_reductions._norm,)), graph=True)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of each slice of v along ``dim``, kept as a (1, .., n, .., 1) tensor; over
    all of v when dim is -1. Built of views and norm, as torch builds it."""
    if dim == -1:
        return _norm_all(v, pow)
    last = v.ndim - 1
    if dim == 0:
        shape = (v.shape[0],) + (1,) * last
        return F.view(norm_dim(F.view(F.contiguous(v), v.shape[0], -1), pow, 1), *shape)
    if dim == last:
        shape = (1,) * last + (v.shape[last],)
        return F.view(norm_dim(F.view(F.contiguous(v), -1, v.shape[last]), pow, 0), *shape)
    return F.transpose(norm_except_dim(F.transpose(v, 0, dim), pow, 0), 0, dim)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """torch._weight_norm: the fused node for the first or last dim, else v * (g / norms)."""
    if dim < -1 or dim >= v.ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-v.ndim}, {v.ndim - 1}] but got {dim})"
        )
    if dim in (0, v.ndim - 1):
        return _weight_norm_interface(v, g, dim)[0]
    return F.mul(v, F.div(g, norm_except_dim(v, 2, dim)))
