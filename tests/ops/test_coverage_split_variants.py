"""split_with_sizes, unsafe_split, unsafe_split_with_sizes, unsafe_chunk (top level and Tensor
methods) against torch 2.13: pieces, node names, whether the pieces are views, gradients when
some pieces get none, errors (coverage2, issue 34)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import gradviz

X = np.sin(np.arange(30.0)).reshape(5, 6)

CASES: dict[str, Callable[[Any, Any], Any]] = {
    "split_with_sizes": lambda T, x: T.split_with_sizes(x, [2, 3]),
    "split_with_sizes_method_dim": lambda T, x: x.split_with_sizes([1, 2, 3], dim=1),
    "unsafe_split": lambda T, x: T.unsafe_split(x, 2),
    "unsafe_split_method_dim": lambda T, x: x.unsafe_split(4, dim=-1),
    "unsafe_split_with_sizes": lambda T, x: T.unsafe_split_with_sizes(x, [4, 1]),
    "unsafe_split_with_sizes_dim": lambda T, x: x.unsafe_split_with_sizes([3, 0, 3], 1),
    "unsafe_chunk": lambda T, x: T.unsafe_chunk(x, 3),
    "unsafe_chunk_method_dim": lambda T, x: x.unsafe_chunk(4, 1),
    "unsafe_chunk_empty": lambda T, x: T.unsafe_chunk(x[:0], 3),
    "bad_split_size": lambda T, x: T.unsafe_split(x, 0),
    "negative_split_size": lambda T, x: T.unsafe_split(x, -1),
    "bad_sizes": lambda T, x: T.unsafe_split_with_sizes(x, [1, 1]),
    "bad_chunks": lambda T, x: T.unsafe_chunk(x, 0),
    "bad_dim": lambda T, x: T.unsafe_split(x, 1, 2),
    "zero_dim": lambda T, x: T.unsafe_split(x.sum(), 1),
}


def _run(T: Any, fn: Callable[[Any, Any], Any]) -> Any:
    x = T.tensor(X, requires_grad=True)
    try:
        pieces = fn(T, x * 1)
    except (RuntimeError, IndexError) as e:
        return type(e).__name__, str(e)
    info = [(tuple(p.shape), p.tolist(), type(p.grad_fn).__name__ if p.grad_fn else None, p._base is not None)
            for p in pieces]
    used = [p for i, p in enumerate(pieces) if i % 2 == 0]  # the odd pieces get no gradient
    if used and used[0].numel():
        sum((p * (k + 2)).sum() for k, p in enumerate(used)).backward()
    return info, None if x.grad is None else x.grad.tolist()


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_variant_matches_torch(name: str) -> None:
    assert _run(gradviz, CASES[name]) == _run(torch, CASES[name])
