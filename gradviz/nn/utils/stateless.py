"""torch.nn.utils.stateless.functional_call: torch.func.functional_call under its pre-2.0 name,
with torch's deprecation warning."""

from __future__ import annotations

import warnings
from typing import Any

from gradviz.func.functional_call import functional_call as _functional_call
from gradviz.tensor import Tensor

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` computed with the given tensors in place of its parameters and
    buffers of those names (deprecated: torch.func.functional_call)."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
        "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
        "replacement.", FutureWarning, stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
