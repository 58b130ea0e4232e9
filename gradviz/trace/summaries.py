"""Tensor summaries for the recorder (shape, dtype, norm, min, max, NaN/Inf counts, values) and
the names of leaves as the user's code calls them."""

from __future__ import annotations

import math
import os
import sys
import time
from operator import attrgetter
from typing import Any

import numpy as np

from gradviz._sparse_coo import SparseCOO
from gradviz.trace import codec
from gradviz.trace import events as ev
from gradviz.trace.codec import Raw
from gradviz.trace.codec import make_stats as _make_stats

VALUES_MAX = 64  # tensors up to this many elements have their values stored when values=True
_NAN = math.nan
_NEVER = object()  # an identity no dtype or device has
_now = time.perf_counter_ns
_id_of = attrgetter("_id")


# --- tensor summaries -------------------------------------------------------------------------


def _host(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    if type(a) is SparseCOO:  # a sparse gradient: summarised dense, as torchrec summarises torch's
        return a.to_dense()
    get = getattr(a, "get", None)  # cupy arrays copy to the host with .get()
    return np.asarray(get() if callable(get) else a)


def stats_of(data: Any) -> ev.Stats:
    """norm/min/max/NaN/Inf of an array (numpy or cupy)."""
    s = _stats_row(data)
    if type(s) is float:
        return _make_stats(abs(s), s, s, 0, 0)
    return _make_stats(*s) if type(s) is tuple else s.value


def _stats_row(data: Any) -> float | tuple[float, float, float, int, int] | Raw:
    """``stats_of`` as a recorder row holds it: a plain tuple when all finite (the common case,
    which JSON takes as it is), the value itself for one finite element (format 3's shorthand
    for ``[abs(x), x, x, 0, 0]``), else a ``Raw`` with the Stats and its JSON.

    min and max in the array's own dtype (no float64 copy): NaN propagates through them and
    +-inf shows in them, so finite extremes mean a finite array and the NaN/Inf counting passes
    are skipped. The norm sums squares in float64 (squares of float32 in float32 first, which
    cannot overflow below 1e18)."""
    a = _host(data)
    n = a.size
    if n == 0:
        return _odd(0.0, _NAN, _NAN, 0, 0)
    if n == 1:  # a scalar-like gradient (every node of a chain): no lists, no numpy reductions
        x = float(a.item()) if a.dtype.kind != "c" else float(a.real.item())
        if x - x == 0.0:
            return x
        return _odd(_NAN, _NAN, _NAN, 1, 0) if x != x else _odd(math.inf, x, x, 0, 1)
    if n <= _SMALL:
        return _small_stats(a.ravel().tolist())
    f = a.ravel()
    kind = f.dtype.kind
    if kind == "b" or kind == "c":  # min/max/square of bool are not numbers; complex: by value
        f = f.astype(np.float64)
        kind = "f"
    lo, hi = float(_amin(f)), float(_amax(f))
    if lo - lo == 0.0 and hi - hi == 0.0:  # both finite (NaN and inf fail): the common case
        norm = _norm(f, max(-lo, hi))
        return (norm, lo, hi, 0, 0) if norm - norm == 0.0 else _odd(norm, lo, hi, 0, 0)
    f = f.astype(np.float64, copy=False)
    isnan = np.isnan(f)
    nans = int(np.count_nonzero(isnan))
    infs = int(np.count_nonzero(np.isinf(f)))
    if nans == n:
        return _odd(_NAN, _NAN, _NAN, nans, infs)
    norm = _NAN if nans else math.inf
    return _odd(norm, float(np.nanmin(f)), float(np.nanmax(f)), nans, infs)


def _odd(norm: float, lo: float, hi: float, nans: int, infs: int) -> Raw:
    """Stats with a NaN or an infinity: JSON needs them spelled as strings."""
    s = _make_stats(norm, lo, hi, nans, infs)
    return Raw(s, codec.stats_json(s))


_amin = np.minimum.reduce
_amax = np.maximum.reduce
_ndarray = np.ndarray


_SMALL = 16  # up to this many elements, Python floats beat numpy's per-call overhead


def _small_stats(xs: list[Any]) -> tuple[float, float, float, int, int] | Raw:
    vals = [float(x) for x in xs]
    finite = [x for x in vals if x - x == 0.0]  # NaN and +-inf fail this
    nans = sum(1 for x in vals if x != x)
    infs = len(vals) - len(finite) - nans
    if len(finite) == len(vals):
        lo, hi = min(vals), max(vals)
        norm = _norm_list(vals, max(-lo, hi))
        return (norm, lo, hi, 0, 0) if norm - norm == 0.0 else _odd(norm, lo, hi, 0, 0)
    if nans == len(vals):
        return _odd(_NAN, _NAN, _NAN, nans, 0)
    rest = [x for x in vals if x == x]
    return _odd(_NAN if nans else math.inf, min(rest), max(rest), nans, infs)


def _norm_list(vals: list[float], amax: float) -> float:
    if amax < 1e150:
        return math.sqrt(math.fsum(x * x for x in vals))
    return amax * math.sqrt(math.fsum((x / amax) ** 2 for x in vals))


def _norm(f: np.ndarray, amax: float) -> float:
    # einsum's sum of products: one pass, no temporary, and not BLAS (np.dot's thread pool costs
    # a wake-up, up to a millisecond on a busy machine, each time it is called between engine
    # steps). It sums in the array's float dtype: exact enough for a summary when the sum of
    # squares cannot overflow there; otherwise float64, scaled for huge values.
    n = f.size
    if f.dtype.kind == "f" and amax * amax * n < _SUM_MAX.get(f.dtype.itemsize, 0.0):
        # BLAS's dot (float32 or float64: _SUM_MAX's sizes), at most _DOT_ROW elements a call:
        # OpenBLAS runs a dot of up to 10,000 on the calling thread, so its pool is never woken
        # (see above). Twice einsum's speed on big arrays (a 784x256 gradient: 13 us instead of
        # 27), and a third of its fixed cost on small ones (0.5 us instead of 1.6: a small MLP's step has ten).
        if n <= _DOT_ROW:
            return math.sqrt(float(_dot(f, f)))
        if _vecdot is None:  # pragma: no cover - numpy 1.x
            return float(np.sqrt(_einsum("i,i->", f, f)))
        m = n - n % _DOT_ROW  # whole rows for vecdot, the rest by dot
        rows = (f if m == n else f[:m]).reshape(-1, _DOT_ROW)  # one view, used twice
        total = float(_add(_vecdot(rows, rows)))
        if m < n:
            rest = f[m:]
            total += float(_dot(rest, rest))
        return math.sqrt(total)
    f = f.astype(np.float64, copy=False)
    if amax < 1e150:  # squares cannot overflow
        return float(np.sqrt(_add(np.square(f))))
    g = f / amax  # scaled, so the norm of huge values stays finite when it is
    return float(amax * np.sqrt(_add(np.square(g))))


try:  # einsum's C function without numpy's Python wrapper (0.7 us a call: a stats call's tenth)
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - numpy 1.x
    try:
        from numpy.core.multiarray import c_einsum as _einsum
    except ImportError:
        _einsum = np.einsum
# below the dtype's max, with room to spare; float16 (11-bit sums) always goes the float64 way
_SUM_MAX = {4: 3e38 / 4, 8: 1.7e308 / 4}
_add = np.add.reduce
_vecdot = getattr(np, "vecdot", None)  # numpy >= 2
_DOT_ROW = 8192
_dot = np.dot


class Summary:
    """A tensor already summarised by a source that owns its values (torchrec, over torch's
    tensors): what the recorder's steps write for it, taken as it is. ``stats`` is a stats row
    (``stats_row``), None where the tensor has no values to read (a functorch wrapper, a meta or
    fake tensor): the event then says None rather than a number."""

    __slots__ = ("shape", "dtype", "device", "stats", "values")

    def __init__(self, shape: tuple[int, ...], dtype: str, device: str, stats: Any, values: Any = None):
        self.shape, self.dtype, self.device, self.stats, self.values = shape, dtype, device, stats, values


def stats_row(norm: float, lo: float, hi: float, nans: int, infs: int) -> Any:
    """A stats row (see _stats_row) from its five numbers."""
    if nans == 0 and infs == 0 and norm - norm == 0.0 and lo - lo == 0.0 and hi - hi == 0.0:
        return (norm, lo, hi, 0, 0)
    return _odd(norm, lo, hi, nans, infs)


def values_raw(v: Any) -> Raw | None:
    """Stored values (nested lists) as a row holds them."""
    return None if v is None else Raw(v, codec._encode_any(v))


def _array(x: Any) -> Any:
    """A tensor's array (tensors carry it as ``_data``); arrays pass through."""
    return getattr(x, "_data", x)


def _dtype_name(d: Any) -> str:
    name = getattr(d, "name", None)
    return name if isinstance(name, str) else str(d)


def _qualname(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(type(fn), "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# --- naming leaves --------------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CLI_DIR = os.path.join(os.path.dirname(_PKG_DIR), "cli")  # the source checkout's cli/ package


def _user_frame() -> Any:
    f = sys._getframe(2)
    while f is not None:
        fname = f.f_code.co_filename
        if not (fname.startswith(_PKG_DIR) or fname.startswith(_CLI_DIR)):
            return f
        f = f.f_back
    return None


def _name_in(frame: Any, tensor: Any) -> str | None:
    """A variable (or ``var.attr``) in the user's frame bound to ``tensor``: best effort."""
    if frame is None:
        return None
    scopes = [frame.f_locals] if frame.f_locals is not frame.f_globals else []
    scopes.append(frame.f_globals)
    for scope in scopes:
        for k, v in scope.items():
            if v is tensor and not k.startswith("_"):
                return k
    for scope in scopes[:1]:  # one level of attributes (self.weight) in locals only: cheap enough
        for k, v in scope.items():
            d = getattr(v, "__dict__", None)
            if type(d) is dict:
                for a, w in d.items():
                    if w is tensor:
                        return f"{k}.{a}"
    return None
