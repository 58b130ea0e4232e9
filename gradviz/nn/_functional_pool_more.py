"""torch.nn.functional's other pooling (1-d and 3-d, adaptive max, power-average, unpooling),
fold/unfold, and what torch builds of other ops in Python or ATen (lp_pool, local_response_norm,
rms_norm, the 1-d forms through their 2-d kernels), with torch's graphs."""

from __future__ import annotations

import warnings
from typing import Any

from gradviz._finfo import finfo
from gradviz.nn._functional_conv import adaptive_avg_pool2d, avg_pool2d, max_pool1d, max_pool2d
from gradviz.nn._functional_pad import pad
from gradviz.nn._functional_upsample import interpolate
from gradviz.ops import functions as F
from gradviz.ops import nn_conv_ops as C
from gradviz.ops import nn_im2col_ops as _im2col
from gradviz.ops import nn_pool_nd_ops as P
from gradviz.random._api import rand
from gradviz.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "assert_int_or_pair", "avg_pool1d", "avg_pool3d", "fold",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "local_response_norm", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "rms_norm", "unfold", "upsample", "upsample_bilinear", "upsample_nearest",
]


def _tuple(v: Any, n: int) -> tuple:
    return C._pair(v, n)


def _stride(stride: Any, kernel: tuple, n: int) -> tuple:
    return kernel if stride is None or stride in ([], ()) else _tuple(stride, n)


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)


# -- 1-d forms: torch unsqueezes, runs the 2-d kernel, squeezes ------------------------------------


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"avg_pool1d() Expected 2D or 3D input tensor, but got {list(input.shape)}")
    k = _tuple(kernel_size, 1)[0]
    s = _stride(stride, (k,), 1)[0]
    p = _tuple(padding, 1)[0]
    out = avg_pool2d(F.unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return F.squeeze(out, -2)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    size = _tuple(output_size, 1)[0]
    return F.squeeze(adaptive_avg_pool2d(F.unsqueeze(input, -2), (1, size)), -2)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: {list(input.shape)}")
    size = _tuple(output_size, 1)[0]
    out, idx = P.adaptive_max_pool(F.unsqueeze(input, -2), (1, size))
    return F.squeeze(out, -2), F.squeeze(idx, -2)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def _output_size(output_size: Any, n: int) -> tuple:
    if isinstance(output_size, (tuple, list)):
        return tuple(output_size)
    return (output_size,) * n


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return P.adaptive_max_pool(input, _output_size(output_size, 2))


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return P.adaptive_max_pool(input, _output_size(output_size, 3))


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    size = _output_size(output_size, 3)
    if size == (1, 1, 1):  # ATen's shortcut, as for 2-d: a mean (MeanBackward1)
        return F.mean(input, (-1, -2, -3), keepdim=True)
    return P.adaptive_avg_pool3d(input, size)


# -- 3-d pooling ---------------------------------------------------------------------------------


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    if input.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    k = _tuple(kernel_size, 3)
    s = _stride(stride, k, 3)
    p, d = _tuple(padding, 3), _tuple(dilation, 3)
    if any(pp > kk // 2 for pp, kk in zip(p, k)):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kD={k[0]} "
                           f"kH={k[1]} kW={k[2]} padD={p[0]} padH={p[1]} padW={p[2]}")
    return P.max_pool_nd(input, k, s, p, d, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    if input.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    k = _tuple(kernel_size, 3)
    return P.avg_pool3d(input, k, _stride(stride, k, 3), _tuple(padding, 3), ceil_mode, count_include_pad,
                        divisor_override)


# -- power-average pooling: torch's Python ---------------------------------------------------------


def _lp_finish(out: Tensor, kernel_numel: int, norm_type: float) -> Tensor:
    return F.pow(F.mul(F.mul(F.sign(out), F.relu(F.abs(out))), kernel_numel), 1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    out = avg_pool1d(F.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, kernel_size, norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    kw, kh = _tuple(kernel_size, 2)
    k = _tuple(kernel_size, 2)
    out = avg_pool2d(F.pow(input, norm_type), k, stride, 0, ceil_mode)
    return _lp_finish(out, kw * kh, norm_type)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    kd, kw, kh = _tuple(kernel_size, 3)
    out = avg_pool3d(F.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, kd * kw * kh, norm_type)


# -- unpooling -----------------------------------------------------------------------------------


def _unpool_output_size(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, output_size: Any) -> list:
    n = len(kernel)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return list(output_size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    k = _tuple(kernel_size, 1)
    s = _stride(stride, k, 1)
    size = _unpool_output_size(input, k, s, _tuple(padding, 1), output_size) + [1]
    return F.squeeze(P.max_unpool(F.unsqueeze(input, -1), F.unsqueeze(indices, -1), tuple(size)), -1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    k = _tuple(kernel_size, 2)
    s = _stride(stride, k, 2)
    return P.max_unpool(input, indices, tuple(_unpool_output_size(input, k, s, _tuple(padding, 2), output_size)))


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    k = _tuple(kernel_size, 3)
    s = _stride(stride, k, 3)
    return P.max_unpool(input, indices, tuple(_unpool_output_size(input, k, s, _tuple(padding, 3), output_size)))


# -- fold / unfold -------------------------------------------------------------------------------


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    return _im2col.im2col(input, _tuple(kernel_size, 2), _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2))


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.ndim}D)")
    return _im2col.col2im(input, _tuple(output_size, 2), _tuple(kernel_size, 2), _tuple(dilation, 2),
                          _tuple(padding, 2), _tuple(stride, 2))


# -- normalisations built of other ops -------------------------------------------------------------


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Each element over the average of the squares of its ``size`` neighbouring channels."""
    dim = input.ndim
    if dim < 3:
        # torch's message, with the indentation of its source's line break
        raise ValueError(f"Expected 3D or higher dimensionality{' ' * 26}input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = F.mul(input, input)
    if dim == 3:
        div = F.unsqueeze(div, 1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = F.squeeze(avg_pool2d(div, (size, 1), stride=1), 1)
    else:
        sizes = tuple(input.shape)
        div = F.view(div, sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = F.squeeze(avg_pool3d(div, (size, 1, 1), stride=1), 1)
        div = F.view(div, *sizes)
    div = F.pow(F.add(F.mul(div, alpha), k), beta)
    return F.div(input, div)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last dims, times weight: ATen's composite (pow, mean,
    add, rsqrt, mul)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if tuple(input.shape[input.ndim - n:]) != shape or input.ndim < n:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*"
            + ", ".join(str(s) for s in shape) + f"], but got input of size{list(input.shape)}"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    if eps is None:
        eps = finfo(input.dtype).eps
    dims = tuple(range(-1, -n - 1, -1))
    rstd = F.rsqrt(F.add_scalar(F.mean(F.pow(input, 2), dims, keepdim=True), eps))
    out = F.mul(input, rstd)
    return F.mul(out, weight) if weight is not None else out


# -- deprecated upsampling names ---------------------------------------------------------------


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- fractional max pooling: windows placed by random samples (torch.rand, as torch draws them) --


def _fractional(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any, random_samples: Any,
                nd: int) -> tuple[Tensor, Tensor]:
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > nd:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        output_size = [int(input.shape[-nd + d] * ratio[d]) for d in range(nd)]
    if random_samples is None:
        n_batch = 1 if input.ndim == nd + 1 else input.shape[0]
        random_samples = rand(n_batch, input.shape[-nd - 1], nd, dtype=input.dtype, device=input.device)
    return P.fractional_max_pool(input, _tuple(kernel_size, nd), _tuple(output_size, nd), random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, idx) if return_indices else out
