"""torch.diag and torch.diag_embed: a vector onto a matrix's diagonal (DiagEmbedBackward0), and a
matrix's diagonal copied out (DiagonalBackward0_copy: torch 2.13 computes diag(2-d) as diagonal_copy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops._common import NODES, _new, _wrap_dim, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.tensor import Tensor

__all__ = ["diag", "diag_embed"]  # its public ops: torch's names (gradviz.ops.functions builds the namespace)


def _requires(t: Tensor) -> bool:
    return t._requires_grad or t._grad_fn is not None or (t._base is not None and t._base._tracked)


def _diag_index(n: int, m: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of diagonal ``offset`` of an n x m matrix."""
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    k = np.arange(length)
    return (k, k + offset) if offset >= 0 else (k - offset, k)


def _embed(v: np.ndarray, offset: int, dim1: int, dim2: int) -> np.ndarray:
    """v's last dim laid on diagonal ``offset`` of the (dim1, dim2) plane of a new square matrix."""
    size = v.shape[-1] + abs(offset)
    out = np.zeros(v.shape[:-1] + (size, size), v.dtype)
    r, c = _diag_index(size, size, offset)
    out[..., r, c] = v
    nd = out.ndim
    # the new matrix dims are the last two; move them to (dim1, dim2)
    rest = [d for d in range(nd) if d not in (dim1, dim2)]
    perm = [0] * nd
    for src, d in zip(range(nd - 2), rest, strict=True):
        perm[d] = src
    perm[dim1], perm[dim2] = nd - 2, nd - 1
    return np.ascontiguousarray(np.transpose(out, perm))


def _diagonal(x: np.ndarray, offset: int, dim1: int, dim2: int) -> np.ndarray:
    return np.ascontiguousarray(np.diagonal(x, offset, dim1, dim2))


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    nd = input.ndim + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = _new(_embed(input._data, offset, d1, d2), input.device)
    if _grad_state.enabled and _requires(input):
        record(_EMBED, (input,), [out], {"offset": offset, "dim1": d1, "dim2": d2})
    return out


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """A 1-d input: the square matrix with it on diagonal ``diagonal``; a 2-d input: that
    diagonal, copied."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    out = _new(_diagonal(input._data, diagonal, 0, 1), input.device)
    if _grad_state.enabled and _requires(input):
        record(_DIAGONAL_COPY, (input,), [out], {"shape": tuple(input.shape), "offset": diagonal})
    return out


# Under create_graph the formulas are the ops themselves (each the other's derivative), so the
# gradient has a history; otherwise they run on the arrays.
def _embed_grad(n: Any, g: Tensor) -> Tensor:
    if _grad_state.enabled and n["dim1"] == 0 and n["dim2"] == 1 and g.ndim == 2:
        return diag(g, n["offset"])
    return _new(_diagonal(g._data, n["offset"], n["dim1"], n["dim2"]), g.device)


def _diagonal_grad(n: Any, g: Tensor) -> Tensor:
    shape = n["shape"]
    if _grad_state.enabled:
        if shape[0] != shape[1] or g.shape[0] + abs(n["offset"]) != shape[0]:
            raise NotImplementedError("gradviz: a create_graph backward of diag() of a non-square matrix")
        return diag_embed(g, n["offset"], 0, 1)
    data = np.zeros(shape, g._data.dtype)
    r, c = _diag_index(shape[0], shape[1], n["offset"])
    data[r, c] = g._data
    return _new(data, g.device)


ROWS: dict[str, D] = {
    "diag_embed": D("DiagEmbedBackward0", (_embed_grad,),
        forward=lambda n, ts, o: diag_embed(ts[0], n["offset"], n["dim1"], n["dim2"])),
    "diag_diagonal_copy": D("DiagonalBackward0_copy", (_diagonal_grad,),
        forward=lambda n, ts, o: diag(ts[0], n["offset"])),
}
register(ROWS)
_EMBED = NODES["diag_embed"]
_DIAGONAL_COPY = NODES["diag_diagonal_copy"]
