"""torch.distributions for gradviz: Categorical, Normal and Bernoulli with sample, log_prob and
entropy. Sampling makes torch's calls (multinomial, normal, bernoulli), so with the same seed
the samples are torch's; log_prob and entropy follow torch's formulas with gradviz's ops, so
gradients flow through them. Argument validation (torch's ``validate_args``) is not done.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import gradviz
from gradviz.tensor import Size, Tensor

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal"]


def _as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    dtype = like.dtype if like is not None else gradviz.random._api.default_float()
    return gradviz.tensor(x, dtype=dtype)


def _eps(t: Tensor) -> float:
    return float(np.finfo(t.dtype.np).eps)


def _clamp_probs(p: Tensor) -> Tensor:
    eps = _eps(p)
    return p.clamp(min=eps, max=1 - eps)


def _logsumexp(x: Tensor, dim: int) -> Tensor:
    m = x.detach().amax(dim, keepdim=True)
    m = gradviz.where(gradviz.isfinite(m), m, gradviz.zeros_like(m)) if hasattr(gradviz, "isfinite") else m
    return (x - m).exp().sum(dim, keepdim=True).log() + m


def _bce_with_logits(x: Tensor, y: Tensor) -> Tensor:
    # torch's stable form: (1 - y) * x + max(-x, 0) + log(exp(-max) + exp(-x - max))
    max_val = (-x).clamp(min=0)
    return (1 - y) * x + max_val + ((-max_val).exp() + (-x - max_val).exp()).log()


class Distribution:
    has_rsample = False

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = (), validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> tuple:
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with gradviz.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Normal(Distribution):
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        loc_t = loc if isinstance(loc, Tensor) else None
        scale_t = scale if isinstance(scale, Tensor) else None
        like = loc_t if loc_t is not None else scale_t
        loc, scale = _as_tensor(loc, like), _as_tensor(scale, like)
        shape = tuple(np.broadcast_shapes(tuple(loc.shape), tuple(scale.shape)))
        self.loc, self.scale = loc.expand(*shape), scale.expand(*shape)
        super().__init__(shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return self.scale

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with gradviz.no_grad():
            return gradviz.normal(self.loc.expand(*shape), self.scale.expand(*shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = gradviz.empty(*shape, dtype=self.loc.dtype).normal_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Tensor:
        value = _as_tensor(value, self.loc)
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + gradviz.log(self.scale)

    def __repr__(self) -> str:
        return f"Normal(loc: {self.loc.size()}, scale: {self.scale.size()})"


class Bernoulli(Distribution):
    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._probs = _as_tensor(probs) if probs is not None else None
        self._logits = _as_tensor(logits) if logits is not None else None
        param = self._probs if self._probs is not None else self._logits
        super().__init__(tuple(param.shape), (), validate_args)

    @property
    def probs(self) -> Tensor:
        return self._probs if self._probs is not None else self._logits.sigmoid()

    @property
    def logits(self) -> Tensor:
        if self._logits is not None:
            return self._logits
        p = _clamp_probs(self._probs)
        return p.log() - (-p).log1p()

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with gradviz.no_grad():
            return gradviz.bernoulli(self.probs.expand(*shape))

    def log_prob(self, value: Any) -> Tensor:
        logits = self.logits
        value = _as_tensor(value, logits)
        return -_bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs)

    def __repr__(self) -> str:
        which = "probs" if self._probs is not None else "logits"
        return f"Bernoulli({which}: {self.batch_shape})"


class Categorical(Distribution):
    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            probs = _as_tensor(probs)
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self._probs, self._logits = probs / probs.sum(-1, keepdim=True), None
            param = self._probs
        else:
            logits = _as_tensor(logits)
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self._probs, self._logits = None, logits - _logsumexp(logits, -1)
            param = self._logits
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), (), validate_args)

    # computed once and kept, as torch's lazy_property does: every use shares one graph node
    @property
    def probs(self) -> Tensor:
        if self._probs is not None:
            return self._probs
        if getattr(self, "_probs_cache", None) is None:
            self._probs_cache = gradviz.softmax(self._logits, -1)
        return self._probs_cache

    @property
    def logits(self) -> Tensor:
        if self._logits is not None:
            return self._logits
        if getattr(self, "_logits_cache", None) is None:
            self._logits_cache = _clamp_probs(self._probs).log()
        return self._logits_cache

    @property
    def param_shape(self) -> Size:
        return (self._probs if self._probs is not None else self._logits).shape

    @property
    def mean(self) -> Tensor:
        return gradviz.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = tuple(sample_shape)
        n = int(np.prod(sample_shape)) if sample_shape else 1
        with gradviz.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = gradviz.multinomial(probs_2d, n, True).T
        return samples_2d.reshape(*self._extended_shape(sample_shape))

    def log_prob(self, value: Any) -> Tensor:
        value = value if isinstance(value, Tensor) else gradviz.tensor(value)
        logits = self.logits
        shape = tuple(np.broadcast_shapes(tuple(value.shape) + (1,), tuple(logits.shape)))
        idx = gradviz.tensor(np.broadcast_to(np.asarray(value._data, dtype=np.int64)[..., None], shape)[..., :1].copy())
        # torch's broadcast_tensors leaves a tensor of the right shape as it is: no ExpandBackward0
        log_pmf = logits if tuple(logits.shape) == shape else logits.expand(*shape)
        return log_pmf.gather(-1, idx).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = float(np.finfo(self.logits.dtype.np).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = gradviz.arange(self._num_events).reshape(-1, *([1] * len(self.batch_shape)))
        return values.expand(-1, *self.batch_shape) if expand else values

    def __repr__(self) -> str:
        which = "probs" if self._probs is not None else "logits"
        return f"Categorical({which}: {self.param_shape})"


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
