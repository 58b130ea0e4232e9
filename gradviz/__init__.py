"""gradviz: an autograd engine you can watch.

``import gradviz as torch`` runs torch code that uses the implemented ops, with torch's backward
node names and execution order; ``gradviz.trace(...)`` records what the engine does.
"""

from __future__ import annotations

__version__ = "0.1.0"

from gradviz import autograd, nn
from gradviz._dtype import bool_ as bool  # noqa: A001 - torch.bool
from gradviz._dtype import double, dtype, float32, float64, int64, long
from gradviz._dtype import float as float  # noqa: A001 - torch.float
from gradviz.autograd import (
    detect_anomaly,
    enable_grad,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from gradviz.device import device
from gradviz.ops import *  # noqa: F403 - the torch-style function namespace
from gradviz.ops import functions as _functions
from gradviz.tensor import (
    Size,
    Tensor,
    arange,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    is_tensor,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)

# torch.max / torch.min / torch.abs / torch.pow etc. as functions (the star import skips builtins
# names that ruff would flag; bind them explicitly).
max = _functions.max  # noqa: A001
min = _functions.min  # noqa: A001
abs = _functions.abs  # noqa: A001
pow = _functions.pow  # noqa: A001
sum = _functions.sum  # noqa: A001

try:  # the trace layer lands separately; the core works without it
    from gradviz.trace import TraceError, load, record, trace  # noqa: F401
except ImportError:  # pragma: no cover
    pass


def cuda_is_available() -> bool:
    try:
        from gradviz.device import cupy_or_error

        cupy_or_error()
        return True
    except RuntimeError:
        return False


class cuda:  # noqa: N801 - torch.cuda namespace
    is_available = staticmethod(cuda_is_available)

# --- corpus: gradviz standing in for torch (gradviz/_as_torch.py) ---
from gradviz._as_torch import as_torch, install_as_torch, uninstall_as_torch  # noqa: E402
