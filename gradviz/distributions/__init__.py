"""torch.distributions: the families RL and VAEs use and kl_divergence, one module per family as
torch keeps them (``torch.distributions.beta`` ...). Formulas, validation and messages follow
torch 2.13, so log_prob, entropy and rsample record torch's graphs and sampling with the same
seed draws torch's numbers (Poisson's rates of 10 and more excepted: gradviz/random/gamma.py)."""

from gradviz.distributions import constraints, transforms
from gradviz.distributions.bernoulli import Bernoulli
from gradviz.distributions.beta import Beta
from gradviz.distributions.categorical import Categorical
from gradviz.distributions.cauchy import Cauchy
from gradviz.distributions.chi2 import Chi2
from gradviz.distributions.dirichlet import Dirichlet
from gradviz.distributions.distribution import Distribution
from gradviz.distributions.exp_family import ExponentialFamily
from gradviz.distributions.exponential import Exponential
from gradviz.distributions.gamma import Gamma
from gradviz.distributions.geometric import Geometric
from gradviz.distributions.gumbel import Gumbel
from gradviz.distributions.half_normal import HalfNormal
from gradviz.distributions.independent import Independent
from gradviz.distributions.kl import kl_divergence, register_kl
from gradviz.distributions.laplace import Laplace
from gradviz.distributions.log_normal import LogNormal
from gradviz.distributions.mixture_same_family import MixtureSameFamily
from gradviz.distributions.multivariate_normal import MultivariateNormal
from gradviz.distributions.normal import Normal
from gradviz.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from gradviz.distributions.poisson import Poisson
from gradviz.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from gradviz.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from gradviz.distributions.studentT import StudentT
from gradviz.distributions.transformed_distribution import TransformedDistribution
from gradviz.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from gradviz.distributions.uniform import Uniform

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Categorical", "Cauchy", "Chi2", "ComposeTransform",
    "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily",
    "Gamma", "Geometric", "Gumbel", "HalfNormal", "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli",
    "MixtureSameFamily", "MultivariateNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
    "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform", "StudentT", "TanhTransform",
    "Transform", "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl", "transforms",
]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
