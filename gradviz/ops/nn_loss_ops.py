"""torch's fused loss kernels with their own nodes: smooth_l1_loss (SmoothL1LossBackward0),
huber_loss (HuberLossBackward0), binary_cross_entropy (BinaryCrossEntropyBackward0) and
binary_cross_entropy_with_logits (BinaryCrossEntropyWithLogitsBackward0). Each node has an
edge for the input and one for the target; the weights are not differentiated."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops._common import _as_array
from gradviz.ops.core import AUTO_REDUCTION as RED
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor


def _reduce(data: np.ndarray, red: int) -> np.ndarray:
    if red == 0:
        return data
    s = np.add.reduce(data, axis=None, dtype=data.dtype)
    return _as_array(s / data.dtype.type(data.size) if red == 1 else s, data.dtype)


def _scale(g: np.ndarray, n: int, red: int) -> Any:
    return g / n if red == 1 else g


def _record(cls: type, input: Tensor, target: Tensor, out: Tensor, saved: dict) -> Tensor:
    if _grad_state.enabled and (_requires(input) or _requires(target)):
        saved["self"] = SavedVariable(input)
        saved["target"] = SavedVariable(target)
        record(cls, (input, target), [out], saved)
    return out


# -- smooth_l1 / huber -----------------------------------------------------------------------------


def smooth_l1_loss(input: Tensor, target: Tensor, red: int, beta: float) -> Tensor:
    d = input._data - target._data
    a = np.abs(d)
    if beta == 0.0:
        data = a
    else:
        data = np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta).astype(d.dtype, copy=False)
    out = _out(_reduce(data, red), input)
    return _record(_SMOOTH_L1, input, target, out, {"reduction": red, "beta": beta})


def _smooth_l1_grad(n: Any, g: Tensor, sign: float) -> Tensor:
    x, t = n["self"]._data, n["target"]._data
    d = x - t
    beta = n["beta"]
    if beta == 0.0:
        local = np.sign(d)
    else:
        local = np.where(np.abs(d) < beta, d / beta, np.sign(d))
    gd = _scale(g._data, d.size, n["reduction"])
    return _out((sign * local * gd).astype(x.dtype, copy=False), g)


_SMOOTH_L1 = _register("smooth_l1_loss", D("SmoothL1LossBackward0", (
    lambda n, g: _smooth_l1_grad(n, g, 1.0), lambda n, g: _smooth_l1_grad(n, g, -1.0),
), forward=RED))


def huber_loss(input: Tensor, target: Tensor, red: int, delta: float) -> Tensor:
    d = input._data - target._data
    a = np.abs(d)
    data = np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)).astype(d.dtype, copy=False)
    out = _out(_reduce(data, red), input)
    return _record(_HUBER, input, target, out, {"reduction": red, "delta": delta})


def _huber_grad(n: Any, g: Tensor, sign: float) -> Tensor:
    x, t = n["self"]._data, n["target"]._data
    d = x - t
    delta = n["delta"]
    local = np.where(d < -delta, -delta, np.where(d > delta, delta, d))
    gd = _scale(g._data, d.size, n["reduction"])
    return _out((sign * local * gd).astype(x.dtype, copy=False), g)


_HUBER = _register("huber_loss", D("HuberLossBackward0", (
    lambda n, g: _huber_grad(n, g, 1.0), lambda n, g: _huber_grad(n, g, -1.0),
), forward=RED))


# -- binary cross entropy ----------------------------------------------------------------------


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None, red: int) -> Tensor:
    x, t = input._data, target._data
    if x.size and ((x < 0).any() or (x > 1).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        log_x = np.maximum(np.log(x), -100)
        log_1mx = np.maximum(np.log1p(-x), -100)
    data = -((t * log_x) + (1 - t) * log_1mx)
    if weight is not None:
        data = data * weight._data
    out = _out(_reduce(data.astype(x.dtype, copy=False), red), input)
    w = None if weight is None else weight.detach()
    return _record(_BCE, input, target, out, {"reduction": red, "weight": w})


def _bce_self(n: Any, g: Tensor) -> Tensor:
    x, t = n["self"]._data, n["target"]._data
    local = (x - t) / np.maximum((1 - x) * x, 1e-12)
    if n["weight"] is not None:
        local = local * n["weight"]._data
    return _out((local * _scale(g._data, x.size, n["reduction"])).astype(x.dtype, copy=False), g)


def _bce_target(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    local = (np.log1p(-x) - np.log(x))
    if n["weight"] is not None:
        local = local * n["weight"]._data
    return _out((local * _scale(g._data, x.size, n["reduction"])).astype(x.dtype, copy=False), g)


_BCE = _register("binary_cross_entropy", D("BinaryCrossEntropyBackward0", (_bce_self, _bce_target), forward=RED))


def _softplus_neg(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(-x)), without overflow."""
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None,
                                     pos_weight: Tensor | None, red: int) -> Tensor:
    x, t = input._data, target._data
    if pos_weight is not None:
        lw = 1 + (pos_weight._data - 1) * t
        data = (1 - t) * x + lw * _softplus_neg(x)
    else:
        data = (1 - t) * x + _softplus_neg(x)
    if weight is not None:
        data = data * weight._data
    out = _out(_reduce(data.astype(x.dtype, copy=False), red), input)
    saved = {"reduction": red, "weight": None if weight is None else weight.detach(),
             "pos_weight": None if pos_weight is None else pos_weight.detach()}
    return _record(_BCE_LOGITS, input, target, out, saved)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _bcel_self(n: Any, g: Tensor) -> Tensor:
    x, t = n["self"]._data, n["target"]._data
    pw = n["pos_weight"]
    if pw is not None:
        pt = pw._data * t
        local = (pt + 1 - t) * _sigmoid(x) - pt
    else:
        local = _sigmoid(x) - t
    if n["weight"] is not None:
        local = local * n["weight"]._data
    return _out((local * _scale(g._data, x.size, n["reduction"])).astype(x.dtype, copy=False), g)


def _bcel_target(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    pw = n["pos_weight"]
    local = -x if pw is None else -x + (pw._data - 1) * _softplus_neg(x)
    if n["weight"] is not None:
        local = local * n["weight"]._data
    return _out((local * _scale(g._data, x.size, n["reduction"])).astype(x.dtype, copy=False), g)


_BCE_LOGITS = _register("binary_cross_entropy_with_logits", D(
    "BinaryCrossEntropyWithLogitsBackward0", (_bcel_self, _bcel_target), forward=RED,
))
