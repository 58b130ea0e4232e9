"""torch.native_dropout(input, p, train) -> (output, mask): the mask drawn as torch's CPU kernel
draws it (bernoulli(1 - p) on the default generator, the same stream as dropout's), output =
input * mask / (1 - p) (a copy of the input when not training, the mask all True), one node,
NativeDropoutBackward0, whose gradient is grad * mask * scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.ops.construction import empty
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.tensor import Tensor

__all__ = ["native_dropout"]


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:  # noqa: A002
    # no check of p of its own: torch's kernel leaves it to bernoulli_(1 - p)
    if train is None or train:
        with no_grad():
            draw = empty(*input.shape, dtype=input.dtype).bernoulli_(1 - p)
        keep = draw._data != 0
        scale = 1.0 / (1.0 - p) if p < 1 else 0.0
        data = (input._data * keep.astype(input._data.dtype) * np.asarray(scale, dtype=input._data.dtype))
    else:
        keep = np.ones(input._data.shape, dtype=bool)
        scale = 1.0
        data = input._data.copy()
    out = Tensor._wrap(np.asarray(data, dtype=input._data.dtype), input.dtype, input.device)
    mask = Tensor._wrap(keep, _dtype.bool_, input.device)
    if _grad_state.enabled and _requires(input):
        record(_NODE, (input,), [out], {"mask": keep, "scale": scale})
    return out, mask


def _grad(n: Any, g: Tensor) -> Tensor:
    return g * Tensor._wrap(n["mask"].astype(g._data.dtype) * n["scale"], g.dtype, g.device)


_NODE = _register("native_dropout", D("NativeDropoutBackward0", (_grad,)), graph=True)
