"""More of torch.nn.functional's activations (kernels and rows in gradviz/ops/nn_activation_ops.py).

Composites are written as torch 2.13's Python writes them, so they record the same nodes:
softsign is ``input / (input.abs() + 1)`` (DivBackward0, AddBackward0, AbsBackward0), tanhshrink
``input - input.tanh()``, softmin ``(-input).softmax(dim)``; relu6 is hardtanh(0, 6)."""

from __future__ import annotations

from typing import Any

from gradviz.ops import nn_activation_ops as _ops
from gradviz.tensor import Tensor

__all__ = [
    "celu", "celu_", "glu", "hardsigmoid", "hardswish", "hardtanh", "hardtanh_", "logsigmoid", "mish", "prelu",
    "relu6", "selu", "selu_", "softmin", "softplus", "softsign", "tanhshrink", "threshold", "threshold_",
]


def _run(key: str, input: Tensor, params: dict, inplace: bool, kernel: str | None) -> Tensor:  # noqa: A002
    if kernel is not None:
        _ops.check_float(input, kernel)
    return (_ops.forward_ if inplace else _ops.forward)(key, input, params)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    return _run("softplus", input, {"beta": beta, "threshold": threshold}, False, "softplus_cpu")


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run("hardtanh", input, {"min_val": min_val, "max_val": max_val}, inplace, None)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    # torch's relu6 kernel is hardtanh(0, 6): its node is HardtanhBackward0 (min_val 0, max_val 6)
    return _run("hardtanh", input, {"min_val": 0, "max_val": 6}, inplace, None)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _run("hardswish", input, {}, inplace, "hardswish_cpu")


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _run("hardsigmoid", input, {}, inplace, "hardsigmoid_cpu")


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _run("mish", input, {}, inplace, "mish_cpu")


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _run("selu", input, {}, inplace, "elu_cpu")


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _run("celu", input, {"alpha": alpha}, inplace, "elu_cpu")


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return celu(input, alpha, inplace=True)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    return _run("threshold", input, {"threshold": threshold, "value": value}, inplace, None)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _run("threshold", input, {"threshold": threshold, "value": value}, True, None)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    return input - input.tanh()


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return _ops.log_sigmoid(input)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    from gradviz.nn.functional import _implicit_dim

    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    return (-input).softmax(dim) if dtype is None else (-input).softmax(dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    return _ops.glu(input, dim)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """torch.prelu: a weight of one value or one per channel (dim 1), reshaped (ViewBackward0)
    to input's number of dimensions before torch._prelu_kernel."""
    ndim = input.ndim
    num = weight.numel()
    if num != 1:
        channels = input.shape[1] if ndim > 1 else 1
        if channels != num:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{num} and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if ndim != weight.ndim:
        shape = [1] * ndim
        if ndim > 1:
            shape[1] = num
        weight = weight.reshape(shape)
    return _ops.prelu_kernel(input, weight)
