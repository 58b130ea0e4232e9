"""torch.fill: a new tensor of the input's shape and dtype holding one value (a number, or a 0-d
tensor whose value it is). FillBackward0 (a number) gives the input a zero gradient;
FillBackward1 (a tensor) also gives the value the sum of the incoming gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops.construction import zeros_for
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.tensor import Tensor

__all__ = ["fill"]


def fill(input: Tensor, value: Any) -> Tensor:  # noqa: A002 - torch's parameter name
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        number = value.item()
    else:
        number = value
    data = np.full(input._data.shape, number, dtype=np.float64 if input.dtype.is_floating_point else None)
    out = Tensor._wrap(data.astype(input.dtype.np, copy=False), input.dtype, input.device)
    if _grad_state.enabled:
        if isinstance(value, Tensor) and (_requires(input) or _requires(value)):
            record(_FILL_TENSOR, (input, value), [out], {})
        elif not isinstance(value, Tensor) and _requires(input):
            record(_FILL, (input,), [out], {})
    return out


def _zeros(n: Any, g: Tensor) -> Tensor:
    return zeros_for(tuple(g.shape), g.dtype, g.device)


# keys of their own: "fill" and "fill_tensor" are fill_'s rows (ops/inplace.py)
_FILL = _register("fill_out_of_place", D("FillBackward0", (_zeros,)), graph=True)
_FILL_TENSOR = _register("fill_tensor_out_of_place", D("FillBackward1", (_zeros, lambda n, g: g.sum())), graph=True)
