"""torch.nn.utils' convert_conv2d/3d_weight_memory_format: the weights of every convolution
under a module laid out in a memory format (channels_last...), as torch's."""

from __future__ import annotations

from typing import Any

from gradviz.nn.modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Module, memory_format: Any, kinds: tuple[str, ...]) -> Module:
    if type(module).__name__ in kinds:
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    return _convert(module, memory_format, ("Conv2d", "ConvTranspose2d"))


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    return _convert(module, memory_format, ("Conv3d", "ConvTranspose3d"))
