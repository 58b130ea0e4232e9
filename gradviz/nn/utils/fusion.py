"""torch.nn.utils.fuse_conv_bn_* and fuse_linear_bn_*: an eval-mode BatchNorm folded into the
convolution or linear layer before it (a copy of the layer with new weight and bias), as torch
computes it: scale = bn.weight * rsqrt(running_var + eps), weight * scale per output channel,
(bias - running_mean) * scale + bn.bias."""

from __future__ import annotations

import copy
from typing import Any

from gradviz.autograd.grad_mode import no_grad
from gradviz.nn.parameter import Parameter
from gradviz.ops import functions as F
from gradviz.tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = F.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = F.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = F.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = F.rsqrt(F.add(bn_rv, bn_eps))
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    w = F.to_copy(F.mul(conv_w, F.reshape(F.mul(bn_w, rsqrt), shape)), w_dtype)
    b = F.to_copy(F.add(F.mul(F.mul(F.sub(conv_b, bn_rm), rsqrt), bn_w), bn_b), b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                           bn_w: Tensor, bn_b: Tensor) -> tuple[Parameter, Parameter]:
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = F.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = F.mul(bn_w, F.rsqrt(F.add(bn_rv, bn_eps)))
    w = F.mul(linear_w, F.to_copy(F.unsqueeze(scale, -1), w_dtype))
    b = F.to_copy(F.add(F.mul(F.sub(linear_b, bn_rm), scale), bn_b), b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)


def _check_eval(layer: Any, bn: Any) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("BatchNorm without running statistics cannot be fused")


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    with no_grad():
        fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                        bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1")
    fused = copy.deepcopy(linear)
    with no_grad():
        fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                          bn.eps, bn.weight, bn.bias)
    return fused
