"""Summaries of torch's gradients (shape, dtype, device, norm, min, max, NaN/Inf counts, values)
as the recorder writes them, computed with torch and never through autograd.

A tensor with no values to read (a torch.func wrapper inside jacrev/vmap/grad, a meta or fake
tensor) gets no statistics: its Summary says None, and the recording goes on unchanged."""

from __future__ import annotations

import math
import threading
from typing import Any

import torch

from gradviz.torchrec.adapters import device_name, dtype_name
from gradviz.trace.summaries import VALUES_MAX, Summary, _stats_row, stats_row, values_raw

_NUMPY_FLOATS = frozenset((torch.float16, torch.float32, torch.float64))  # dtypes numpy reads as they are
_STRIDED = torch.strided
_busy = threading.local()  # set while the recorder runs its own torch ops: not the user's
BUSY = _busy  # the flag itself (.on), for a hot path that sets it without Busy()'s two calls


class Busy:
    """While set, the forward-line mode leaves the ops alone (they are the recorder's)."""

    def __enter__(self) -> None:
        _busy.on = True

    def __exit__(self, *exc: Any) -> None:
        _busy.on = False


def busy() -> bool:
    return getattr(_busy, "on", False)


def leave_thread_alone() -> None:
    """From now on the modes let every op of this thread through (a forked child's only thread,
    whose modes a user's own mode above them keeps on its stack)."""
    _busy.on = True


try:
    _is_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
except AttributeError:  # pragma: no cover - a torch without functorch
    _is_wrapped = None


def has_values(t: torch.Tensor) -> bool:
    """Whether t's values can be read: not a torch.func wrapper, not meta, not fake."""
    if t.device.type == "meta" or (_is_wrapped is not None and _is_wrapped(t)):
        return False
    return type(t) is torch.Tensor or type(t) is torch.nn.Parameter or not hasattr(t, "fake_mode")


def summary(t: torch.Tensor | None, values: bool = False) -> Summary | None:
    if t is None:
        return None
    return Summary(tuple(t.shape), dtype_name(t.dtype), device_name(t.device), stats(t),
                   _values(t) if values else None)


def fields(t: torch.Tensor, values: bool = False) -> tuple:
    """summary(t)'s shape, dtype, device, stats and values, as a tuple (no Summary made: a
    gradient's go straight into its row)."""
    return (tuple(t.shape), dtype_name(t.dtype), "cpu" if t.is_cpu else device_name(t.device), stats(t),
            _values(t) if values else None)


def stats(t: torch.Tensor) -> Any:
    """A stats row of t (trace.summaries.stats_row), None when t has no values to read.

    One element: its value (a chain's gradient, the common case). Otherwise two passes in its
    own dtype (aminmax, vector_norm): finite extremes mean nothing to count. On a detached
    tensor: nothing here enters autograd's graph."""
    try:
        if (type(t) is torch.Tensor or type(t) is torch.nn.Parameter) and t.is_cpu and t.layout is _STRIDED \
                and t.dtype in _NUMPY_FLOATS and (_is_wrapped is None or not _is_wrapped(t)):
            # a plain CPU tensor (the common case): has_values' checks in their cheapest order
            if t.numel() == 1:
                v = t.item()
                if v - v == 0.0:
                    return v
            else:
                return _stats_row(t.detach().resolve_conj().resolve_neg().numpy())
        if not has_values(t):
            return None
        if t.layout == torch.strided and t.dtype in _NUMPY_FLOATS and t.device.type == "cpu":
            if t.numel() == 1:
                v = t.item()
                if v - v == 0.0:
                    return v
            else:
                # the very summary gradviz's engine makes of its arrays (one code for both
                # engines' statistics), on a view of the tensor's memory: no copy, no dispatch
                return _stats_row(t.detach().resolve_conj().resolve_neg().numpy())
        with Busy():
            x = t.detach()
            if x.layout != torch.strided:  # sparse gradients (Embedding(sparse=True)): their values
                x = x.to_dense()
            if x.is_complex():
                x = x.real
            n = x.numel()
            if n == 0:
                return stats_row(0.0, math.nan, math.nan, 0, 0)
            if n == 1:
                v = float(x.item())
                if v - v == 0.0:
                    return v
                return stats_row(math.nan, math.nan, math.nan, 1, 0) if v != v else stats_row(math.inf, v, v, 0, 1)
            if not x.is_floating_point():
                x = x.double()
            lo, hi = torch.aminmax(x)
            vals = torch.stack([torch.linalg.vector_norm(x), lo, hi]).tolist()
            if math.isfinite(vals[1]) and math.isfinite(vals[2]):
                return stats_row(vals[0], vals[1], vals[2], 0, 0)
            nan = int(torch.isnan(x).sum())
            inf = int(torch.isinf(x).sum())
            if nan:  # min/max over the numbers that are there, as gradviz's engine reports them
                num = x[~torch.isnan(x)]
                lo_f, hi_f = (float(num.min()), float(num.max())) if num.numel() else (math.nan, math.nan)
                return stats_row(math.nan, lo_f, hi_f, nan, inf)
            return stats_row(vals[0], vals[1], vals[2], nan, inf)
    except Exception:  # noqa: BLE001 - a tensor type the summary cannot read: no stats, never a failure
        return None


def _values(t: torch.Tensor) -> Any:
    try:
        if t.numel() > VALUES_MAX or not has_values(t):
            return None
        with Busy(), torch.no_grad():
            return values_raw(t.detach().cpu().tolist())
    except Exception:  # noqa: BLE001 - as stats
        return None
