"""Tensor's random methods (``uniform_``, ``normal_``, ``bernoulli``, ...), installed on Tensor by
``install()``: one place, so the Tensor class file needs no edit."""

from __future__ import annotations

from typing import Any

from gradviz.random import _api
from gradviz.tensor import Tensor


def _bernoulli_method(self: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    return _api.bernoulli(self, p, generator=generator)


def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    return _api.multinomial(self, num_samples, replacement, generator=generator)


METHODS = {
    "uniform_": _api.uniform_,
    "normal_": _api.normal_,
    "random_": _api.random_,
    "bernoulli_": _api.bernoulli_,
    "exponential_": _api.exponential_,
    "cauchy_": _api.cauchy_,
    "log_normal_": _api.log_normal_,
    "geometric_": _api.geometric_,
    "bernoulli": _bernoulli_method,
    "multinomial": _multinomial_method,
}


def install() -> None:
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
