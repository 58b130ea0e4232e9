"""torch.as_strided / Tensor.as_strided against torch 2.13: a view of the base memory (writes show
through both ways), values, strides, offsets, AsStridedBackward0 and its gradients, errors
(coverage2, issue 34)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


def _leaf(T: Any) -> Any:
    return T.tensor(np.sin(np.arange(12.0)), dtype=T.float64, requires_grad=True)


CASES: dict[str, Callable[[Any], Any]] = {
    "windows": lambda T: T.as_strided(_leaf(T), (4, 3), (2, 1)),
    "method": lambda T: _leaf(T).as_strided((3, 4), (4, 1)),
    "offset": lambda T: T.as_strided(_leaf(T), (2, 2), (3, 1), 5),
    "transpose_like": lambda T: _leaf(T).as_strided((3, 4), (1, 3)),
    "broadcast_zero_stride": lambda T: _leaf(T).as_strided((3, 2), (0, 1), 2),
    "of_a_view": lambda T: (_leaf(T) * 1)[3:].as_strided((2, 3), (3, 1)),
    "view_offset_kept": lambda T: (_leaf(T) * 1)[3:].view(3, 3)[1:].as_strided((2, 2), (1, 2)),
    "of_overlapping_input": lambda T: _leaf(T)[:4].expand(2, 4).as_strided((3,), (1,)),
    "empty": lambda T: _leaf(T).as_strided((0, 3), (3, 1)),
    "scalar": lambda T: _leaf(T).as_strided((), (), 7),
    "bad_length": lambda T: _leaf(T).as_strided((2, 3), (1,)),
    "negative_stride": lambda T: _leaf(T).as_strided((2, 3), (-1, 1)),
    "out_of_bounds": lambda T: _leaf(T).as_strided((4, 3), (3, 1), 1),
    "negative_offset": lambda T: _leaf(T).as_strided((2,), (1,), -1),
    "negative_size": lambda T: _leaf(T).as_strided((2, -3), (3, 1)),
}


def _run(T: Any, fn: Callable[[Any], Any]) -> Any:
    try:
        out = fn(T)
    except RuntimeError as e:
        return ("RuntimeError", str(e).replace("itemsize 8", "itemsize 8"))
    info = (tuple(out.shape), out.stride(), out.storage_offset(), out.tolist(), type(out.grad_fn).__name__,
            out._base is not None)
    leaf = out.grad_fn
    while leaf is not None and type(leaf).__name__ != "AccumulateGrad":
        leaf = leaf.next_functions[0][0]
    w = T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)), dtype=T.float64)
    (out * w).sum().backward()
    return info, leaf.variable.grad.tolist()


@pytest.mark.parametrize("name", sorted(CASES))
def test_as_strided_matches_torch(name: str) -> None:
    assert _run(gradviz, CASES[name]) == _run(torch, CASES[name])


def test_as_strided_shares_memory_with_its_base() -> None:
    seen = []
    for T in (torch, gradviz):
        base = T.arange(10.0)
        v = base.as_strided((3, 2), (3, 1), 1)
        v[1, 1] = -1.0
        base[7] = 99.0
        seen.append((base.tolist(), v.tolist(), v._version == base._version))
    assert seen[0] == seen[1]
