"""torch.distributions.LogisticNormal(loc, scale): a Normal pushed onto the simplex by stick
breaking."""

from __future__ import annotations

from typing import Any

from gradviz.distributions import constraints
from gradviz.distributions.normal import Normal
from gradviz.distributions.transformed_distribution import TransformedDistribution
from gradviz.distributions.transforms import StickBreakingTransform
from gradviz.tensor import Tensor

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
