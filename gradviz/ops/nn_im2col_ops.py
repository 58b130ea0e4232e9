"""im2col and col2im (nn.functional.unfold and fold), each the other's backward: Im2ColBackward0
and Col2ImBackward0, as torch records them."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__: list[str] = []


def _blocks(size: tuple, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> tuple[int, int]:
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, d, p, st in zip(size, kernel, dilation, padding, stride))  # type: ignore[return-value]


def _im2col_arrays(x: np.ndarray, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> np.ndarray:
    n, c, h, w = x.shape
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    oh, ow = _blocks((h, w), kernel, dilation, padding, stride)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
    return cols.reshape(n, c * kh * kw, oh * ow)


def _col2im_arrays(cols: np.ndarray, size: tuple, kernel: tuple, dilation: tuple, padding: tuple,
                   stride: tuple) -> np.ndarray:
    h, w = size
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    oh, ow = _blocks((h, w), kernel, dilation, padding, stride)
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += blocks[:, :, i, j]
    return out[:, :, ph:ph + h, pw:pw + w]


def _batched(t: Tensor, dims: int) -> tuple[np.ndarray, bool]:
    x = t._data
    return (x[None], True) if x.ndim == dims else (x, False)


def im2col(input: Tensor, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> Tensor:
    """(N, C, H, W) -> (N, C*kh*kw, L): each sliding block as a column."""
    x, unbatched = _batched(input, 3)
    cols = _im2col_arrays(x, kernel, dilation, padding, stride)
    out = _out(cols[0] if unbatched else cols, input)
    if _grad_state.enabled and _requires(input):
        record(_IM2COL, (input,), [out], {"size": x.shape[-2:], "args": (kernel, dilation, padding, stride),
                                          "unbatched": unbatched})
    return out


def _im2col_grad(n: Any, g: Tensor) -> Tensor:
    gd = g._data[None] if n.saved["unbatched"] else g._data
    dx = _col2im_arrays(gd, n.saved["size"], *n.saved["args"])
    return _out(np.ascontiguousarray(dx[0] if n.saved["unbatched"] else dx), g)


_IM2COL = _register("im2col", D("Im2ColBackward0", (_im2col_grad,)))


def col2im(input: Tensor, output_size: tuple, kernel: tuple, dilation: tuple, padding: tuple,
           stride: tuple) -> Tensor:
    """(N, C*kh*kw, L) -> (N, C, H, W): the columns summed back into place."""
    x, unbatched = _batched(input, 2)
    kk = kernel[0] * kernel[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size={tuple(kernel)}.")
    bh, bw = _blocks(output_size, kernel, dilation, padding, stride)
    if x.shape[2] != bh * bw:
        raise RuntimeError(
            f"Given output_size={tuple(output_size)}, kernel_size={tuple(kernel)}, dilation={tuple(dilation)}, "
            f"padding={tuple(padding)}, stride={tuple(stride)}, expected size of input's dimension 2 to match the "
            f"calculated number of sliding blocks {bh} * {bw} = {bh * bw}, but got input.size(2)={x.shape[2]}."
        )
    out_data = np.ascontiguousarray(_col2im_arrays(x, output_size, kernel, dilation, padding, stride))
    out = _out(out_data[0] if unbatched else out_data, input)
    if _grad_state.enabled and _requires(input):
        record(_COL2IM, (input,), [out], {"args": (kernel, dilation, padding, stride), "unbatched": unbatched})
    return out


def _col2im_grad(n: Any, g: Tensor) -> Tensor:
    gd = g._data[None] if n.saved["unbatched"] else g._data
    cols = _im2col_arrays(gd, *n.saved["args"])
    return _out(cols[0] if n.saved["unbatched"] else cols, g)


_COL2IM = _register("col2im", D("Col2ImBackward0", (_col2im_grad,)))
