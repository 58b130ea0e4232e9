"""The in-place tensor ops torch's single-tensor optimizer loops use, over a tensor's array.

Each is one ATen CPU kernel's arithmetic, in its order: ``self + alpha * other`` (add),
``self + (value * t1) * t2`` (addcmul), ``self + (value * t1) / t2`` (addcdiv), lerp's two forms
on |weight| < 0.5, with Python numbers taking the tensor's dtype as torch's wrapped numbers do.
Each writes into the tensor's storage and bumps its version once, as one torch in-place op.

torch's float kernels fuse the multiply-add of add(alpha=), addcmul and lerp (one rounding, on
its AVX2/AVX512 builds). By default gradviz rounds twice, which is a few ulp from torch after
some steps and costs what torch's step costs; ``use_fused_multiply_add(True)`` reproduces the
fusion exactly (float32 through float64, whose product of two floats is exact; float64 through
Dekker's product and Knuth's sum) at several times the cost, for updates equal to torch's bit
for bit (tests/optim/test_optim.py checks both modes against torch).

Arrays may be numpy's or cupy's: only ufuncs with ``out=``, ``astype`` and dtype scalars are used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.autograd import forward_events as _forward
from gradviz.tensor import Tensor, make_tensor

_fused = False


def use_fused_multiply_add(enabled: bool = True) -> bool:
    """Reproduce torch's fused multiply-adds in optimizer updates bit for bit (slower); returns the
    previous setting."""
    global _fused
    previous, _fused = _fused, bool(enabled)
    return previous


def fresh(a: Any) -> Any:
    """A new array holding ``a`` (numpy hands back scalars, not 0-dim arrays, from 0-dim arithmetic)."""
    return np.array(a) if isinstance(a, np.generic) else a.copy()


def _num(value: float, like: Any) -> Any:
    """A Python number as the array's dtype (torch casts a Scalar to the op's compute type)."""
    return like.dtype.type(value)


def _bump(t: Tensor, op: str) -> Tensor:
    t._version_counter[0] += 1
    if _forward.engine.probe is not None:
        _forward.version_bump(t, op)
    return t


def on_fresh(device: Any, a: Any, *ops: str) -> Tensor | None:
    """torch's in-place ``ops``, in order, on one fresh intermediate (``denom.add_(eps)``), which
    gradviz keeps as the array ``a``, the ops done (with no other write between them): while
    something records, reported as writes of a tensor of its own over ``a``, as torch's recorder
    sees them; that tensor is returned. Nothing is made when nothing records (None)."""
    if _forward.engine.probe is None or not ops:
        return None
    t = make_tensor(array(a), device)
    for op in ops:
        _bump(t, op)
    return t


def _wide(v: Any) -> Any:
    return v.astype(np.float64) if hasattr(v, "astype") else np.float64(v)


def fma(x: Any, y: Any, z: Any) -> Any:
    """x * y + z rounded once (a new array)."""
    dt = next(v.dtype for v in (x, y, z) if hasattr(v, "dtype"))
    if dt == np.float32:
        return (_wide(x) * _wide(y) + _wide(z)).astype(np.float32)
    return _fma64(_wide(x), _wide(y), _wide(z))


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves


def _fma64(a: Any, b: Any, c: Any) -> Any:
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # p + e == a * b exactly
    s = p + c
    v = s - p
    r = (p - (s - v)) + (c - v)  # s + r == p + c exactly
    return s + (r + e)


# -- out-of-place (torch's grad.add(param, alpha=wd) and friends)
def added(a: Any, b: Any, alpha: float = 1) -> Any:
    if alpha == 1:
        return a + b
    return fma(b, _num(alpha, b), a) if _fused else a + b * _num(alpha, b)


# -- in place on a tensor's storage
def copy_(t: Tensor, value: Any) -> Tensor:
    t._data[...] = value
    return _bump(t, "copy_")


def mul_(t: Tensor, value: Any, op: str = "mul_") -> Tensor:
    """t *= value (a number, or an array: torch's mul_ by a tensor); ``op``: the name torch's
    recorder sees (``_foreach_mul_`` for a write of a foreach op)."""
    np.multiply(t._data, value if hasattr(value, "shape") else _num(value, t._data), out=t._data)
    return _bump(t, op)


def clamp_(t: Tensor, lo: Any, hi: Any) -> Tensor:
    np.clip(t._data, lo, hi, out=t._data)
    return _bump(t, "clamp_")


def add_(t: Tensor, other: Any, alpha: float = 1, op: str = "add_") -> Tensor:
    a = t._data
    if alpha == 1:
        np.add(a, other, out=a)
    elif _fused:
        a[...] = fma(other, _num(alpha, a), a)
    else:
        np.add(a, other * _num(alpha, a), out=a)
    return _bump(t, op)


def _addcmul_into(a: Any, t1: Any, t2: Any, value: float) -> None:
    prod = t1 * _num(value, a)
    if _fused:
        a[...] = fma(prod, t2, a)
    else:
        np.add(a, prod * t2, out=a)


def addcmul(a: Any, t1: Any, t2: Any, value: float = 1) -> Any:
    """torch's out-of-place addcmul: a new array, nothing written."""
    out = fresh(a)
    _addcmul_into(out, t1, t2, value)
    return out


def addcmul_(t: Tensor, t1: Any, t2: Any, value: float = 1, op: str = "addcmul_") -> Tensor:
    _addcmul_into(t._data, t1, t2, value)
    return _bump(t, op)


def addcdiv_(t: Tensor, t1: Any, t2: Any, value: float = 1, op: str = "addcdiv_") -> Tensor:
    a = t._data
    np.add(a, (t1 * _num(value, a)) / t2 if value != 1 else t1 / t2, out=a)
    return _bump(t, op)


def div_(t: Tensor, value: float, op: str = "div_") -> Tensor:
    np.divide(t._data, _num(value, t._data), out=t._data)
    return _bump(t, op)


def lerp_(t: Tensor, end: Any, weight: float, op: str = "lerp_") -> Tensor:
    a = t._data
    w = _num(weight, a)
    small = abs(float(w)) < 0.5
    diff = end - a
    if _fused:
        a[...] = fma(w, diff, a) if small else fma(w - _num(1, a), diff, end)
    elif small:
        np.add(a, w * diff, out=a)
    else:
        np.subtract(end, diff * (_num(1, a) - w), out=a)
    return _bump(t, op)


def maximum_(t: Tensor, other: Any, op: str = "maximum") -> Tensor:
    """torch.maximum(t, other, out=t): torch's recorder names the write by the function, ``maximum``."""
    np.maximum(t._data, other, out=t._data)
    return _bump(t, op)


def sqrt(a: Any) -> Any:
    return np.sqrt(a)


def array(a: Any) -> Any:
    """``a`` as an array that ufuncs can write into with ``out=`` (numpy hands back scalars, not
    0-dim arrays, from 0-dim arithmetic)."""
    return np.array(a) if isinstance(a, np.generic) else a


def tick(state: dict[str, Any]) -> float:
    """step_t += 1 on the 0-dim step tensor; the new count as a number (torch's _get_value)."""
    return float(add_(state["step"], 1)._data)
