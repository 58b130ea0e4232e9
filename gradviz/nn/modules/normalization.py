"""LayerNorm, BatchNorm1d, BatchNorm2d and GroupNorm."""

from __future__ import annotations

from typing import Any

from gradviz import _dtype
from gradviz.autograd.grad_mode import no_grad
from gradviz.nn import functional as F
from gradviz.nn import init
from gradviz.nn.modules._functions import CrossMapLRN2d as _cross_map_lrn2d
from gradviz.nn.modules.module import Module
from gradviz.nn.parameter import Parameter
from gradviz.ops.construction import empty, ones, tensor, zeros
from gradviz.tensor import Tensor

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm",
           "RMSNorm", "SyncBatchNorm"]


def _affine_parameters(m: Module, shape: tuple, affine: bool, bias: bool, dtype: Any, device: Any) -> None:
    """A normalization's weight and bias of ``shape``, or None where it has none, as torch registers
    them (LayerNorm, GroupNorm)."""
    if affine:
        m.weight = Parameter(empty(*shape, dtype=dtype, device=device))
        if bias:
            m.bias = Parameter(empty(*shape, dtype=dtype, device=device))
        else:
            m.register_parameter("bias", None)
    else:
        m.register_parameter("weight", None)
        m.register_parameter("bias", None)


def _reset_affine(m: Module, affine: bool) -> None:
    if affine:
        init.ones_(m.weight)
        if m.bias is not None:
            init.zeros_(m.bias)


class LayerNorm(Module):
    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self, self.elementwise_affine)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share, as torch's _NormBase: the affine parameters, the
    running statistics as buffers (or None), their resets and the printed form."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, (num_features,), affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, bn_training, factor, self.eps)



class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics are synchronised across processes; gradviz runs one process,
    where it is BatchNorm over the local batch (as torch's on one process without a group)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Every BatchNorm*d of ``module`` replaced by a SyncBatchNorm holding its parameters and buffers."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class RMSNorm(Module):
    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of a 4-d input, by torch's autograd Function."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return _cross_map_lrn2d.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self, self.affine)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
