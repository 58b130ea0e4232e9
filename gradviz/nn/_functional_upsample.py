"""F.interpolate: torch 2.13's argument handling, then one of gradviz/ops/nn_upsample_ops.py's
kernels (or adaptive average pooling for mode="area")."""

from __future__ import annotations

from typing import Any

from gradviz.ops import nn_upsample_ops as U
from gradviz.tensor import Tensor

__all__ = ["interpolate"]

_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_KERNEL_DIMS = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "linear": (3,), "bilinear": (4,), "trilinear": (5,),
                "bicubic": (4,)}


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an (N, C, *spatial) tensor by ``size`` or ``scale_factor``."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scale_factors: list[float] | None
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {list(input.shape[2:])} and output size of {size}. Please provide input tensor "
                    "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                )
            if not all(isinstance(s, int) or hasattr(s, "__index__") for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(s) for s in size]}")
            output_size: list[int] | None = [int(s) for s in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                    "(s1, s2, ...,sK) format."
                )
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        assert scale_factors is not None
        output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias or mode == "lanczos":
        raise NotImplementedError(f"gradviz's interpolate has no {'antialias' if antialias else mode} mode yet "
                                  "(nearest, nearest-exact, linear, bilinear, bicubic, trilinear and area are "
                                  "implemented)")
    if mode == "area":
        if input.ndim != 4:
            raise NotImplementedError("gradviz's interpolate(mode='area') takes 4-D input only (adaptive_avg_pool2d)")
        from gradviz.nn._functional_conv import adaptive_avg_pool2d

        return adaptive_avg_pool2d(input, output_size)
    if input.ndim in _KERNEL_DIMS.get(mode, ()):
        if output_size is None:  # the kernel's own: the input size times the factor, truncated
            assert scale_factors is not None
            output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scales = scale_factors if scale_factors is not None else [None] * dim
        return U.upsample(input, mode, output_size, scales, align_corners if mode in _INTERPOLATING else None)
    for need, dims in (("linear", 3), ("bilinear", 4), ("trilinear", 5)):
        if mode == need and input.ndim in (3, 4, 5) and input.ndim != dims:
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {dims}D input")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: nearest | linear "
        f"| bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})"
    )


