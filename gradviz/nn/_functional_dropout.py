"""torch.nn.functional's channel-wise dropouts: dropout1d, dropout2d, dropout3d.

torch runs them through ``feature_dropout`` (ATen's ``_dropout_impl<feature_dropout=true>``):
the same ``input * noise`` as ``dropout`` (a MulBackward0 whose second edge is empty), but the
noise has shape ``(N, C, 1, ...)`` so that one Bernoulli draw per channel zeroes a whole feature
map. Drawing the noise in that shape is what keeps the seeded random numbers equal to torch's.
"""

from __future__ import annotations

import warnings

from gradviz.ops import functions as F
from gradviz.tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d"]


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = F.zeros_for((), input.dtype, input.device)
        return input.mul_(zero) if inplace else F.mul(input, zero)
    from gradviz.random import dropout_noise  # the samplers load after the nn package

    noise = dropout_noise(input, p, feature=True)
    return input.mul_(noise) if inplace else F.mul(input, noise)


def _spatial_warning(name: str, dim: int, spatial: int) -> None:
    warnings.warn(
        f"{name}: Received a {dim}-D input to {name}, which is deprecated "
        "and will result in an error in a future release. To retain the behavior "
        f"and silence this warning, please use dropout instead. Note that {name} "
        f"exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, "
        "a channel dimension, and an optional batch dimension "
        f"(i.e. {spatial + 1}D or {spatial + 2}D inputs).",
        stacklevel=3,
    )


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    _check_p(p)
    dim = input.dim()
    if dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {dim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs)."
        )
    # torch adds the batch dimension and takes it off again: UnsqueezeBackward0 and SqueezeBackward1
    # nodes, or in place (unsqueeze_, squeeze_) UnsqueezeBackward1 and SqueezeBackward4
    if dim == 2:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _feature_dropout(input, p, training, inplace)
    if dim == 2:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    _check_p(p)
    dim = input.dim()
    if dim not in (3, 4):
        _spatial_warning("dropout2d", dim, 2)
    # torch keeps the historical reading of a 3-D input as (N, C, L), not an unbatched (C, H, W)
    if dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    _check_p(p)
    dim = input.dim()
    if dim not in (4, 5):
        _spatial_warning("dropout3d", dim, 3)
    if dim != 5:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _feature_dropout(input, p, training, inplace)
    if dim != 5:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result
