"""torch.distributions: the families RL and VAEs use and kl_divergence, one module per family as
torch keeps them (``torch.distributions.beta`` ...). Formulas, validation and messages follow
torch 2.13, so log_prob, entropy and rsample record torch's graphs and sampling with the same
seed draws torch's numbers (the gamma, Dirichlet, Poisson and binomial samplers included:
gradviz/random/gamma.py, gradviz/random/binomial.py)."""

from gradviz.distributions import constraints, transforms
from gradviz.distributions.bernoulli import Bernoulli
from gradviz.distributions.beta import Beta
from gradviz.distributions.binomial import Binomial
from gradviz.distributions.categorical import Categorical
from gradviz.distributions.cauchy import Cauchy
from gradviz.distributions.chi2 import Chi2
from gradviz.distributions.constraint_registry import biject_to, transform_to
from gradviz.distributions.continuous_bernoulli import ContinuousBernoulli
from gradviz.distributions.dirichlet import Dirichlet
from gradviz.distributions.distribution import Distribution
from gradviz.distributions.exp_family import ExponentialFamily
from gradviz.distributions.exponential import Exponential
from gradviz.distributions.fishersnedecor import FisherSnedecor
from gradviz.distributions.gamma import Gamma
from gradviz.distributions.generalized_pareto import GeneralizedPareto
from gradviz.distributions.geometric import Geometric
from gradviz.distributions.gumbel import Gumbel
from gradviz.distributions.half_cauchy import HalfCauchy
from gradviz.distributions.half_normal import HalfNormal
from gradviz.distributions.independent import Independent
from gradviz.distributions.inverse_gamma import InverseGamma
from gradviz.distributions.kl import kl_divergence, register_kl
from gradviz.distributions.kumaraswamy import Kumaraswamy
from gradviz.distributions.laplace import Laplace
from gradviz.distributions.log_normal import LogNormal
from gradviz.distributions.logistic_normal import LogisticNormal
from gradviz.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from gradviz.distributions.mixture_same_family import MixtureSameFamily
from gradviz.distributions.multinomial import Multinomial
from gradviz.distributions.multivariate_normal import MultivariateNormal
from gradviz.distributions.negative_binomial import NegativeBinomial
from gradviz.distributions.normal import Normal
from gradviz.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from gradviz.distributions.pareto import Pareto
from gradviz.distributions.poisson import Poisson
from gradviz.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from gradviz.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from gradviz.distributions.studentT import StudentT
from gradviz.distributions.transformed_distribution import TransformedDistribution
from gradviz.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from gradviz.distributions.uniform import Uniform
from gradviz.distributions.von_mises import VonMises
from gradviz.distributions.weibull import Weibull

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical", "Cauchy",
    "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily",
    "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "IndependentTransform", "InverseGamma", "Kumaraswamy", "Laplace", "LogNormal", "LogisticNormal",
    "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
    "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "biject_to", "constraints", "identity_transform",
    "kl_divergence", "register_kl", "transform_to", "transforms",
]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
