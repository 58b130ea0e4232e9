"""torch.nn.utils.skip_init: a module built without initialising its parameters."""

from __future__ import annotations

import inspect
from typing import Any

from gradviz.nn.modules.module import Module
from gradviz.random import get_rng_state, set_rng_state

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)`` whose parameters hold unspecified values. torch builds it on
    the meta device and allocates the storage after; gradviz builds it as usual, its initial draws
    taken back out of the generator, so that the random stream continues as torch's does."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    state = get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        set_rng_state(state)
