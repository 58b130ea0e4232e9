"""torch.autograd.forward_ad: forward-mode AD with dual tensors.

A dual tensor is a tensor with a tangent at the current dual level. Each op on dual tensors
gives its output the tangent its row's forward formula computes (gradviz/ops/forward_grad.py);
``unpack_dual`` reads it back, and leaving the level drops every tangent. As in torch, one level
exists at a time, and a dual tensor is a view of the tensor it was made from.
"""

from __future__ import annotations

from typing import NamedTuple

from gradviz.autograd import forward_state as _state
from gradviz.autograd.forward_state import FORWARD_ONLY, STATE
from gradviz.autograd.grad_mode import _NoParamDecoratorContext
from gradviz.ops import forward_grad as _forward_grad  # noqa: F401 - installs record()'s tangent step
from gradviz.ops import functions as _F
from gradviz.ops import indexing as _indexing
from gradviz.tensor import Tensor

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


def enter_dual_level() -> int:
    """Enter the dual level (0): make_dual and unpack_dual use it by default."""
    if STATE.level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    STATE.level = 0
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Leave the dual level: every tangent made at it is dropped."""
    if level is None:
        level = STATE.level
    if level != STATE.level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _state.clear_level()
    STATE.level = -1


def _check_level(level: int, fn: str) -> None:
    if level != STATE.level:
        raise RuntimeError(f"Invalid level given to {fn}")


def _size(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` with ``tangent`` as its forward gradient at the level."""
    if level is None:
        level = STATE.level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    _check_level(level, "_make_dual")
    if tensor._fw_grad is not None:
        raise RuntimeError(
            f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same level {level} "
            "is not supported."
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {_size(tensor)} while the given forward gradient is of size "
            f"{_size(tangent)}."
        )
    dual = _F.view(tensor, tuple(tensor.shape)) if tensor._data.flags["C_CONTIGUOUS"] else _F.alias(tensor)
    if tangent._data.strides != tensor._data.strides and tangent.numel() > 1:
        # torch keeps the tangent as given when its layout is the primal's, else a copy laid out as the primal
        t = _F.empty_like(tensor, dtype=tangent.dtype)
        t._data[...] = tangent._data
        tangent = t
    dual._fw_grad = tangent
    if not dual.requires_grad:
        dual._grad_fn = FORWARD_ONLY
    _state.track(dual)
    return dual


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view of the tensor, without its tangent) and the
    tangent (None where the tensor has none)."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a dual tensor at the level; the tangent is None outside a level
    and for a tensor without one."""
    if level is None:
        level = STATE.level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not {type(tensor).__name__}")
    _check_level(level, "_fw_primal")
    tangent = tensor._fw_grad
    computing = STATE.computing
    STATE.computing = True  # the primal is a view without the tangent
    try:
        primal = _indexing.fw_primal(tensor)
    finally:
        STATE.computing = computing
    return UnpackedDualTensor(primal, tangent)


class dual_level(_NoParamDecoratorContext):  # noqa: N801 - torch's name
    """A context (and decorator) inside which forward AD computations happen: enters the level,
    and exits it (dropping the tangents) at the end."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
