"""torch.distributions: the families RL and VAEs use (Normal, Categorical, Bernoulli, Uniform,
Exponential, Independent, TransformedDistribution with the common transforms) and
kl_divergence, one module per family as torch keeps them. Formulas, validation and messages
follow torch 2.13, so log_prob, entropy and rsample record torch's graphs and sampling with the
same seed draws torch's numbers."""

from gradviz.distributions import constraints, transforms
from gradviz.distributions.bernoulli import Bernoulli
from gradviz.distributions.categorical import Categorical
from gradviz.distributions.distribution import Distribution
from gradviz.distributions.exponential import Exponential
from gradviz.distributions.independent import Independent
from gradviz.distributions.kl import kl_divergence, register_kl
from gradviz.distributions.normal import Normal
from gradviz.distributions.transformed_distribution import TransformedDistribution
from gradviz.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from gradviz.distributions.uniform import Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Categorical", "ComposeTransform", "Distribution", "ExpTransform", "Exponential",
    "Independent", "Normal", "SigmoidTransform", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
    "constraints", "kl_divergence", "register_kl", "transforms",
]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
