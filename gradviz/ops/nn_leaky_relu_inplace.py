"""In-place leaky_relu (nn.LeakyReLU(inplace=True), F.leaky_relu_) with torch's node,
LeakyReluBackward1: it saves the result, not the overwritten input, so its backward tests the
result's sign (the same test for a non-negative slope), and refuses a negative slope as torch does."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd import forward_events as _forward
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.saved_variable import SavedVariable
from gradviz.ops.core import AUTO_ELEMENT_WISE as EW
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register
from gradviz.tensor import Tensor

_NEGATIVE_SLOPE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is "
    "caused by calling in-place forward function with a negative slope, please call out-of-place version instead. "
    "File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward "
    "calculation with negative slope"
)


def leaky_relu_(a: Tensor, negative_slope: float = 0.01) -> Tensor:
    """a's history becomes LeakyReluBackward1 over its old one, with the checks and numbering of
    gradviz's other in-place ops (as relu_ in nn_ops)."""
    from gradviz.autograd.graph import next_sequence_nr
    from gradviz.ops.inplace import _after_inplace, _check_inplace, _old_edge_holder

    _check_inplace(a)
    grad = _grad_state.enabled and a._tracked
    if grad:
        seq = next_sequence_nr()
        old = _old_edge_holder(a)
    x = a._data
    np.copyto(x, x * x.dtype.type(negative_slope), where=~(x > 0))
    a._version_counter[0] += 1
    if _forward.engine.probe is not None:
        _forward.version_bump(a, None)
    if grad:
        record(_LEAKY_INPLACE, (old,), [a], {"result": SavedVariable(a, True), "negative_slope": negative_slope},
               sequence_nr=seq)
        _after_inplace(a)
    return a


def _grad(n: Any, g: Tensor) -> Tensor:
    from gradviz.autograd.grad_mode import _state as _grad_state
    from gradviz.ops.nn_ops import leaky_relu_backward

    slope = n["negative_slope"]
    if slope < 0:
        raise RuntimeError(_NEGATIVE_SLOPE)
    if _grad_state.enabled:  # create_graph: torch's leaky_relu_backward(grad, result, ...) node
        return leaky_relu_backward(g, n["result"], slope)
    return _out(np.where(n["result"]._data > 0, g._data, g._data * slope), g)


_LEAKY_INPLACE = _register("leaky_relu_", D("LeakyReluBackward1", (_grad,), forward=EW), graph=True)
