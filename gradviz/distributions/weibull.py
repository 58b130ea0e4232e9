"""torch.distributions.Weibull(scale, concentration): scale * X ** (1 / concentration) for
X ~ Exponential(1)."""

from __future__ import annotations

from typing import Any

import gradviz
from gradviz.distributions import constraints
from gradviz.distributions.exponential import Exponential
from gradviz.distributions.transformed_distribution import TransformedDistribution
from gradviz.distributions.transforms import AffineTransform, PowerTransform
from gradviz.distributions.utils import broadcast_all, euler_constant
from gradviz.tensor import Tensor

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(gradviz.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        # torch rebuilds the transforms around the expanded parameters
        raise NotImplementedError("gradviz has no Weibull.expand")

    @property
    def mean(self) -> Tensor:
        return self.scale * gradviz.exp(gradviz.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (gradviz.exp(gradviz.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - gradviz.exp(2 * gradviz.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self) -> Tensor:
        return (euler_constant * (1 - self.concentration_reciprocal)
                + gradviz.log(self.scale * self.concentration_reciprocal) + 1)
