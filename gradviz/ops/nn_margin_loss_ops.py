"""multi_margin_loss and multilabel_margin_loss with their fused nodes, MultiMarginLossBackward0
and MultilabelMarginLossBackward0, as torch's CPU kernels compute them."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduce(per_sample: np.ndarray, reduction: str, dtype: Any) -> np.ndarray:
    if reduction == "none":
        return per_sample.astype(dtype, copy=False)
    total = per_sample.sum(dtype=dtype)
    if reduction == "mean":
        total = total / max(per_sample.size, 1) if per_sample.size else np.array(np.nan, dtype=dtype)
    return np.asarray(total, dtype=dtype)


def _as_2d(x: np.ndarray) -> np.ndarray:
    return x.reshape(1, -1) if x.ndim <= 1 else x


def multi_margin_loss(input: Tensor, target: Tensor, p: int, margin: float, weight: Tensor | None,
                      reduction: str) -> Tensor:
    """sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]), over the classes."""
    x = _as_2d(input._data)
    n, c = x.shape
    y = target._data.reshape(-1).astype(np.int64)
    if y.shape[0] != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got {list(target.shape)}")
    if y.size and (y.min() < 0 or y.max() >= c):
        raise IndexError("target out of range")
    xy = x[np.arange(n), y][:, None]
    z = np.maximum(margin - xy + x, 0)
    z[np.arange(n), y] = 0
    h = z ** p if p == 2 else z
    if weight is not None:
        h = h * weight._data[y][:, None]
    per = h.sum(axis=1) / c
    data = _reduce(per if input._data.ndim > 1 or reduction != "none" else per.reshape(()), reduction, x.dtype)
    out = _out(np.asarray(data, dtype=x.dtype), input)
    if _grad_state.enabled and _requires(input):
        record(_MULTI_MARGIN, (input,), [out], {
            "self": SavedVariable(input), "y": y, "p": p, "margin": margin, "reduction": reduction,
            "w": None if weight is None else weight._data})
    return out


def _multi_margin_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    x_t = n["self"]
    x = _as_2d(x_t._data)
    rows, c = x.shape
    y = s["y"]
    xy = x[np.arange(rows), y][:, None]
    z = margin_terms = s["margin"] - xy + x
    active = (z > 0)
    active[np.arange(rows), y] = False
    d = np.where(active, 2 * margin_terms if s["p"] == 2 else 1.0, 0.0)
    if s["w"] is not None:
        d = d * s["w"][y][:, None]
    d = d / c
    dx = d.copy()
    dx[np.arange(rows), y] = -d.sum(axis=1)
    gd = g._data
    if s["reduction"] == "none":
        dx = dx * gd.reshape(-1, 1)
    else:
        scale = gd / rows if s["reduction"] == "mean" else gd
        dx = dx * scale
    return _out(dx.reshape(x_t.shape).astype(x.dtype, copy=False), g)


_MULTI_MARGIN = _register("multi_margin_loss", D("MultiMarginLossBackward0", (_multi_margin_grad,)))


def multilabel_margin_loss(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """For each sample, the targets up to the first -1; the sum over target j and non-target i of
    max(0, 1 - (x[j] - x[i])), over the classes."""
    x = _as_2d(input._data)
    n, c = x.shape
    t = _as_2d(target._data).astype(np.int64)
    if t.shape != x.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    is_target = np.zeros((n, c), dtype=bool)
    targets = []
    for r in range(n):
        row = []
        for v in t[r]:
            if v < 0:
                break
            if v >= c:
                raise RuntimeError(f"target out of range: {v}")
            row.append(int(v))
        targets.append(row)
        is_target[r, row] = True
    per = np.zeros(n, dtype=x.dtype)
    for r in range(n):
        for j in targets[r]:
            z = 1 - (x[r, j] - x[r])
            per[r] += np.maximum(z[~is_target[r]], 0).sum()
    per = per / c
    data = _reduce(per if input._data.ndim > 1 or reduction != "none" else per.reshape(()), reduction, x.dtype)
    out = _out(np.asarray(data, dtype=x.dtype), input)
    if _grad_state.enabled and _requires(input):
        record(_MULTILABEL, (input,), [out], {"self": SavedVariable(input), "targets": targets,
                                              "is_target": is_target, "reduction": reduction})
    return out


def _multilabel_grad(n: Any, g: Tensor) -> Tensor:
    x_t = n["self"]
    x = _as_2d(x_t._data)
    rows, c = x.shape
    dx = np.zeros_like(x)
    for r in range(rows):
        others = ~n.saved["is_target"][r]
        for j in n.saved["targets"][r]:
            active = ((1 - (x[r, j] - x[r])) > 0) & others
            dx[r, active] += 1.0 / c
            dx[r, j] -= active.sum() / c
    gd = g._data
    red = n.saved["reduction"]
    if red == "none":
        dx = dx * gd.reshape(-1, 1)
    else:
        dx = dx * (gd / rows if red == "mean" else gd)
    return _out(dx.reshape(x_t.shape).astype(x.dtype, copy=False), g)


_MULTILABEL = _register("multilabel_margin_loss", D("MultilabelMarginLossBackward0", (_multilabel_grad,)))
