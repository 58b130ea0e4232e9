"""ConvTranspose1d, ConvTranspose2d and ConvTranspose3d, with torch's weight layout and default initialisation."""

from __future__ import annotations

from typing import Any

from gradviz.nn import functional as F
from gradviz.nn.modules.conv import _ConvNd
from gradviz.tensor import Tensor

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvTransposeNd(_ConvNd):
    _dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        # torch refuses another padding mode here, before the checks the convolutions share
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, transposed=True, output_padding=output_padding)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:
        """output_padding, or the one that gives ``output_size`` (torch's check and message)."""
        n = self._dims
        if output_size is None:
            return self.output_padding
        non_spatial = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or {non_spatial + n} "
                f"elements (got {len(output_size)})"
            )
        mins = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        maxs = [m + self.stride[d] - 1 for d, m in enumerate(mins)]
        for size, lo, hi in zip(output_size, mins, maxs):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from {mins} to {maxs} "
                    f"(for an input of torch.Size({list(input.shape[non_spatial:])}))"
                )
        return tuple(size - lo for size, lo in zip(output_size, mins))


class ConvTranspose1d(_ConvTransposeNd):
    _dims = 1

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    _dims = 2

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    _dims = 3

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)
