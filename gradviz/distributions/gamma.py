"""torch.distributions.Gamma(concentration, rate): reparameterised samples through
_standard_gamma (torch's draws, differentiated by its implicit gradient), torch's formulas."""

from __future__ import annotations

from numbers import Number
from typing import Any

import gradviz
from gradviz.distributions import constraints
from gradviz.distributions.exp_family import ExponentialFamily
from gradviz.distributions.utils import broadcast_all
from gradviz.tensor import Size, Tensor

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(Size() if scalar else self.concentration.size(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        value = gradviz._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # raised to the smallest normal number outside the graph, as torch does
        value.detach().clamp_(min=gradviz.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value: Any) -> Tensor:
        value = gradviz.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (gradviz.xlogy(self.concentration, self.rate) + gradviz.xlogy(self.concentration - 1, value)
                - self.rate * value - gradviz.lgamma(self.concentration))

    def entropy(self) -> Tensor:
        return (self.concentration - gradviz.log(self.rate) + gradviz.lgamma(self.concentration)
                + (1.0 - self.concentration) * gradviz.digamma(self.concentration))

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return gradviz.lgamma(x + 1) + (x + 1) * gradviz.log(-y.reciprocal())
