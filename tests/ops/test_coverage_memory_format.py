"""torch.memory_format, its values, and contiguous/clone/is_contiguous taking one, against torch
2.13: strides, values, CloneBackward0, gradients, errors, reprs (coverage2, issue 34)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _x(T: Any, shape: tuple = (2, 3, 4, 5)) -> Any:
    return T.tensor(np.sin(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape), requires_grad=True)


def _describe(T: Any, fn: Callable[[Any], Any]) -> Any:
    try:
        out = fn(T)
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)
    if not isinstance(out, (torch.Tensor, gradviz.Tensor)):
        return out
    info = (out.stride(), out.tolist(), type(out.grad_fn).__name__ if out.grad_fn else None, out.is_contiguous())
    if out.requires_grad:
        x = out
        while x.grad_fn is not None:
            x = x.grad_fn.next_functions[0][0].variable if type(x.grad_fn.next_functions[0][0]).__name__ == \
                "AccumulateGrad" else None
            break
        (out * T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
        info += (None if x is None else x.grad.tolist(),)
    return info


CASES: dict[str, Callable[[Any], Any]] = {
    "reprs": lambda T: (repr(T.contiguous_format), repr(T.channels_last), repr(T.channels_last_3d),
                        repr(T.preserve_format), type(T.channels_last).__name__, T.memory_format.__module__),
    "no_instances": lambda T: T.memory_format(),
    "contiguous_channels_last": lambda T: _x(T).contiguous(memory_format=T.channels_last),
    "contiguous_channels_last_3d": lambda T: _x(T, (2, 3, 2, 2, 3)).contiguous(memory_format=T.channels_last_3d),
    "contiguous_default": lambda T: _x(T).transpose(1, 2).contiguous(),
    "contiguous_preserve": lambda T: _x(T, (2, 3)).contiguous(memory_format=T.preserve_format),
    "channels_last_back": lambda T: _x(T).contiguous(memory_format=T.channels_last).contiguous(),
    "channels_last_is_self": lambda T: (lambda y: y.contiguous(memory_format=T.channels_last) is y)(
        _x(T).contiguous(memory_format=T.channels_last)),
    "is_contiguous_channels_last": lambda T: (lambda y: (y.is_contiguous(), y.is_contiguous(
        memory_format=T.channels_last), _x(T).is_contiguous(memory_format=T.channels_last)))(
        _x(T).contiguous(memory_format=T.channels_last)),
    "is_contiguous_rank2": lambda T: T.ones(2, 3).is_contiguous(memory_format=T.channels_last),
    "clone_channels_last": lambda T: _x(T).clone(memory_format=T.channels_last),
    "clone_contiguous_of_transposed": lambda T: _x(T).transpose(0, 3).clone(memory_format=T.contiguous_format),
    "clone_preserve_of_transposed": lambda T: _x(T).transpose(0, 3).clone(),
    "clone_preserve_channels_last": lambda T: _x(T).contiguous(memory_format=T.channels_last).clone(),
    "wrong_rank": lambda T: T.ones(2, 3).contiguous(memory_format=T.channels_last),
    "wrong_rank_3d": lambda T: T.ones(2, 3, 4, 5).clone(memory_format=T.channels_last_3d),
    "not_a_format": lambda T: T.ones(2).contiguous(memory_format=3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_memory_format_matches_torch(name: str) -> None:
    assert _describe(gradviz, CASES[name]) == _describe(torch, CASES[name])


def test_memory_formats_pickle_to_themselves() -> None:
    assert pickle.loads(pickle.dumps(gradviz.channels_last)) is gradviz.channels_last
