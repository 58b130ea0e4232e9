"""Three tensor functions, nonzero_static, histogramdd and gradient (central differences as torch
composes them: CatBackward0 over DivBackward1 nodes), and Tensor.module_load."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz.ops import arith as _arith
from gradviz.ops import shape as _shape
from gradviz.ops._common import _new, _wrap_dim
from gradviz.tensor import Tensor

__all__ = ["gradient", "histogramdd", "nonzero_static"]  # torch's names (gradviz.ops.functions builds the namespace)


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
