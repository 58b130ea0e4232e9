"""torch's symbolic-shape helpers on plain numbers (sym_int, sym_max, ...), its error classes,
memory formats, torch.DisableTorchFunction, and two tensor functions: nonzero_static and
gradient (central differences as torch composes them: CatBackward0 over DivBackward1 nodes)."""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype, _format
from gradviz.autograd.grad_mode import anomaly as _anomaly
from gradviz.ops import arith as _arith
from gradviz.ops import construction as _construction
from gradviz.ops import shape as _shape
from gradviz.ops._common import _new, _wrap_dim
from gradviz.tensor import Tensor

__all__ = [  # torch's names (gradviz.ops.functions builds the namespace)
    "empty_permuted", "frombuffer", "histogramdd", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "set_default_tensor_type", "set_printoptions",
    "AcceleratorError", "DisableTorchFunction", "DisableTorchFunctionSubclass", "FatalError", "JITException",
    "OutOfMemoryError", "channels_last", "channels_last_3d", "contiguous_format", "gradient", "memory_format",
    "nonzero_static", "preserve_format", "sym_constrain_range", "sym_constrain_range_for_size", "sym_float",
    "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
]


# -- symbolic shapes, on plain Python numbers (nothing here is traced) ---------------------------------
def sym_int(a: Any) -> int:
    return math.trunc(a)


def sym_float(a: Any) -> float:
    return float(a)


def sym_max(a: Any, b: Any) -> Any:
    return builtins.max(a, b)


def sym_min(a: Any, b: Any) -> Any:
    return builtins.min(a, b)


def sym_not(a: Any) -> bool:
    return not a


def sym_sqrt(a: Any) -> float:
    return math.sqrt(a)


def sym_sum(args: Sequence[Any]) -> Any:
    return builtins.sum(args)


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    return t if b else f


def sym_constrain_range(size: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """A bound for torch.compile's shape reasoning: a plain number has nothing to constrain."""
    return None


def sym_constrain_range_for_size(size: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    return None


# -- errors and contexts -------------------------------------------------------------------------------
class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (a RuntimeError): an allocation that did not fit."""


class AcceleratorError(RuntimeError):
    """torch.AcceleratorError (a RuntimeError): an error from an accelerator's runtime."""


class FatalError(Exception):
    """torch.FatalError."""


class JITException(Exception):
    """torch.JITException (torch.jit.Error)."""


class DisableTorchFunction:
    """torch.DisableTorchFunction: gradviz has no __torch_function__ dispatch to disable."""

    def __enter__(self) -> DisableTorchFunction:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class DisableTorchFunctionSubclass(DisableTorchFunction):
    """torch.DisableTorchFunctionSubclass (see DisableTorchFunction)."""


class memory_format:  # noqa: N801 - torch's name
    """torch.memory_format: how a tensor's dims are laid out in memory."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


# -- tensor functions ----------------------------------------------------------------------------------
def nonzero_static(a: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero's indices, cut or padded (with fill_value) to exactly ``size`` rows."""
    idx = np.argwhere(a._data)
    out = np.full((size, a.ndim), fill_value, dtype=np.int64)
    n = builtins.min(size, len(idx))
    out[:n] = idx[:n]
    return _new(out, a.device)


def gradient(a: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """Derivative estimates along each dim: central differences inside, one-sided (edge_order 1
    or 2) at the ends, as torch composes them (CatBackward0 of three DivBackward1)."""
    dims = list(range(a.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(d, a.ndim) for d in dims]
    if isinstance(spacing, (list, tuple)):
        if builtins.any(isinstance(s, Tensor) for s in spacing):
            raise NotImplementedError("gradviz has no torch.gradient with coordinate tensors as spacing")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    if len(steps) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(steps)} "
                           f"and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    out = []
    for d, h in zip(dims, steps, strict=True):
        n = a.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")

        def sl(start: int, stop: int | None, d: int = d, n: int = n) -> Tensor:
            return _shape.narrow(a, d, start % n if start < 0 else start,
                                 (n if stop is None else stop % n if stop < 0 else stop) - (start % n if start < 0
                                                                                             else start))
        center = _arith.div_scalar(_arith.sub(sl(2, None), sl(0, -2)), h)
        if edge_order == 1:
            pre = _arith.div_scalar(_arith.sub(sl(1, 2), sl(0, 1)), h)
            app = _arith.div_scalar(_arith.sub(sl(-1, None), sl(-2, -1)), h)
        else:
            pre = _arith.div_scalar(_arith.sub(_arith.add(_arith.mul_scalar(sl(0, 1), -1.5),
                                                          _arith.mul_scalar(sl(1, 2), 2)),
                                               _arith.mul_scalar(sl(2, 3), 0.5)), h)
            app = _arith.div_scalar(_arith.add(_arith.sub(_arith.mul_scalar(sl(-3, -2), 0.5),
                                                          _arith.mul_scalar(sl(-2, -1), 2)),
                                               _arith.mul_scalar(sl(-1, None), 1.5)), h)
        out.append(_shape.cat([pre, _arith.div_scalar(center, 2), app], d))
    return tuple(out)


# -- process-wide settings -----------------------------------------------------------------------------
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """torch's print options: a profile ("default", "short", "full") then any single option."""
    if sci_mode is not None:
        raise NotImplementedError("gradviz has no torch.set_printoptions(sci_mode=...): scientific notation is chosen "
                                  "from the values, as torch's default")
    if profile is not None:
        _format.PRECISION, _format.THRESHOLD, _format.EDGEITEMS, _format.LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        _format.PRECISION = precision
    if threshold is not None:
        _format.THRESHOLD = threshold
    if edgeitems is not None:
        _format.EDGEITEMS = edgeitems
    if linewidth is not None:
        _format.LINEWIDTH = linewidth


def set_default_tensor_type(t: Any) -> None:
    """The legacy way to set the default float dtype: by a typed class or its name (deprecated)."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    base = name.rsplit(".", 1)[-1]
    by_name = {"FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64, "HalfTensor": _dtype.float16,
               "BFloat16Tensor": _dtype.bfloat16}
    if base not in by_name:
        raise TypeError(f"only floating-point types are supported as the default type (got {name})")
    _dtype.set_default_dtype(by_name[base])


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    _anomaly.enabled, _anomaly.check_nan = bool(enabled), check_nan


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly.check_nan


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-dim tensor over an object exposing the buffer protocol (sharing its memory)."""
    data = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    out = _construction.from_numpy(data) if data.flags.writeable else _new(data, None)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False, **_: Any) -> Tensor:
    """An uninitialised (zero) tensor of ``size`` whose dims lie in memory in ``physical_layout`` order."""
    size = tuple(size)
    phys = np.zeros(tuple(size[i] for i in physical_layout), dtype=(dtype or _dtype._default[0]).np)
    inverse = np.argsort(physical_layout)
    out = _new(np.transpose(phys, inverse), None)
    return out.requires_grad_(True) if requires_grad else out


class _HistogramDD(tuple):
    @property
    def hist(self) -> Tensor:
        return self[0]

    @property
    def bin_edges(self) -> tuple[Tensor, ...]:
        return self[1]


def histogramdd(input: Tensor, bins: Any = 10, *, range: Sequence[float] | None = None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False) -> _HistogramDD:
    """numpy's histogramdd over the last dim's coordinates, in input's dtype: (hist, bin_edges)."""
    pts = input._data.reshape(-1, input.shape[-1])
    b = [x._data for x in bins] if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor) else bins
    rng = None if range is None else [(range[2 * i], range[2 * i + 1]) for i in builtins.range(len(range) // 2)]
    hist, edges = np.histogramdd(pts, bins=b, range=rng, weights=None if weight is None else weight._data.reshape(-1),
                                 density=density)
    dt = input._data.dtype
    return _HistogramDD((_new(np.asarray(hist, dtype=dt), input.device),
                         tuple(_new(np.asarray(e, dtype=dt), input.device) for e in edges)))


def _module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """How load_state_dict turns ``other`` into self's value: a copy into self, or other itself."""
    if assign:
        return other.detach()
    from_copy = self.copy_(other)
    return from_copy.detach()


METHODS: dict[str, Any] = {"module_load": _module_load, "grad_dtype": property(lambda self: self.dtype)}
