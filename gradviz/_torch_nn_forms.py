"""torch's top-level forms of the nn ops gradviz/_nn_top_level.py does not cover (avg_pool1d,
adaptive_avg_pool1d, embedding_renorm_ under torch's ATen signatures), and the Tensor methods
hardshrink and prelu. gradviz/_api.py publishes them at the top level."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.nn import functional as _F
from gradviz.ops.inplace_write import bump_version
from gradviz.tensor import Tensor

__all__ = ["adaptive_avg_pool1d", "avg_pool1d", "embedding_renorm_"]


def _one(v: Any) -> Any:
    return v[0] if isinstance(v, (tuple, list)) else v


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """avg_pool2d over a unit height, as torch composes it (SqueezeBackward1 over AvgPool2DBackward0)."""
    k = _one(kernel_size)
    st = _one(stride) if stride not in ((), None) else k
    out = _F.avg_pool2d(input.unsqueeze(-2), (1, k), (1, st), (0, _one(padding)), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return _F.adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size))).squeeze(-2)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """The rows of weight that indices name scaled down, in place, to a norm of at most max_norm
    (without recording: torch's runs under no_grad in embedding)."""
    rows = np.unique(indices._data.reshape(-1))
    w = weight._data
    norms = (np.abs(w[rows].astype(np.float64)) ** norm_type).sum(-1) ** (1.0 / norm_type)
    scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    w[rows] = (w[rows] * scale[:, None]).astype(w.dtype)
    bump_version(weight, "embedding_renorm_")
    return weight


def install_methods() -> None:
    """Tensor.hardshrink and Tensor.prelu: nn.functional's ops as methods, as torch has them."""
    Tensor.hardshrink = lambda self, lambd=0.5: _F.hardshrink(self, lambd)
    Tensor.prelu = lambda self, weight: _F.prelu(self, weight)
