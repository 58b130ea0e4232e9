"""torch.cuda.amp: the deprecated spellings of torch.amp's autocast and GradScaler for CUDA."""

from __future__ import annotations

import warnings
from typing import Any


def autocast(enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> Any:
    from gradviz.amp import autocast as _autocast

    warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` "
                  "instead.", FutureWarning, stacklevel=2)
    return _autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def GradScaler(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - torch's class name
    from gradviz.amp import GradScaler as _GradScaler

    warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', "
                  "args...)` instead.", FutureWarning, stacklevel=2)
    return _GradScaler("cuda", *args, **kwargs)
