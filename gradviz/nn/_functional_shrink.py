"""hardshrink and softshrink with torch's own nodes (HardshrinkBackward0, SoftshrinkBackward0):
the gradient passes where |input| > lambd. Under create_graph the formula is composed of ops
(masked_fill), not torch's hardshrink_backward node."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import functions as F
from gradviz.ops.core import AUTO_ELEMENT_WISE, Derivative, node_class, record, save
from gradviz.tensor import Tensor

__all__ = ["hardshrink", "softshrink"]


def _shrink(kind: str, input: Tensor, lambd: float) -> Tensor:  # noqa: A002
    x = input._data
    keep = np.abs(x) > lambd
    if kind == "hard":
        data = np.where(keep, x, 0)
    else:
        data = np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0))
    out = Tensor._wrap(np.asarray(data, dtype=x.dtype), input.dtype, input.device)
    if _grad_state.enabled and input._tracked:
        record(_NODES[kind], (input,), [out], {"self": save(input), "lambd": lambd})
    return out


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    return _shrink("hard", input, lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _shrink("soft", input, lambd)


def _grad(n: Any, g: Tensor) -> Tensor:
    return F.masked_fill(g, F.le(F.abs(n["self"]), n["lambd"]), 0)


_NODES = {
    "hard": node_class(Derivative("HardshrinkBackward0", (_grad,), forward=AUTO_ELEMENT_WISE)),
    "soft": node_class(Derivative("SoftshrinkBackward0", (_grad,), forward=AUTO_ELEMENT_WISE)),
}
