"""torch.nn.functional.affine_grid and grid_sample (spatial transformers), with torch's checks,
errors and warnings; the ops and their nodes are in gradviz.ops.nn_grid_ops."""

from __future__ import annotations

import warnings
from typing import Any

from gradviz._dtype import scalar_type_name
from gradviz.ops import nn_grid_ops as G
from gradviz.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)
_MODES = {"bilinear": G.BILINEAR, "nearest": G.NEAREST, "bicubic": G.BICUBIC}
_PADDINGS = {"zeros": G.ZEROS, "border": G.BORDER, "reflection": G.REFLECTION}


def _sizes(shape: Any) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of a batch of affine matrices (N, 2, 3)
    or (N, 3, 4), for an output of ``size``: one AffineGridGeneratorBackward0 node."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {theta.shape}."
            )
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {theta.shape}."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {size}."
        )
    if align_corners and min(size[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        # torch's bmm of the (N, *, k + 1) base grid with theta says it
        k = len(size) - 2
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {k + 1}] but got: "
            f"[{theta.shape[0]}, {k + 1}]."
        )
    return G.affine_grid_generator(theta, size, bool(align_corners))


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """``input`` (N, C, H, W) sampled at ``grid`` (N, Ho, Wo, 2), coordinates in [-1, 1], or
    (N, C, D, H, W) at (N, Do, Ho, Wo, 3): one GridSampler2DBackward0 or GridSampler3DBackward0
    node. Modes bilinear (trilinear in 3-d) and nearest; bicubic is not implemented."""
    if mode not in _MODES:
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, _MODES[mode], _PADDINGS[padding_mode], bool(align_corners))


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """torch.grid_sampler: the checks of torch's check_grid_sampler_common and _2d, in order."""
    if input.device != grid.device:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to be on same device, but input is on {input.device} and grid "
            f"is on {grid.device}"
        )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{_sizes(input.shape)} and grid with sizes {_sizes(grid.shape)}"
        )
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got grid with sizes "
            f"{_sizes(grid.shape)}"
        )
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                f"{_sizes(input.shape)} with dimension {i} being empty"
            )
    # torch sends 4-d input to grid_sampler_2d and everything else to grid_sampler_3d
    want = 4 if input.ndim == 4 else 5
    if input.ndim != want or grid.ndim != want:
        raise RuntimeError(
            f"grid_sampler(): expected {want}D input and grid with same number of dimensions, but got input with "
            f"sizes {_sizes(input.shape)} and grid with sizes {_sizes(grid.shape)}"
        )
    if want == 5 and interpolation_mode == G.BICUBIC:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    name = scalar_type_name(input.dtype)
    if not input.is_floating_point():
        kernel = "grid_sampler_2d_cpu_kernel_impl" if want == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {name} but found {scalar_type_name(grid.dtype)}")
    return G.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)

