"""Lazy modules: LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*.

As torch's LazyModuleMixin: the parameters are UninitializedParameters until the first forward,
whose pre-hook reads the input's feature size, materializes them, runs reset_parameters (so the
initial values are drawn then, in torch's order) and turns the module into its plain class."""

from __future__ import annotations

from typing import Any

from gradviz import _dtype
from gradviz.autograd.grad_mode import no_grad
from gradviz.nn.modules.conv import Conv1d, Conv2d, Conv3d
from gradviz.nn.modules.conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from gradviz.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from gradviz.nn.modules.linear import Linear
from gradviz.nn.modules.module import Module
from gradviz.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from gradviz.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from gradviz.ops.construction import tensor
from gradviz.tensor import Tensor

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin",
]


class LazyModuleMixin:
    """Shape inference on the first call; ``cls_to_become`` is the class the module takes then."""

    cls_to_become: type | None = None

    def _register_lazy_hooks(self) -> None:
        """Called by each lazy class's __init__ once its plain class's has run."""
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def _lazy_load_hook(self, state_dict: dict, prefix: str, local_metadata: Any, strict: bool, missing_keys: list,
                        unexpected_keys: list, error_msgs: list) -> None:
        # an uninitialized parameter or buffer takes the shape of the one it loads
        for name, t in (*self._parameters.items(), *self._buffers.items()):
            key = prefix + name
            if key in state_dict and t is not None and is_lazy(t):
                incoming = state_dict[key]
                if not is_lazy(incoming):
                    with no_grad():
                        t.materialize(tuple(incoming.shape))

    def _infer_parameters(self, module: Module, args: tuple, kwargs: dict | None = None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")


class LazyLinear(LazyModuleMixin, Linear):
    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        Linear.__init__(self, 0, 0, False)
        self._register_lazy_hooks()
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    _dims = 2

    def _lazy_conv_init(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def _get_in_channels(self, input: Tensor) -> int:
        no_batch = self._dims + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batch mode) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        with no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(base: type) -> Any:
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        # the plain class with no channels and no bias: the lazy parameters replace its own
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._register_lazy_hooks()
        self._lazy_conv_init(out_channels, bias, device, dtype)

    return __init__


def _lazy_conv_transpose(base: type) -> Any:
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        self._register_lazy_hooks()
        self._lazy_conv_init(out_channels, bias, device, dtype)

    return __init__


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    _dims = 1
    cls_to_become = Conv1d
    __init__ = _lazy_conv(Conv1d)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    _dims = 2
    cls_to_become = Conv2d
    __init__ = _lazy_conv(Conv2d)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    _dims = 3
    cls_to_become = Conv3d
    __init__ = _lazy_conv(Conv3d)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    _dims = 1
    cls_to_become = ConvTranspose1d
    __init__ = _lazy_conv_transpose(ConvTranspose1d)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    _dims = 2
    cls_to_become = ConvTranspose2d
    __init__ = _lazy_conv_transpose(ConvTranspose2d)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    _dims = 3
    cls_to_become = ConvTranspose3d
    __init__ = _lazy_conv_transpose(ConvTranspose3d)


class _LazyNormBase(LazyModuleMixin):
    def _lazy_norm_init(self, affine: bool, track_running_stats: bool, device: Any, dtype: Any) -> None:
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dtype.int64)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(base: type, affine_default: bool, track_default: bool) -> Any:
    def __init__(self: Any, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = affine_default,
                 track_running_stats: bool = track_default, device: Any = None, dtype: Any = None) -> None:
        base.__init__(self, 0, eps, momentum, False, False)
        self._register_lazy_hooks()
        self._lazy_norm_init(affine, track_running_stats, device, dtype)

    return __init__


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    cls_to_become = BatchNorm1d
    __init__ = _lazy_norm(BatchNorm1d, True, True)


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    cls_to_become = BatchNorm2d
    __init__ = _lazy_norm(BatchNorm2d, True, True)


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    cls_to_become = BatchNorm3d
    __init__ = _lazy_norm(BatchNorm3d, True, True)


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    cls_to_become = InstanceNorm1d
    __init__ = _lazy_norm(InstanceNorm1d, True, True)


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    cls_to_become = InstanceNorm2d
    __init__ = _lazy_norm(InstanceNorm2d, True, True)


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    cls_to_become = InstanceNorm3d
    __init__ = _lazy_norm(InstanceNorm3d, True, True)
