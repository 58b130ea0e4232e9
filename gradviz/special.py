"""torch.special: the functions gradviz has under their torch.special names (torch.special.expit
is torch.sigmoid's op and records SigmoidBackward0; gammaln is lgamma, psi is digamma)."""

from __future__ import annotations

from typing import Any

from gradviz.ops import functions as _F
from gradviz.tensor import Tensor

__all__ = ["digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p", "log_softmax",
           "logit", "logsumexp", "psi", "softmax", "xlogy"]

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
