"""torch.distributions.Chi2(df): Gamma(df / 2, 1 / 2)."""

from __future__ import annotations

from typing import Any

from gradviz.distributions import constraints
from gradviz.distributions.gamma import Gamma
from gradviz.tensor import Tensor

__all__ = ["Chi2"]


class Chi2(Gamma):
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
