"""torch.nn.parallel for gradviz (stubs from the rng/device work; the nn package owns the rest).

DataParallel on a machine without GPUs wraps the module and calls it, as torch's does there.
DistributedDataParallel needs a process group, which gradviz never has: it raises torch's error.
"""

from __future__ import annotations

from typing import Any

import gradviz.nn as _nn

_Module: Any = getattr(_nn, "Module", object)


class DataParallel(_Module):  # type: ignore[misc, valid-type]
    def __init__(self, module: Any, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        if _Module is not object:
            super().__init__()
        self.module = module
        self.device_ids: list[int] = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)

    if _Module is object:  # no gradviz.nn.Module yet: be callable on our own

        def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
            return self.forward(*inputs, **kwargs)


class DistributedDataParallel(_Module):  # type: ignore[misc, valid-type]
    def __init__(self, module: Any, *args: Any, **kwargs: Any) -> None:
        from gradviz.distributed import _NO_GROUP

        raise ValueError(_NO_GROUP)


def data_parallel(module: Any, inputs: Any, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                  module_kwargs: Any = None) -> Any:
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))


__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
