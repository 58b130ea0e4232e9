"""torch.fft without complex dtypes: what gives a real result from a real input (irfft, irfft2,
irfftn, hfft), the sample frequencies (fftfreq, rfftfreq) and the shifts (fftshift, ifftshift).

gradviz has no complex dtypes, so the transforms whose result is complex (fft, rfft, ifft, ...)
say so in one line. A real input to irfft is, in torch, first made complex (ToCopyBackward0),
resized to n // 2 + 1 along the last dim (SliceBackward0 or ConstantPadNdBackward0) and, for
hfft, conjugated (ConjBackward0), before the complex-to-real transform (FftC2RBackward0). Its
imaginary part is zero all along, so here those intermediates hold their real part exactly, and
the graph has torch's nodes: the complex gradient's real part is what reaches the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gradviz import _dtype
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops import construction as _construction
from gradviz.ops import indexing as _indexing
from gradviz.ops import nn_pad_ops as _nn_pad_ops
from gradviz.ops import shape as _shape
from gradviz.ops._common import NODES, _new, _wrap_dim, register
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.tensor import Tensor

__all__: list[str] = []  # (torch.fft's names live in gradviz/fft.py)

_NORMS = (None, "backward", "forward", "ortho")


def _check_norm(norm: str | None) -> None:
    if norm not in _NORMS:
        raise ValueError(f"Invalid normalization mode: {norm}")


def _scale(norm: str | None, n: int, forward: bool) -> float:
    """The factor torch's normalization mode puts on a transform of n points (forward or inverse)."""
    mode = norm or "backward"
    if mode == "ortho":
        return 1 / np.sqrt(n)
    if (mode == "backward") != forward:  # the inverse under "backward", the forward under "forward"
        return 1.0 / n
    return 1.0


def _complex_to_real_prep(x: Tensor, dims: list[int], last: int, conj: bool) -> Tensor:
    """torch's steps before _fft_c2r on a real input: to complex (ToCopyBackward0), the last dim
    resized to ``last`` (SliceBackward0 / ConstantPadNdBackward0), conj for hfft (ConjBackward0)."""
    if not x.dtype.is_floating_point:
        x = _shape_float(x)
    y = _new(x._data.copy(), x.device)
    if _grad_state.enabled and x._tracked:
        record(NODES["to_copy"], (x,), [y], {"dtype": x.dtype, "device": x.device})
    d = dims[-1]
    size = y.shape[d]
    if size > last:
        y = _indexing.getitem(y, (slice(None),) * d + (slice(0, last),))
    elif size < last:
        pad = [0, 0] * (y.ndim - d - 1) + [0, last - size]
        y = _constant_pad(y, pad)
    if conj:
        c = _new(y._data.copy(), y.device)
        if _grad_state.enabled and y._tracked:
            record(NODES["conj"], (y,), [c], {})
        y = c
    return y


def _shape_float(x: Tensor) -> Tensor:
    return _new(x._data.astype(_dtype._default[0].np), x.device)


def _constant_pad(y: Tensor, pad: list[int]) -> Tensor:
    return _nn_pad_ops.constant_pad_nd(y, tuple(pad))


def _c2r(name: str, x: Tensor, s: Sequence[int] | None, dims: Sequence[int], norm: str | None,
         forward: bool) -> Tensor:
    _check_norm(norm)
    dims = [_wrap_dim(d, x.ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{name} dims must be unique")
    sizes = list(s) if s is not None else [x.shape[d] for d in dims[:-1]] + [2 * (x.shape[dims[-1]] - 1)]
    if sizes[-1] < 1:
        raise RuntimeError(f"Invalid number of data points ({sizes[-1]}) specified")
    y = _complex_to_real_prep(x, dims, sizes[-1] // 2 + 1, forward)
    # the other dims resized to s as well (torch's resize_fft_input)
    for d, n in zip(dims[:-1], sizes[:-1], strict=True):
        if y.shape[d] > n:
            y = _indexing.getitem(y, (slice(None),) * d + (slice(0, n),))
        elif y.shape[d] < n:
            y = _constant_pad(y, [0, 0] * (y.ndim - d - 1) + [0, n - y.shape[d]])
    total = int(np.prod(sizes))
    # numpy's inverse transform is scaled by 1/n; undo that and apply torch's mode
    data = np.fft.irfftn(y._data.astype(np.complex128), s=sizes, axes=dims) * total * _scale(norm, total, forward)
    out = _new(np.ascontiguousarray(data).astype(y._data.dtype), y.device)
    if _grad_state.enabled and y._tracked:
        record(NODES["fft_c2r"], (y,), [out], {"dims": dims, "sizes": sizes, "scale": _scale(norm, total, forward),
                                               "in_last": y.shape[dims[-1]]})
    return out


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    return _c2r("irfft", input, None if n is None else [n], [dim], norm, False)


def irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),  # noqa: A002
           norm: str | None = None) -> Tensor:
    return _c2r("irfft2", input, s, dim, norm, False)


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,  # noqa: A002
           norm: str | None = None) -> Tensor:
    if dim is None:
        dim = list(range(input.ndim)) if s is None else list(range(input.ndim - len(s), input.ndim))
    return _c2r("irfftn", input, s, dim, norm, False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The FFT of a Hermitian-symmetric signal given by its first half (a real result)."""
    return _c2r("hfft", input, None if n is None else [n], [dim], norm, True)


def _fftfreq(n: int, d: float, rfft: bool, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    data = np.fft.rfftfreq(n, d) if rfft else np.fft.fftfreq(n, d)
    dt = dtype or _dtype._default[0]
    out = _construction.tensor(data.astype(dt.np), dtype=dt, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False, out: Any = None) -> Tensor:
    return _fftfreq(n, d, False, dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False, out: Any = None) -> Tensor:
    return _fftfreq(n, d, True, dtype, device, requires_grad)


def _shift(x: Tensor, dim: Any, inverse: bool) -> Tensor:
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(d, x.ndim) for d in dims]
    shifts = [(x.shape[d] + 1) // 2 if inverse else x.shape[d] // 2 for d in dims]
    return _shape.roll(x, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """The zero frequency moved to the middle (a roll: RollBackward0)."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    return _shift(input, dim, True)


# -- backward ------------------------------------------------------------------------------------------
def _c2r_grad(n, g):
    """torch's fft_c2r_backward: the one-sided forward transform of g (same normalization), its
    middle entries doubled (they stand for two conjugate ones); the real part, as the input is."""
    dims, sizes, scale = n["dims"], n["sizes"], n["scale"]
    gi = np.fft.rfftn(g._data.astype(np.float64), s=sizes, axes=dims) * scale
    last = dims[-1]
    double = sizes[-1] - gi.shape[last]
    if double > 0:
        idx = [slice(None)] * gi.ndim
        idx[last] = slice(1, 1 + double)
        gi[tuple(idx)] *= 2
    return _new(np.ascontiguousarray(gi.real).astype(g._data.dtype), g.device)


ROWS: dict[str, D] = {
    "fft_c2r": D("FftC2RBackward0", (_c2r_grad,)),
    "conj": D("ConjBackward0", (lambda n, g: g,)),
}
register(ROWS)
