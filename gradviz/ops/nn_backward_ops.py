"""Backward kernels as recorded ops, for create_graph=True (gradient penalties through pooling
layers and GELU networks, Hessian-vector products): under a graph-building backward, torch's
max_pool2d_with_indices_backward, avg_pool2d_backward, _adaptive_avg_pool2d_backward and
gelu_backward each become a node over (grad_output, self) with torch's derivatives:

- the pools' backward is linear in the gradient and constant in self: d/d grad_output is the
  pooling itself (a gather at the saved indices for max pooling), d/d self is zeros;
- gelu_backward is grad * gelu'(self): d/d grad_output is gelu_backward again, d/d self is
  grad * grad_output * gelu''(self) (torch's gelu_double_backward, both approximations).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops import functions as F
from gradviz.ops import nn_conv_ops as C
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _gelu_backward_data, _out, _register, _requires
from gradviz.tensor import Tensor


def _as_op(row: type, grad: Tensor, self_: Tensor, out: Tensor, saved: dict) -> Tensor:
    if _grad_state.enabled and (_requires(grad) or _requires(self_)):
        record(row, (grad, self_), [out], saved)
    return out


def _zeros_of_self(n: Any, gg: Tensor) -> Tensor:
    return F.zeros(n.saved["_self_shape"], dtype=gg.dtype, device=gg.device)


# -- max pooling --------------------------------------------------------------------------------


def max_pool2d_backward(n: Any, g: Tensor, arrays: Any) -> Tensor:
    """A MaxPool2DWithIndicesBackward0's gradient as torch's recorded op."""
    self_ = n["self"]
    return _as_op(_MAXPOOL_BWD, g, self_, arrays(n, g), {"indices": n["result1"], "_self_shape": tuple(self_.shape)})


def _max_pool_double(n: Any, gg: Tensor) -> Tensor:
    """torch's max_pool_double_backward: the gradient's value at each window's maximum."""
    ind = n["indices"]
    return F.view(F.gather(F.flatten(gg, -2), -1, F.flatten(ind, -2)), tuple(ind.shape))


_MAXPOOL_BWD = _register("max_pool2d_with_indices_backward", D(
    "MaxPool2DWithIndicesBackwardBackward0", (_max_pool_double, _zeros_of_self), forward=TR), graph=True)


# -- average pooling ------------------------------------------------------------------------------

_AVG_KEYS = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")


def avg_pool2d_backward(n: Any, g: Tensor, arrays: Any) -> Tensor:
    self_ = n["self"]
    saved = {k: n.saved[k] for k in _AVG_KEYS}
    return _as_op(_AVGPOOL_BWD, g, self_, arrays(n, g), {**saved, "_self_shape": tuple(self_.shape)})


_AVGPOOL_BWD = _register("avg_pool2d_backward", D("AvgPool2DBackwardBackward0", (
    lambda n, gg: C.avg_pool2d(gg, *(n.saved[k] for k in _AVG_KEYS)),
    _zeros_of_self,
), forward=TR), graph=True)


def adaptive_avg_pool2d_backward(n: Any, g: Tensor, arrays: Any) -> Tensor:
    self_ = n["self"]
    oh, ow = g.shape[-2], g.shape[-1]
    return _as_op(_ADAPTIVE_BWD, g, self_, arrays(n, g), {
        "grad_output_sym_argsize_minus_2": oh, "grad_output_sym_argsize_minus_1": ow,
        "_self_shape": tuple(self_.shape),
    })


_ADAPTIVE_BWD = _register("adaptive_avg_pool2d_backward", D("AdaptiveAvgPool2DBackwardBackward0", (
    lambda n, gg: C.adaptive_avg_pool2d(gg, (n.saved["grad_output_sym_argsize_minus_2"],
                                             n.saved["grad_output_sym_argsize_minus_1"])),
    _zeros_of_self,
), forward=TR), graph=True)


# -- gelu ---------------------------------------------------------------------------------------


def gelu_backward(grad: Tensor, self_: Tensor, approximate: str) -> Tensor:
    """grad * gelu'(self), torch's gelu_backward, a GeluBackwardBackward0 node under create_graph."""
    out = _out(_gelu_backward_data(grad._data, self_._data, approximate), grad)
    return _as_op(_GELU_BWD, grad, self_, out, {
        "grad_output": SavedVariable(grad), "self": SavedVariable(self_), "approximate": approximate,
    })


def _gelu_second(x: np.ndarray, approximate: str) -> np.ndarray:
    """gelu''(x), as torch's gelu_double_backward computes it."""
    if approximate == "tanh":
        beta, kappa = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5, 0.044715
        inner = beta * (x + kappa * x**3)
        t = np.tanh(inner)
        sech = 1 / np.cosh(inner)
        f = 0.5 * x
        g = 1 - t * t
        h = beta * (1 + 3 * kappa * x * x)
        f_prime_gh = 0.5 * g * h
        g_prime_fh = f * h * ((2 * sech) * (-sech * t) * h)
        h_prime_fg = f * g * (6 * kappa * x * beta)
        return f_prime_gh + f_prime_gh + g_prime_fh + h_prime_fg
    pdf = (2.0 / math.sqrt(math.pi)) * math.sqrt(0.5) * 0.5 * np.exp(-0.5 * x * x)
    return 2 * pdf - x * x * pdf


def _gelu_double_self(n: Any, gg: Tensor) -> Tensor:
    if _grad_state.enabled:
        raise NotImplementedError("gradviz: a third derivative through GeluBackwardBackward0 is not implemented")
    x, go = n["self"]._data, n["grad_output"]._data
    return _out((gg._data * go * _gelu_second(x, n.saved["approximate"])).astype(x.dtype, copy=False), gg)


_GELU_BWD = _register("gelu_backward", D("GeluBackwardBackward0", (
    lambda n, gg: gelu_backward(gg, n["self"], n.saved["approximate"]),
    _gelu_double_self,
), forward=EW), graph=True)
