"""torch.special: the functions gradviz has under their torch.special names (torch.special.expit
is torch.sigmoid's op and records SigmoidBackward0; gammaln is lgamma, psi is digamma)."""

from __future__ import annotations

from typing import Any

from gradviz.ops import functions as _F
from gradviz.ops import special_ops as _S
from gradviz.tensor import Tensor

__all__ = ["digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_softmax",
           "logit", "logsumexp", "psi", "softmax", "xlogy"]
# issue 34 (torchfns): the rest of torch.special, from gradviz/ops/special_ops.py
_FROM_SPECIAL_OPS = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "entr", "erfcx", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log_ndtr",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr",
    "ndtri", "polygamma", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
    "spherical_bessel_j0", "xlog1py", "zeta",
]
globals().update({_n: getattr(_S, _n) for _n in _FROM_SPECIAL_OPS})
gammainc, gammaincc, round = _S.igamma, _S.igammac, _S.special_round  # noqa: A001 - torch.special.round
__all__ += [*_FROM_SPECIAL_OPS, "gammainc", "gammaincc", "round"]

digamma = psi = _F.digamma
erf, erfc, erfinv = _F.erf, _F.erfc, _F.erfinv
exp2, expm1, log1p = _F.exp2, _F.expm1, _F.log1p
expit = _F.sigmoid
gammaln = _F.lgamma
logit, logsumexp, xlogy = _F.logit, _F.logsumexp, _F.xlogy


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    return _F.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    return _F.log_softmax(input, dim, dtype)


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
