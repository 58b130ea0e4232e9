"""Two fused nn ops with their own nodes (channel_shuffle is ops/channel_shuffle.py's): pdist
(PdistBackward0) and rrelu_with_noise (RreluWithNoiseBackward0, its random slopes drawn as
torch's CPU kernel draws them: one double per non-positive element, in order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.inplace_write import InplaceWrite
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.random import _dists
from gradviz.random._generator import resolve
from gradviz.tensor import Tensor

__all__: list[str] = []



# -- pdist ---------------------------------------------------------------------------------------


def _pair_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, 1)


def _pnorm(diff: np.ndarray, p: float) -> np.ndarray:
    a = np.abs(diff)
    if p == 0:
        return (a != 0).sum(axis=-1).astype(diff.dtype)
    if p == np.inf:
        return a.max(axis=-1, initial=0.0)
    if p == 1:
        return a.sum(axis=-1)
    if p == 2:
        return np.sqrt((a * a).sum(axis=-1))
    return (a ** p).sum(axis=-1) ** (1.0 / p)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance of every pair of rows i < j, in row-major order of the pairs."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    x = input._data
    i, j = _pair_indices(x.shape[0])
    d = _pnorm(x[i] - x[j], p).astype(x.dtype, copy=False)
    out = _out(np.ascontiguousarray(d), input)
    if _grad_state.enabled and _requires(input):
        record(_PDIST, (input,), [out], {"self": SavedVariable(input), "p": float(p),
                                         "result": SavedVariable(out, True)})
    return out


def _pdist_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    p, dist = n.saved["p"], n["result"]._data
    i, j = _pair_indices(x.shape[0])
    diff = x[i] - x[j]
    gd = g._data[:, None]
    dd = dist[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            part = np.zeros_like(diff)
        elif p == 1:
            part = np.sign(diff)
        elif p == 2:
            part = np.where(dd == 0, 0.0, diff / dd)
        elif p == np.inf:
            part = np.sign(diff) * (np.abs(diff) == dd)
        elif p < 2:
            part = np.where((dd == 0) | (diff == 0), 0.0, np.sign(diff) * np.abs(diff) ** (p - 1) / dd ** (p - 1))
        else:
            part = np.where(dd == 0, 0.0, diff * np.abs(diff) ** (p - 2) / dd ** (p - 1))
    part = part * gd
    dx = np.zeros_like(x)
    np.add.at(dx, i, part)
    np.add.at(dx, j, -part)
    return _out(dx.astype(x.dtype, copy=False), g)


_PDIST = _register("_pdist_forward", D("PdistBackward0", (_pdist_grad,)))


# -- rrelu ---------------------------------------------------------------------------------------


def _rrelu_data(x: np.ndarray, lower: float, upper: float, training: bool,
                generator: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """(result, noise): the noise (the slope of each element, 1 where positive) in training."""
    if training:
        flat = np.ascontiguousarray(x).reshape(-1)
        neg = flat <= 0
        noise = np.ones(flat.shape, dtype=x.dtype)
        # a double per non-positive element, one after the other (uniform_real_distribution<double>)
        draws = _dists.uniform(resolve(generator), int(neg.sum()), np.dtype(np.float64), lower, upper)
        noise[neg] = draws.astype(x.dtype)
        noise = noise.reshape(x.shape)
        return (x * noise).astype(x.dtype, copy=False), noise
    slope = x.dtype.type((lower + upper) / 2)
    return np.where(x >= 0, x, x * slope).astype(x.dtype, copy=False), None


def rrelu_with_noise(input: Tensor, lower: float, upper: float, training: bool, generator: Any = None) -> Tensor:
    """In training, x * a with a ~ U(lower, upper) drawn for each x <= 0 (1 elsewhere); else
    leaky_relu with slope (lower + upper) / 2. One node either way, as torch's."""
    y, noise = _rrelu_data(input._data, lower, upper, training, generator)
    out = _out(y, input)
    if _grad_state.enabled and _requires(input):
        record(_RRELU, (input,), [out], {"self": SavedVariable(input), "noise": noise, "lower": lower,
                                         "upper": upper, "training": training})
    return out


def _rrelu_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    x = n["self"]._data
    if s["training"] and s["upper"] - s["lower"] > 1e-6:
        return _out((g._data * s["noise"]).astype(x.dtype, copy=False), g)
    slope = x.dtype.type((s["lower"] + s["upper"]) / 2)
    return _out(np.where(x > 0, g._data, g._data * slope).astype(x.dtype, copy=False), g)


_RRELU = _register("rrelu_with_noise", D("RreluWithNoiseBackward0", (_rrelu_grad,)))


def rrelu_with_noise_(a: Tensor, lower: float, upper: float, training: bool, generator: Any = None) -> Tensor:
    """rrelu in place: a's history becomes RreluWithNoiseBackward1, which saves the result (the
    input is overwritten) and reads its sign where the slope is not drawn."""
    w = InplaceWrite(a)
    y, noise = _rrelu_data(a._data, lower, upper, training, generator)
    a._data[...] = y
    return w.done(_RRELU_INPLACE, (), lambda: {"result": SavedVariable(a, True), "noise": noise, "lower": lower,
                                               "upper": upper, "training": training}, op="rrelu_")


def _rrelu_inplace_grad(n: Any, g: Tensor) -> Tensor:
    s = n.saved
    r = n["result"]._data
    if s["training"] and s["upper"] - s["lower"] > 1e-6:
        return _out((g._data * s["noise"]).astype(r.dtype, copy=False), g)
    slope = r.dtype.type((s["lower"] + s["upper"]) / 2)
    return _out(np.where(r > 0, g._data, g._data * slope).astype(r.dtype, copy=False), g)


_RRELU_INPLACE = _register("rrelu_with_noise_", D("RreluWithNoiseBackward1", (_rrelu_inplace_grad,)))
