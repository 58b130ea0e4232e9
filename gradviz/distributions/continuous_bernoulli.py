"""torch.distributions.ContinuousBernoulli(probs or logits) (Loaiza-Ganem and Cunningham, 2019):
the [0, 1] density proportional to p^x (1-p)^(1-x), with torch's Taylor expansions near p = 1/2
(inside lims) where the closed forms lose precision."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import gradviz
from gradviz.distributions import constraints
from gradviz.distributions.exp_family import ExponentialFamily
from gradviz.distributions.utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits
from gradviz.tensor import Size, Tensor

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def _outside_unstable_region(self) -> Tensor:
        return gradviz.max(gradviz.le(self.probs, self._lims[0]), gradviz.gt(self.probs, self._lims[1]))

    def _cut_probs(self) -> Tensor:
        return gradviz.where(self._outside_unstable_region(), self.probs, self._lims[0] * gradviz.ones_like(self.probs))

    def _cont_bern_log_norm(self) -> Tensor:
        cut_probs = self._cut_probs()
        below = gradviz.where(gradviz.le(cut_probs, 0.5), cut_probs, gradviz.zeros_like(cut_probs))
        above = gradviz.where(gradviz.ge(cut_probs, 0.5), cut_probs, gradviz.ones_like(cut_probs))
        log_norm = gradviz.log(gradviz.abs(gradviz.log1p(-cut_probs) - gradviz.log(cut_probs))) - gradviz.where(
            gradviz.le(cut_probs, 0.5), gradviz.log1p(-2.0 * below), gradviz.log(2.0 * above - 1.0))
        x = gradviz.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return gradviz.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (gradviz.log1p(-cut_probs) - gradviz.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * gradviz.pow(x, 2)) * x
        return gradviz.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return gradviz.sqrt(self.variance)

    @property
    def variance(self) -> Tensor:
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / gradviz.pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / gradviz.pow(gradviz.log1p(-cut_probs) - gradviz.log(cut_probs), 2))
        x = gradviz.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return gradviz.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = gradviz.rand(shape, dtype=self.probs.dtype)
        with gradviz.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = gradviz.rand(shape, dtype=self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = gradviz.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (gradviz.pow(cut_probs, value) * gradviz.pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0) / (
            2.0 * cut_probs - 1.0)
        unbounded = gradviz.where(self._outside_unstable_region(), cdfs, value)
        return gradviz.where(gradviz.le(value, 0.0), gradviz.zeros_like(value),
                             gradviz.where(gradviz.ge(value, 1.0), gradviz.ones_like(value), unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut_probs = self._cut_probs()
        return gradviz.where(
            self._outside_unstable_region(),
            (gradviz.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - gradviz.log1p(-cut_probs))
            / (gradviz.log(cut_probs) - gradviz.log1p(-cut_probs)),
            value)

    def entropy(self) -> Tensor:
        log_probs0 = gradviz.log1p(-self.probs)
        log_probs1 = gradviz.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        out_unst_reg = gradviz.max(gradviz.le(x, self._lims[0] - 0.5), gradviz.gt(x, self._lims[1] - 0.5))
        cut_nat_params = gradviz.where(out_unst_reg, x, (self._lims[0] - 0.5) * gradviz.ones_like(x))
        log_norm = gradviz.log(gradviz.abs(gradviz.special.expm1(cut_nat_params))) - gradviz.log(
            gradviz.abs(cut_nat_params))
        taylor = 0.5 * x + gradviz.pow(x, 2) / 24.0 - gradviz.pow(x, 4) / 2880.0
        return gradviz.where(out_unst_reg, log_norm, taylor)
