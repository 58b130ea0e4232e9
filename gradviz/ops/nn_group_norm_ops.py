"""native_group_norm and its NativeGroupNormBackward0 row: one node for the whole normalisation,
as torch records it, with mean and rstd of shape (N, group) as its extra outputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__ = ["group_norm", "native_group_norm"]


def _affine_shape(c: int, ndim: int) -> tuple[int, ...]:
    return (1, c) + (1,) * (ndim - 2)


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, n: int, c: int, hxw: int,
                      group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    x = input._data
    xg = x.reshape(n, group, -1)
    mean = xg.mean(axis=2, keepdims=True, dtype=x.dtype)
    xc = xg - mean
    var = (xc * xc).mean(axis=2, keepdims=True, dtype=x.dtype)
    rstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
    y = (xc * rstd).reshape(x.shape)
    if weight is not None:
        y = y * weight._data.reshape(_affine_shape(c, x.ndim))
    if bias is not None:
        y = y + bias._data.reshape(_affine_shape(c, x.ndim))
    out = _out(y, input)
    m, r = _out(mean.reshape(n, group), input), _out(rstd.reshape(n, group), input)
    if _grad_state.enabled and (_requires(input) or _requires(weight) or _requires(bias)):
        record(_GROUP_NORM, (input, weight, bias), [out, m, r], {
            "input": SavedVariable(input), "weight": None if weight is None else SavedVariable(weight),
            "mean": SavedVariable(m, True), "rstd": SavedVariable(r, True), "N": n, "C": c, "HxW": hxw,
            "group": group, "has_bias": bias is not None,
        })
    return out, m, r


def _group_norm_grads(n: Any, g: np.ndarray) -> tuple:
    x = n["input"]._data
    big_n, c, group = n["N"], n["C"], n["group"]
    mean = n["mean"]._data.reshape(big_n, group, 1)
    rstd = n["rstd"]._data.reshape(big_n, group, 1)
    xhat = (x.reshape(big_n, group, -1) - mean) * rstd
    gd = g.reshape(big_n, c, -1)
    w = n["weight"]
    dxhat = gd * w._data.reshape(1, c, 1) if w is not None else gd
    dxhat = dxhat.reshape(big_n, group, -1)
    a = dxhat.mean(axis=2, keepdims=True)
    b = (dxhat * xhat).mean(axis=2, keepdims=True)
    dx = (rstd * (dxhat - a - xhat * b)).reshape(x.shape)
    xhat_c = xhat.reshape(big_n, c, -1)
    dw = (gd * xhat_c).sum(axis=(0, 2)) if w is not None else None
    db = gd.sum(axis=(0, 2)) if n["has_bias"] else None
    return dx, dw, db


def _gn_part(i: int) -> Any:
    def grad(n: Any, grads: list) -> Tensor | None:
        g = grads[0]
        if g is None:
            return None
        part = _group_norm_grads(n, g._data)[i]
        return None if part is None else _out(part.astype(g._data.dtype, copy=False), g)

    return grad


_GROUP_NORM = _register("native_group_norm", D(
    "NativeGroupNormBackward0", (_gn_part(0), _gn_part(1), _gn_part(2)), multi_output=True, forward=TR,
))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, but got {name} "
                f"of shape {list(t.shape)} and input of shape {list(input.shape)}"
            )
    hxw = int(np.prod(input.shape[2:], dtype=np.int64))
    return native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)[0]
