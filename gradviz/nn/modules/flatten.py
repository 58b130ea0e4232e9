"""Flatten and Unflatten."""

from __future__ import annotations

from typing import Any

from gradviz.nn.modules.module import Module
from gradviz.tensor import Tensor

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim: int | str, unflattened_size: Any) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size) if isinstance(unflattened_size, list) else unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        d = self.dim if self.dim >= 0 else self.dim + input.ndim
        shape = tuple(input.shape)
        return input.view(*shape[:d], *self.unflattened_size, *shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
