"""torch.channel_shuffle: the channels cut into ``groups`` groups and interleaved,
``(N, g, C/g, ...) -> (N, C/g, g, ...)``, as one node, ChannelShuffleBackward0, whose gradient is
the inverse shuffle (C/g groups), itself recorded. native_channel_shuffle has no derivative in
torch (a NotImplemented node)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import functions as F
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.tensor import Tensor

__all__ = ["channel_shuffle", "native_channel_shuffle"]


def _shuffled(x: np.ndarray, groups: int) -> np.ndarray:
    n, c = x.shape[0], x.shape[1]
    rest = x.shape[2:]
    return np.ascontiguousarray(x.reshape(n, groups, c // groups, *rest).swapaxes(1, 2)).reshape(x.shape)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002 - torch's parameter name
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    out = Tensor._wrap(_shuffled(input._data, groups), input.dtype, input.device)
    if _grad_state.enabled and _requires(input):
        record(_NODE, (input,), [out], {"groups": groups, "channels": c})
    return out


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """The same values; torch has no derivative for it: a NotImplemented node whose backward says so."""
    with no_grad():
        out = channel_shuffle(input, groups)
    if _grad_state.enabled and _requires(input):
        record(F.NODES["not_implemented"], (input,), [out], {"op": "native_channel_shuffle"})
    return out


def _grad(n: Any, g: Tensor) -> Tensor:
    return channel_shuffle(g, n["channels"] // n["groups"])


_NODE = _register("channel_shuffle", D("ChannelShuffleBackward0", (_grad,)), graph=True)
