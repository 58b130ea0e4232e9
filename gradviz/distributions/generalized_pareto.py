"""torch.distributions.GeneralizedPareto(loc, scale, concentration): reparameterised samples by
the inverse CDF; the concentration-0 limit (an exponential tail) taken where torch takes it
(isclose to 0)."""

from __future__ import annotations

import math
from numbers import Number, Real
from typing import Any

import gradviz
from gradviz.distributions import constraints
from gradviz.distributions.distribution import Distribution
from gradviz.distributions.utils import broadcast_all
from gradviz.tensor import Size, Tensor

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, Number) for v in (loc, scale, concentration))
        super().__init__(Size() if scalar else self.loc.size(), validate_args=validate_args)

    def _safe(self) -> tuple[Tensor, Tensor]:
        eq_zero = gradviz.isclose(self.concentration, gradviz.tensor(0.0))
        return eq_zero, gradviz.where(eq_zero, gradviz.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = gradviz.rand(shape, dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe()
        y = 1 / safe_conc + gradviz.ones_like(z)
        where_nonzero = gradviz.where(y == 0, y, y * gradviz.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - gradviz.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe()
        where_nonzero = -gradviz.log1p(safe_conc * z) / safe_conc
        return gradviz.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value: Tensor) -> Tensor:
        return gradviz.log1p(-gradviz.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return gradviz.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        loc, scale, concentration = self.loc, self.scale, self.concentration
        eq_zero = gradviz.isclose(concentration, gradviz.zeros_like(concentration))
        safe_conc = gradviz.where(eq_zero, gradviz.ones_like(concentration), concentration)
        logu = gradviz.log1p(-value)
        where_nonzero = loc + scale / safe_conc * gradviz.expm1(-safe_conc * logu)
        where_zero = loc - scale * logu
        return gradviz.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        safe_conc = gradviz.where(valid, self.concentration, 0.5)
        return gradviz.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        safe_conc = gradviz.where(valid, self.concentration, 0.25)
        result = self.scale**2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return gradviz.where(valid, result, math.nan)

    def entropy(self) -> Tensor:
        ans = gradviz.log(self.scale) + self.concentration + 1
        return gradviz.broadcast_to(ans, tuple(self._batch_shape))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        lower = self.loc
        upper = gradviz.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
