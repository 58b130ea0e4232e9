"""torch's other spellings of split, at the top level and as Tensor methods: split_with_sizes
(torch.split with a list: SplitWithSizesBackward0 views), and unsafe_split, unsafe_split_with_sizes
and unsafe_chunk, whose pieces are new tensors to autograd, not views (UnsafeSplitBackward0,
UnsafeSplitWithSizesBackward0: the gradients concatenated back, zeros for a piece that got none)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import functions as F
from gradviz.ops import shape as _shape
from gradviz.ops._common import _ascontiguous
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _register, _requires
from gradviz.tensor import Tensor

__all__ = ["split_with_sizes", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes"]


def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    return _shape.split(input, [int(s) for s in split_sizes], dim)


def _dim(input: Tensor, dim: int) -> int:  # noqa: A002
    n = max(input.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _pieces(input: Tensor, cuts: list[int], dim: int) -> list[Tensor]:  # noqa: A002
    return [Tensor._wrap(_ascontiguous(p), input.dtype, input.device)
            for p in np.split(input._data, cuts, axis=dim)]


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    if input.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = _dim(input, dim)
    n = input.shape[dim]
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    cuts = list(range(split_size, n, split_size)) if split_size else []
    outs = _pieces(input, cuts, dim)
    if _grad_state.enabled and _requires(input):
        record(_UNSAFE_SPLIT, (input,), outs, {"self_sizes": input._data.shape, "split_size": split_size, "dim": dim})
    return tuple(outs)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = _dim(input, dim)
    n = input.shape[dim]
    if n == 0:  # torch's chunk of an empty dim: `chunks` empty pieces
        return unsafe_split_with_sizes(input, [0] * chunks, dim)
    return unsafe_split(input, -(-n // chunks), dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    dim = _dim(input, dim)
    sizes = [int(s) for s in split_sizes]
    n = input.shape[dim]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {dim}), but got split_sizes={sizes}")
    outs = _pieces(input, list(np.cumsum(sizes)[:-1]), dim)
    if _grad_state.enabled and _requires(input):
        record(_UNSAFE_SPLIT_SIZES, (input,), outs, {"self_sizes": input._data.shape, "sizes": sizes, "dim": dim})
    return tuple(outs)


def _with_sizes_grad(n: Any, grads: list) -> Tensor:
    shape, sizes, dim = n.saved["self_sizes"], n.saved["sizes"], n.saved["dim"]
    like = next(g for g in grads if g is not None)
    parts = []
    for size, g in zip(sizes, grads, strict=True):
        if g is None:
            piece = list(shape)
            piece[dim] = size
            g = F.zeros_for(tuple(piece), like.dtype, like.device)
        parts.append(g)
    return F.cat(parts, dim)


def _split_grad(n: Any, grads: list) -> Tensor:
    shape, size, dim = n.saved["self_sizes"], n.saved["split_size"], n.saved["dim"]
    like = next(g for g in grads if g is not None)
    parts = []
    for i, g in enumerate(grads):
        if g is None:
            piece = list(shape)
            piece[dim] = min(size, shape[dim] - i * size)
            g = F.zeros_for(tuple(piece), like.dtype, like.device)
        parts.append(g)
    return F.cat(parts, dim)


# torch's CPU RNN cells cut their gates with unsafe_chunk (gradviz/nn/modules/rnn.py)
_UNSAFE_SPLIT = _register("unsafe_split", D("UnsafeSplitBackward0", (_split_grad,), multi_output=True, forward=TR),
                          graph=True)
_UNSAFE_SPLIT_SIZES = _register(
    "unsafe_split_with_sizes", D("UnsafeSplitWithSizesBackward0", (_with_sizes_grad,), multi_output=True), graph=True
)


def install() -> None:
    for name in __all__:
        setattr(Tensor, name, globals()[name])
