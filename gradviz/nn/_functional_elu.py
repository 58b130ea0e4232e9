"""F.elu and F.elu_ (EluBackward0 saving the input; the in-place form EluBackward1, saving the result)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd import forward_events as _forward
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.tensor import Tensor

__all__ = ["elu", "elu_"]


def _check_float(a: Tensor) -> None:
    if not a.dtype.is_floating_point:
        raise NotImplementedError(f'"elu_cpu" not implemented for \'{_dtype.scalar_type_name(a.dtype)}\'')


def _elu_data(x: np.ndarray, alpha: float) -> np.ndarray:
    # torch's kernel: x for x > 0, else expm1(x) * alpha, in the input's dtype
    return np.where(x > 0, x, np.expm1(x) * x.dtype.type(alpha)).astype(x.dtype, copy=False)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    if inplace:
        return elu_(input, alpha)
    _check_float(input)
    x = input._data
    out = Tensor._wrap(_elu_data(x, alpha), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_ELU, (input,), [out], {"self": SavedVariable(input), "alpha": alpha})
    return out


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """In place, with the checks and sequence numbering of gradviz's other in-place ops."""
    from gradviz.autograd.graph import next_sequence_nr
    from gradviz.ops.inplace import _after_inplace, _check_inplace, _old_edge_holder

    _check_float(input)
    _check_inplace(input)
    grad = _grad_state.enabled and input._tracked
    if grad:
        seq = next_sequence_nr()
        old = _old_edge_holder(input)
    input._data[...] = _elu_data(input._data, alpha)
    input._version_counter[0] += 1
    if _forward.engine.probe is not None:
        _forward.version_bump(input, None)
    if grad:
        record(_ELU_INPLACE, (old,), [input], {"result": SavedVariable(input, True), "alpha": alpha},
               sequence_nr=seq)
        _after_inplace(input)
    return input


def _elu_grad(n: Any, g: Tensor) -> Tensor:
    x = n["self"]._data
    gd = g._data
    a = x.dtype.type(n["alpha"])
    return Tensor._wrap(np.where(x > 0, gd, gd * a * np.exp(x)).astype(gd.dtype, copy=False), g.dtype, g.device)


def _elu_result_grad(n: Any, g: Tensor) -> Tensor:
    # from the result y: alpha * exp(x) = y + alpha where x <= 0 (y <= 0 there)
    y = n["result"]._data
    gd = g._data
    a = y.dtype.type(n["alpha"])
    return Tensor._wrap(np.where(y > 0, gd, gd * (y + a)).astype(gd.dtype, copy=False), g.dtype, g.device)


_ELU = _register("elu", D("EluBackward0", (_elu_grad,), forward=EW))
_ELU_INPLACE = _register("elu_", D("EluBackward1", (_elu_result_grad,), forward=EW))
