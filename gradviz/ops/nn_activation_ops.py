"""More activations' forward kernels and derivative rows, with torch 2.13's nodes: softplus,
hardtanh (relu6 records it too), hardswish, hardsigmoid, mish, selu (EluBackward0/1 with scale),
celu, log_sigmoid, glu, prelu (PreluKernelBackward0) and threshold.

The in-place forms whose formula reads the input (hardtanh_, hardswish_, ...) save a copy of the
input taken before it is overwritten, as torch's codegen does (it saves ``self.clone()``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd import forward_events as _forward
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.construction import _zeros
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__ = ["forward", "forward_"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def check_float(a: Tensor, kernel: str) -> None:
    if not a.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.scalar_type_name(a.dtype)}'")


def _c(x: np.ndarray, v: float) -> Any:
    # a scalar in x's dtype, so float32 inputs compute in float32 as torch's kernels do
    return x.dtype.type(v)


# -- forward kernels (on arrays) -----------------------------------------------------------


def _softplus(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    z = x * _c(x, beta)
    # log1p(exp(z)) only where it is used: exp would overflow past the threshold
    soft = np.log1p(np.exp(np.minimum(z, _c(x, threshold)))) / _c(x, beta)
    return np.where(z > threshold, x, soft)


def _hardtanh(x: np.ndarray, min_val: float, max_val: float) -> np.ndarray:
    return np.minimum(np.maximum(x, _c(x, min_val)), _c(x, max_val))


def _hardsigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x + _c(x, 3), _c(x, 0)), _c(x, 6)) / _c(x, 6)


def _hardswish(x: np.ndarray) -> np.ndarray:
    return x * np.minimum(np.maximum(x + _c(x, 3), _c(x, 0)), _c(x, 6)) / _c(x, 6)


def _mish(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(np.logaddexp(_c(x, 0), x))  # logaddexp(0, x) = log1p(exp(x)) without overflow


def _elu(x: np.ndarray, alpha: float, scale: float, input_scale: float) -> np.ndarray:
    neg = np.expm1(np.minimum(x, _c(x, 0)) * _c(x, input_scale)) * _c(x, alpha * scale)
    return np.where(x > 0, x * _c(x, scale), neg)


def _threshold(x: np.ndarray, threshold: float, value: float) -> np.ndarray:
    return np.where(x > threshold, x, np.asarray(value).astype(x.dtype))


KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "softplus": _softplus, "hardtanh": _hardtanh, "hardsigmoid": _hardsigmoid, "hardswish": _hardswish,
    "mish": _mish, "selu": _elu, "celu": _elu, "threshold": _threshold,
}


def _elu_args(key: str, params: dict) -> tuple:
    if key == "selu":
        return (SELU_ALPHA, SELU_SCALE, 1.0)
    return (params["alpha"], 1.0, 1.0 / params["alpha"])


def _apply(key: str, x: np.ndarray, params: dict) -> np.ndarray:
    args = _elu_args(key, params) if key in ("selu", "celu") else tuple(params.values())
    return KERNELS[key](x, *args).astype(x.dtype, copy=False)


def _saved_params(key: str, params: dict) -> dict:
    if key == "selu":
        return {"alpha": SELU_ALPHA, "scale": SELU_SCALE, "input_scale": 1}
    if key == "threshold":
        return {"threshold": params["threshold"]}  # torch's node keeps no value: its gradient there is 0
    return dict(params)


def forward(key: str, input: Tensor, params: dict) -> Tensor:  # noqa: A002
    """The out-of-place op: one node saving the input and the op's parameters."""
    out = Tensor._wrap(_apply(key, input._data, params), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_NODES[key], (input,), [out], {"self": SavedVariable(input), **_saved_params(key, params)})
    return out


# in-place key -> the row it records, and whether it saves the result (else a copy of the input)
_INPLACE = {
    "softplus": None, "hardtanh": ("hardtanh", False), "hardsigmoid": ("hardsigmoid", False),
    "hardswish": ("hardswish", False), "mish": ("mish", False), "threshold": ("threshold_", False),
    "selu": ("selu_", True), "celu": ("celu_", True),
}


def forward_(key: str, input: Tensor, params: dict) -> Tensor:  # noqa: A002
    """In place, with the checks and sequence numbering of gradviz's other in-place ops."""
    from gradviz.autograd.graph import next_sequence_nr
    from gradviz.ops.inplace import _after_inplace, _check_inplace, _old_edge_holder

    row, saves_result = _INPLACE[key]
    _check_inplace(input)
    grad = _grad_state.enabled and input._tracked
    if grad:
        seq = next_sequence_nr()
        old = _old_edge_holder(input)
        if not saves_result:
            # torch's codegen clones self after making the node (so the clone's sequence number
            # is the later one); the saved copy's grad_fn is that CloneBackward0
            before = input.clone()
    input._data[...] = _apply(key, input._data, params)
    input._version_counter[0] += 1
    if _forward.engine.probe is not None:
        _forward.version_bump(input, None)
    if grad:
        saved = {"result": SavedVariable(input, True)} if saves_result else {"self": SavedVariable(before)}
        record(_NODES[row], (old,), [input], {**saved, **_saved_params(key, params)}, sequence_nr=seq)
        _after_inplace(input)
    return input


# -- backward formulas ---------------------------------------------------------------------


def _softplus_kernel(gd: np.ndarray, x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    z = x * _c(x, beta)
    e = np.exp(np.minimum(z, _c(x, threshold)))
    return np.where(z > threshold, gd, gd * e / (e + 1))


def softplus_backward(grad: Tensor, input: Tensor, beta: float, threshold: float) -> Tensor:  # noqa: A002
    """torch.ops.aten.softplus_backward: recorded (SoftplusBackwardBackward0) when a backward builds a graph."""
    out = _out(_softplus_kernel(grad._data, input._data, beta, threshold), grad)
    if _grad_state.enabled and (_requires(grad) or _requires(input)):
        saved = {"grad_output": SavedVariable(grad), "self": SavedVariable(input), "beta": beta, "threshold": threshold}
        record(_NODES["softplus_backward"], (grad, input), [out], saved)
    return out


def _softplus_grad(n: Any, g: Tensor) -> Tensor:
    if _grad_state.enabled:
        return softplus_backward(g, n["self"], n["beta"], n["threshold"])
    return _out(_softplus_kernel(g._data, n["self"]._data, n["beta"], n["threshold"]), g)


def _softplus_double_self(n: Any, gg: Tensor) -> Tensor:
    """torch's softplus_double_backward(grad * grad_output, self, beta, threshold): beta * s * (1 - s)
    with s = sigmoid(beta * self), zero past the threshold."""
    if _grad_state.enabled:
        raise NotImplementedError("gradviz: a third derivative through SoftplusBackwardBackward0 is not implemented")
    x, go, beta = n["self"]._data, n["grad_output"]._data, n["beta"]
    z = x * _c(x, beta)
    s = 1 / (1 + np.exp(-z))
    data = np.where(z > n["threshold"], 0, gg._data * go * _c(x, beta) * s * (1 - s))
    return _out(data.astype(x.dtype, copy=False), gg)


def _hardtanh_kernel(g: np.ndarray, x: np.ndarray, min_val: float, max_val: float) -> np.ndarray:
    return np.where((x <= min_val) | (x >= max_val), 0, g)


def hardtanh_backward(grad: Tensor, input: Tensor, min_val: float, max_val: float) -> Tensor:  # noqa: A002
    """torch.ops.aten.hardtanh_backward: recorded (HardtanhBackwardBackward0) when a backward builds a graph."""
    out = _out(_hardtanh_kernel(grad._data, input._data, min_val, max_val), grad)
    if _grad_state.enabled and (_requires(grad) or _requires(input)):
        saved = {"self": SavedVariable(input), "min_val": min_val, "max_val": max_val}
        record(_NODES["hardtanh_backward"], (grad, input), [out], saved)
    return out


def _hardtanh_grad(n: Any, g: Tensor) -> Tensor:
    if _grad_state.enabled:
        return hardtanh_backward(g, n["self"], n["min_val"], n["max_val"])
    return _out(_hardtanh_kernel(g._data, n["self"]._data, n["min_val"], n["max_val"]), g)


def _hardsigmoid_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    # torch's kernel multiplies by one_sixth = 1.0f / 6.0f, a float32 constant even for doubles
    return _out(np.where((x > -3) & (x < 3), g._data * _c(x, float(np.float32(1) / np.float32(6))), 0), g)


def _hardswish_grad(n: Any, g: Tensor) -> Tensor:
    x, gd = n["self"]._data, g._data
    return _out(np.where(x < -3, 0, np.where(x <= 3, gd * (x / _c(x, 3) + _c(x, 0.5)), gd)), g)


def _mish_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    sig = 1 / (1 + np.exp(-x))
    tsp = np.tanh(np.logaddexp(_c(x, 0), x))
    return _out(g._data * (tsp + x * sig * (1 - tsp * tsp)), g)


def _elu_grad(n: Any, g: Tensor) -> Tensor:
    # torch's elu_backward on the input: scale where x > 0, else input_scale * alpha * scale * exp(x * input_scale)
    x, gd = n["self"]._data, g._data
    a, s, i = n["alpha"], n["scale"], n["input_scale"]
    neg = gd * _c(x, i * a * s) * np.exp(np.minimum(x, _c(x, 0)) * _c(x, i))
    return _out(np.where(x > 0, gd * _c(x, s), neg), g)


def _elu_result_grad(n: Any, g: Tensor) -> Tensor:
    # from the result y: the negative side's derivative is input_scale * (y + alpha * scale)
    y, gd = n["result"]._data, g._data
    a, s, i = n["alpha"], n["scale"], n["input_scale"]
    return _out(np.where(y > 0, gd * _c(y, s), gd * _c(y, i) * (y + _c(y, a * s))), g)


def _celu_input_scale(alpha: float) -> float:
    # torch's formula is elu_backward(..., 1.0 / alpha.toFloat()): alpha rounded to float32 first
    return 1.0 / float(np.float32(alpha))


def _celu_grad(n: Any, g: Tensor) -> Tensor:
    x, gd = n["self"]._data, g._data
    a = n["alpha"]
    i = _celu_input_scale(a)
    return _out(np.where(x > 0, gd, gd * _c(x, i * a) * np.exp(np.minimum(x, _c(x, 0)) * _c(x, i))), g)


def _celu_result_grad(n: Any, g: Tensor) -> Tensor:
    y, gd = n["result"]._data, g._data
    a = n["alpha"]
    return _out(np.where(y > 0, gd, gd * _c(y, _celu_input_scale(a)) * (y + _c(y, a))), g)


def _threshold_grad(n: Any, g: Tensor) -> Tensor:
    if _grad_state.enabled:
        from gradviz.ops.activations import threshold_backward

        return threshold_backward(g, n["self"], n["threshold"])  # ThresholdBackwardBackward0, as torch
    return _out(np.where(n["self"]._data <= n["threshold"], 0, g._data), g)


def _log_sigmoid_grad(n: Any, g: Tensor) -> Tensor:
    # torch's log_sigmoid_backward from the saved buffer z = exp(-|x|)
    x, z = n["self"]._data, n["buffer"]._data
    neg = x < 0
    return _out(g._data * (np.where(neg, 1, 0) - np.where(neg, 1, -1) * (z / (1 + z))), g)


def _glu_halves(x: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.split(x, 2, axis=dim)
    return a, b


def _glu_grad(n: Any, g: Tensor) -> Tensor:
    x, gd = n["self"]._data, g._data
    dim = n["dim"]
    a, b = _glu_halves(x, dim)
    sig = 1 / (1 + np.exp(-b))
    return _out(np.concatenate([gd * sig, gd * a * sig * (1 - sig)], axis=dim), g)


def _prelu_grad_input(n: Any, g: Tensor) -> Tensor:
    x, w = n["self"]._data, n["weight"]._data
    return _out(np.where(x > 0, g._data, w * g._data), g)


def _prelu_grad_weight(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    return _out(np.where(x > 0, 0, x * g._data), g)  # summed to the weight's shape by the row


# -- ops with their own forward (two outputs of torch's kernel, or two inputs) ----------------


def log_sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    check_float(input, "log_sigmoid_cpu")
    x = input._data
    z = np.exp(-np.abs(x))
    out = Tensor._wrap((np.minimum(x, _c(x, 0)) - np.log1p(z)).astype(x.dtype, copy=False), input.dtype,
                       input.device)
    if _grad_state.enabled and _requires(input):
        buffer = Tensor._wrap(z.astype(x.dtype, copy=False), input.dtype, input.device)
        record(_NODES["log_sigmoid"], (input,), [out], {"self": SavedVariable(input), "buffer": SavedVariable(buffer)})
    return out


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    wrapped = dim + input.ndim if dim < 0 else dim
    if not 0 <= wrapped < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         f"but got {dim})")
    if input.shape[wrapped] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {wrapped} is size {input.shape[wrapped]}")
    check_float(input, "glu_cpu")
    a, b = _glu_halves(input._data, wrapped)
    sig = 1 / (1 + np.exp(-b))
    out = Tensor._wrap((a * sig).astype(a.dtype, copy=False), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_NODES["glu"], (input,), [out], {"self": SavedVariable(input), "dim": dim})
    return out


def prelu_kernel(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """torch._prelu_kernel: weight already has input's number of dimensions."""
    if input.dtype != weight.dtype:
        raise RuntimeError(
            "prelu: Type promoting not supported. Got "
            f"{_dtype.scalar_type_name(input.dtype)} and {_dtype.scalar_type_name(weight.dtype)}"
        )
    x, w = input._data, weight._data
    out = Tensor._wrap(np.where(x > 0, x, w * x).astype(x.dtype, copy=False), input.dtype, input.device)
    if _grad_state.enabled and (_requires(input) or _requires(weight)):
        record(_NODES["prelu"], (input, weight), [out], {"self": SavedVariable(input), "weight": SavedVariable(weight)})
    return out


_ROWS = {
    "softplus": D("SoftplusBackward0", (_softplus_grad,), forward=EW),
    "hardtanh": D("HardtanhBackward0", (_hardtanh_grad,), forward=EW),
    "hardsigmoid": D("HardsigmoidBackward0", (_hardsigmoid_grad,), forward=EW),
    "hardswish": D("HardswishBackward0", (_hardswish_grad,), forward=EW),
    "mish": D("MishBackward0", (_mish_grad,), forward=EW),
    "selu": D("EluBackward0", (_elu_grad,), forward=EW),  # torch's selu is elu with scale and alpha: its node
    "selu_": D("EluBackward1", (_elu_result_grad,), forward=EW),
    "celu": D("CeluBackward0", (_celu_grad,), forward=EW),
    "celu_": D("CeluBackward1", (_celu_result_grad,), forward=EW),
    "threshold": D("ThresholdBackward0", (_threshold_grad,), forward=EW),
    "threshold_": D("ThresholdBackward1", (_threshold_grad,), forward=EW),
    "log_sigmoid": D("LogSigmoidBackward0", (_log_sigmoid_grad,), forward=EW),
    "glu": D("GluBackward0", (_glu_grad,), forward=TR),
    "prelu": D("PreluKernelBackward0", (_prelu_grad_input, _prelu_grad_weight), reduce_broadcast=True, forward=TR),
}
_ROWS["hardtanh_backward"] = D("HardtanhBackwardBackward0", (
    lambda n, g: hardtanh_backward(g, n["self"], n["min_val"], n["max_val"]),
    _zeros,
), forward=EW)
_ROWS["softplus_backward"] = D("SoftplusBackwardBackward0", (
    lambda n, g: softplus_backward(g, n["self"], n["beta"], n["threshold"]),
    _softplus_double_self,
), forward=EW)
# rows whose formulas build a graph under create_graph=True (the others refuse there)
_GRAPH = {"hardtanh", "hardtanh_backward", "threshold", "threshold_", "softplus", "softplus_backward"}
_NODES = {key: _register(key, row, key in _GRAPH) for key, row in _ROWS.items()}
