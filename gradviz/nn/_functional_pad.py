"""torch.nn.functional's pad, normalize, cosine_similarity, pairwise_distance and group_norm,
each recording the nodes torch records (the composites call the same ops in the same order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import is_grad_enabled, no_grad
from gradviz.ops import arith as _arith
from gradviz.ops import reductions as _reductions
from gradviz.ops import views as _views
from gradviz.ops.linalg_norms import vector_norm
from gradviz.ops.nn_group_norm_ops import group_norm
from gradviz.ops.nn_pad_ops import circular_pad, constant_pad_nd, norm_dim, reflection_pad, replication_pad
from gradviz.tensor import Tensor

__all__ = ["cosine_similarity", "group_norm", "normalize", "pad", "pairwise_distance"]


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        # torch's message names the first mismatching dim from the right
        for i in range(1, min(len(a), len(b)) + 1):
            if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
                raise RuntimeError(
                    f"The size of tensor a ({a[-i]}) must match the size of tensor b ({b[-i]}) "
                    f"at non-singleton dimension {max(len(a), len(b)) - i}"
                ) from None
        raise


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return constant_pad_nd(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode == "reflect":
        return reflection_pad(input, pad)
    if mode == "replicate":
        return replication_pad(input, pad)
    if mode == "circular":
        return circular_pad(input, pad)
    raise NotImplementedError(f"Unrecognised padding mode {mode}")


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    # torch's Python: input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    denom = _views.expand_as(_reductions.norm(input, p, dim, keepdim=True).clamp_min(eps), input)
    if out is None:
        return _arith.div(input, denom)
    if is_grad_enabled() and (input.requires_grad or out.requires_grad):
        raise RuntimeError(
            "div(): functions with out=... arguments don't support automatic differentiation, but one of the "
            "arguments requires grad."
        )
    with no_grad():
        return out.copy_(_arith.div(input, denom))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    # ATen's: expand both to the broadcast shape (when they differ), divide each by its cloned
    # norm clamped in place without grad (so the clamp is not differentiated), multiply, sum.
    if tuple(x1.shape) != tuple(x2.shape):
        shape = _broadcast(tuple(x1.shape), tuple(x2.shape))
        # torch's compiled expand_outplace makes x2's expand first
        x2 = _views.expand(x2, shape)
        x1 = _views.expand(x1, shape)
    n1 = _views.clone(vector_norm(x1, 2, dim=dim, keepdim=True))
    n2 = _views.clone(vector_norm(x2, 2, dim=dim, keepdim=True))
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    # torch's compiled operator* evaluates its right operand first: x2's division is made first
    d2 = _arith.div(x2, n2)
    return _reductions.sum(_arith.mul(_arith.div(x1, n1), d2), dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    # ATen's: at::norm(x1 - x2 + eps, p, last dim of the broadcast, keepdim); the + eps is the
    # Scalar add (AddBackward1)
    last = max(x1.ndim, x2.ndim) - 1
    return norm_dim(_arith.add_scalar(_arith.sub(x1, x2), eps), p, last, keepdim)
