"""F.instance_norm, composed as torch's at::instance_norm composes it: the batch folded into the
channels (a view), the affine parameters and running statistics repeated per sample, one
native_batch_norm, a view back, and the running statistics averaged over the batch."""

from __future__ import annotations

import math

from gradviz.autograd.grad_mode import no_grad
from gradviz.ops import functions as F
from gradviz.ops import nn_conv_ops as C
from gradviz.tensor import Tensor

__all__ = ["instance_norm"]


def _size_list(size: tuple) -> str:
    return "[" + ", ".join(str(s) for s in size) + "]"


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,  # noqa: A002
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) plane by its own mean and variance."""
    size = tuple(input.shape)
    if use_input_stats and math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size torch.Size("
                         f"{_size_list(size)})")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    b, c = size[0], size[1]

    def repeat(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.repeat(b)

    # torch's order, which numbers the nodes: the parameters' repeats, then the input's view
    weight_, bias_ = repeat(weight), repeat(bias)
    mean_, var_ = repeat(running_mean), repeat(running_var)
    folded = F.view(F.contiguous(input), (1, b * c, *size[2:]))
    out = C.native_batch_norm(folded, weight_, bias_, mean_, var_, use_input_stats, momentum, eps)
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(F.view(mean_, (b, c)).mean(0))
        if running_var is not None:
            running_var.copy_(F.view(var_, (b, c)).mean(0))
    return F.view(out, size)
