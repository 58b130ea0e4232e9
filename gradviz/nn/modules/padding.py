"""torch.nn's padding modules: ConstantPad1d/2d, ZeroPad2d, ReflectionPad1d/2d and
ReplicationPad1d/2d, thin wrappers of F.pad that print as torch prints them."""

from __future__ import annotations

from typing import Any

from gradviz.nn import functional as F
from gradviz.nn.modules.module import Module
from gradviz.tensor import Tensor

__all__ = [
    "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "ZeroPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "ReflectionPad3d", "ReplicationPad3d",
]


def _ntuple(padding: Any, n: int) -> tuple:
    # torch's _pair/_quadruple: an int repeats, anything iterable is kept as given
    if isinstance(padding, int):
        return (padding,) * n
    return tuple(padding)


class _ConstantPadNd(Module):
    _n = 2

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._n)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _n = 2


class ConstantPad2d(_ConstantPadNd):
    _n = 4


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ModePadNd(Module):
    _n = 2
    _mode = "reflect"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    _n = 2


class ReflectionPad2d(_ModePadNd):
    _n = 4


class ReplicationPad1d(_ModePadNd):
    _n = 2
    _mode = "replicate"


class ReplicationPad2d(_ModePadNd):
    _n = 4
    _mode = "replicate"


class ConstantPad3d(_ConstantPadNd):
    _n = 6


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class CircularPad1d(_ModePadNd):
    _n = 2
    _mode = "circular"


class CircularPad2d(_ModePadNd):
    _n = 4
    _mode = "circular"


class CircularPad3d(_ModePadNd):
    _n = 6
    _mode = "circular"


class ReflectionPad3d(_ModePadNd):
    _n = 6


class ReplicationPad3d(_ModePadNd):
    _n = 6
    _mode = "replicate"
