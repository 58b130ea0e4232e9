"""Printing tensors the way torch does: ``tensor([1.0000, 2.5000], requires_grad=True)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gradviz import _dtype
from gradviz.device import CPU, to_device_array

if TYPE_CHECKING:
    from gradviz.tensor import Tensor

_PREFIX = "tensor("


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.4f}"
    absf = np.abs(finite)
    if np.all(finite == np.round(finite)) and absf.max() < 1e8:
        # Integral floats print as "1." like torch (and "-0." keeps its sign).
        width = max(len(f"{v:.0f}.") for v in finite)
        return lambda v: (_special(v) or f"{v:.0f}.").rjust(width)
    nonzero = absf[absf > 0]
    lo = nonzero.min() if nonzero.size else 0.0
    hi = absf.max()
    sci = hi >= 1e8 or (lo > 0 and (lo < 1e-4 or hi / lo > 1000.0))
    fmt = "{:.4e}" if sci else "{:.4f}"
    width = max(len(fmt.format(v)) for v in finite)
    return lambda v: (_special(v) or fmt.format(v)).rjust(width)


def _special(v: float) -> str | None:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def format_tensor(t: Tensor) -> str:
    data = to_device_array(t._data, CPU)
    if t.dtype.is_floating_point:
        fmt = _float_formatter(data.astype(np.float64).ravel())
        formatter = {"float_kind": lambda v: fmt(float(v))}
    elif t.dtype is _dtype.bool_:
        formatter = {"bool": lambda v: "True" if v else "False"}
    else:
        width = max((len(str(v)) for v in data.ravel()), default=1)
        formatter = {"int_kind": lambda v: str(v).rjust(width)}
    if data.ndim == 0:
        body = formatter[next(iter(formatter))](data.item())
    else:
        body = np.array2string(
            data, separator=", ", prefix=_PREFIX, formatter=formatter, max_line_width=80,
            threshold=1000, edgeitems=3,
        )
    if data.size == 0:
        body = "[]" if data.ndim == 1 else body
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default = _dtype.float32 if t.dtype.is_floating_point else (_dtype.int64 if t.dtype is _dtype.int64 else None)
    if data.size == 0 and t.dtype is not _dtype.float32:
        extras.append(f"size={tuple(data.shape)}")
    if t.dtype is not default and t.dtype is not _dtype.bool_:
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return _PREFIX + body + "".join(", " + e for e in extras) + ")"
