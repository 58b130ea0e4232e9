"""parameters_to_vector and vector_to_parameters."""

from __future__ import annotations

from collections.abc import Iterable

from gradviz.ops import functions as F
from gradviz.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """One vector of every parameter, flattened (a graph of views and a cat, as torch's)."""
    return F.cat([F.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        # torch replaces .data with the slice viewed as the parameter
        param.data = F.view(F.getitem(vec, slice(pointer, pointer + n)), tuple(param.shape)).data
        pointer += n
