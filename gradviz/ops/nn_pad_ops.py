"""torch's padding kernels (constant_pad_nd, reflection_pad{1,2,3}d, replication_pad{1,2,3}d),
the circular padding torch composes of slices and copies, and at::norm(Tensor, p, dim) as
pairwise_distance calls it (NormBackward1, where Python's torch.norm gives the linalg node)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.autograd.grad_mode import no_grad
from gradviz.device import add_at, array_module
from gradviz.ops import reductions as _reductions
from gradviz.ops import shape as _shape
from gradviz.ops.core import AUTO_REDUCTION as RED
from gradviz.ops.core import AUTO_TRANSPOSE as TR
from gradviz.ops.core import Derivative as D
from gradviz.ops.core import record, save
from gradviz.ops.inplace_write import old_edge_holder
from gradviz.ops.nn_ops import _out, _register, _requires
from gradviz.tensor import Tensor

__all__ = ["circular_pad", "constant_pad_nd", "norm_dim", "reflection_pad", "replication_pad"]

_NON_CONSTANT_HELP = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


# -- constant ----------------------------------------------------------------------------------


def _crop_key(shape: tuple[int, ...], pad: tuple[int, ...]) -> tuple:
    """The slice of the zero-padded array that is the output (negative pads crop)."""
    key = [slice(None)] * len(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        key[d] = slice(max(-lo, 0), shape[d] + max(lo, 0) + max(hi, 0) - max(-hi, 0))
    return tuple(key)


def constant_pad_nd(input: Tensor, pad: tuple[int, ...], value: float = 0.0) -> Tensor:
    x = input._data
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > x.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding length "
            f"{len(pad)} and input of dimension {x.ndim}"
        )
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        new = x.shape[d] + pad[2 * i] + pad[2 * i + 1]
        if new < 0:
            # torch narrows the input by the negative pads first, which is where this is caught
            raise RuntimeError("narrow(): length must be non-negative.")
        widths[d] = (max(pad[2 * i], 0), max(pad[2 * i + 1], 0))
    xp = array_module(input.device)
    padded = xp.pad(x, widths, mode="constant", constant_values=value)
    y = padded[_crop_key(x.shape, pad)].copy()
    out = _out(y, input)
    if _grad_state.enabled and _requires(input):
        record(_CONSTANT_PAD, (input,), [out], {"pad": tuple(pad), "shape": tuple(x.shape)})
    return out


def _constant_pad_grad(n: Any, g: Tensor) -> Tensor:
    # the inverse pad crops back what was added and zero-fills what was cropped
    return constant_pad_nd(g, tuple(-p for p in n["pad"]), 0.0)


_CONSTANT_PAD = _register("constant_pad_nd", D("ConstantPadNdBackward0", (_constant_pad_grad,), forward=TR), graph=True)


# -- reflect / replicate -----------------------------------------------------------------------


def _index_maps(shape: tuple[int, ...], pad: tuple[int, ...], mode: str) -> list[tuple[int, np.ndarray]]:
    """For each padded dim, the input index each output position reads."""
    maps = []
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], shape[d]
        pos = np.arange(-lo, n + hi)
        if mode == "reflect":
            idx = np.abs(pos)
            idx = np.where(idx > n - 1, 2 * (n - 1) - idx, idx)
        else:
            idx = np.clip(pos, 0, n - 1)
        maps.append((d, idx))
    return maps


def _check_non_constant(x: Tensor, pad: tuple[int, ...]) -> int:
    k = len(pad) // 2
    if len(pad) % 2 or k not in (1, 2, 3) or x.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {x.ndim}D input tensor.\n{_NON_CONSTANT_HELP}"
        )
    return k


def _gather_pad(input: Tensor, pad: tuple[int, ...], mode: str, cls: type) -> Tensor:
    x = input._data
    xp = array_module(input.device)
    y = x
    for d, idx in _index_maps(tuple(x.shape), pad, mode):
        y = xp.take(y, xp.asarray(idx), axis=d)
    out = _out(xp.ascontiguousarray(y), input)
    if _grad_state.enabled and _requires(input):
        record(cls, (input,), [out], {"padding": tuple(pad), "shape": tuple(x.shape), "mode": mode})
    return out


def _scatter_grad(n: Any, g: Tensor) -> Tensor:
    """Sums each output position's gradient into the input position it read, one dim at a time."""
    gd = g._data
    xp = array_module(g.device)
    for d, idx in reversed(_index_maps(n["shape"], n["padding"], n["mode"])):
        moved = xp.moveaxis(gd, d, 0)
        acc = xp.zeros((n["shape"][d],) + moved.shape[1:], dtype=gd.dtype)
        add_at(acc, xp.asarray(idx), moved)
        gd = xp.moveaxis(acc, 0, d)
    return _out(xp.ascontiguousarray(gd), g)


def reflection_pad(input: Tensor, pad: tuple[int, ...]) -> Tensor:
    k = _check_non_constant(input, pad)
    for i in range(k):
        d = input.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo >= input.shape[d] or hi >= input.shape[d]:
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
                f"({lo}, {hi}) at dimension {d} of input {list(input.shape)}"
            )
    return _gather_pad(input, pad, "reflect", _REFLECT[k])


def replication_pad(input: Tensor, pad: tuple[int, ...]) -> Tensor:
    k = _check_non_constant(input, pad)
    return _gather_pad(input, pad, "replicate", _REPLICATE[k])


_REFLECT = {k: _register(f"reflection_pad{k}d", D(f"ReflectionPad{k}DBackward0", (_scatter_grad,),
    forward=TR)) for k in (1, 2, 3)}
_REPLICATE = {
    k: _register(f"replication_pad{k}d", D(f"ReplicationPad{k}DBackward0", (_scatter_grad,),
        forward=TR)) for k in (1, 2, 3)
}


# -- circular ----------------------------------------------------------------------------------


def circular_pad(input: Tensor, pad: tuple[int, ...]) -> Tensor:
    """at::_pad_circular: the same slices and copy_ calls, so the graph holds torch's CopySlices
    and SliceBackward0 nodes in torch's order."""
    _check_non_constant(input, pad)
    shape = list(input.shape)
    ndim = len(shape)
    k = len(pad) // 2
    out_shape = []
    for i in range(ndim):
        j = ndim - i - 1
        lo, hi = (pad[2 * j], pad[2 * j + 1]) if j < k else (0, 0)
        out_shape.append(shape[i] + lo + hi)
        if lo > shape[i] or hi > shape[i]:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out_shape[i] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = input.new_empty(out_shape)

    def sl(t: Tensor, d: int, start: int, stop: int) -> Tensor:
        return _shape.narrow(t, d, start, stop - start)

    out_slice, in_slice = out, input
    for i in range(k):
        d = ndim - i - 1
        lo, hi = pad[2 * i], pad[2 * i + 1]
        out_slice = sl(out_slice, d, max(lo, 0), out_shape[d] - max(hi, 0))
        in_slice = sl(in_slice, d, max(-lo, 0), shape[d] - max(-hi, 0))
    out_slice.copy_(in_slice)

    def copy(dst: Tensor, src: Tensor) -> None:
        # torch's copy keeps the source slice's SliceBackward0; gradviz's copy_ reads the edge
        # after writing the base, when a view of it would regenerate as AsStridedBackward0, so the
        # copy gets a stand-in holding the edge as it is now
        dst.copy_(old_edge_holder(src))

    for i in range(k):
        d = ndim - i - 1
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo > 0:
            copy(sl(out, d, 0, lo), sl(out, d, out_shape[d] - lo - max(hi, 0), out_shape[d] - max(hi, 0)))
        if hi > 0:
            copy(sl(out, d, out_shape[d] - hi, out_shape[d]), sl(out, d, max(lo, 0), max(lo, 0) + hi))
    return out


# -- at::norm(self, p, dim, keepdim) -----------------------------------------------------------


def norm_dim(input: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The norm over one dim with at::norm's node, NormBackward1 (same formula as the linalg one)."""
    with no_grad():
        out = _reductions.norm(input, p, dim, keepdim)
    if _grad_state.enabled and _requires(input):
        record(_NORM_DIM, (input,), [out], {"self": save(input), "result": save(out, True), "ord": float(p),
                                            "dim": (dim % max(input.ndim, 1),), "keepdim": keepdim})
    return out


_NORM_DIM = _register("norm_scalaropt_dim", D("NormBackward1", (_reductions._norm,), forward=RED), graph=True)
