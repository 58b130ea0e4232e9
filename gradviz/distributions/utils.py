"""torch.distributions.utils: broadcasting parameters, probabilities and logits, and the
once-computed properties the distributions share (torch/distributions/utils.py's behaviour)."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Number
from typing import Any

import gradviz
from gradviz.ops import composites as _composites
from gradviz.tensor import Tensor

__all__ = [
    "broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits", "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """The values as tensors of one shape. Numbers take the first tensor's dtype (else the default
    dtype). As ATen's broadcast_tensors, a tensor that has the shape already is returned as it is,
    so it records no ExpandBackward0."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None else gradviz.get_default_dtype()
    tensors = [v if isinstance(v, Tensor) else gradviz.tensor(v, dtype=dtype) for v in values]
    return _composites.broadcast_tensors(*tensors)


def _standard_normal(shape: tuple, dtype: Any) -> Tensor:
    return gradviz.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value: Any, dim: int) -> Any:
    """value summed over its rightmost ``dim`` dims."""
    if dim == 0:
        return value
    required_shape = tuple(value.shape[:-dim]) + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return gradviz.sigmoid(logits)
    return gradviz.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """probs kept in [eps, 1 - eps] for the logs that follow."""
    eps = gradviz.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return gradviz.log(ps_clamped) - gradviz.log1p(-ps_clamped)
    return gradviz.log(ps_clamped)


class lazy_property:  # noqa: N801 - torch's name
    """Computed on first access and then kept on the instance: every use shares one graph."""

    def __init__(self, wrapped: Callable[[Any], Any]):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with gradviz.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of mat on and below diagonal diag, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = gradviz.arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """tril_matrix_to_vec's inverse: a square matrix with vec below (and on) diagonal diag."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = gradviz.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    n = round(n)
    mat = gradviz.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype)
    arange = gradviz.arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat
