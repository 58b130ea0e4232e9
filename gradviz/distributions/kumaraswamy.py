"""torch.distributions.Kumaraswamy(concentration1, concentration0): a Uniform through
x -> (1 - x ** (1 / b)) ** (1 / a), as torch composes it."""

from __future__ import annotations

import math
from typing import Any

import gradviz
from gradviz.distributions import constraints
from gradviz.distributions.transformed_distribution import TransformedDistribution
from gradviz.distributions.transforms import AffineTransform, PowerTransform
from gradviz.distributions.uniform import Uniform
from gradviz.distributions.utils import broadcast_all, euler_constant
from gradviz.tensor import Tensor

__all__ = ["Kumaraswamy"]


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """The n-th moment, by lgamma."""
    arg1 = 1 + n / a
    log_value = gradviz.lgamma(arg1) + gradviz.lgamma(b) - gradviz.lgamma(arg1 + b)
    return b * gradviz.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(gradviz.full_like(self.concentration0, 0), gradviz.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        # torch rebuilds the transforms around the expanded parameters
        raise NotImplementedError("gradviz has no Kumaraswamy.expand")

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        log_mode[(self.concentration0 < 1) | (self.concentration1 < 1)] = math.nan
        return log_mode.exp()

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - gradviz.pow(self.mean, 2)

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = gradviz.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - gradviz.log(self.concentration1) - gradviz.log(self.concentration0)
