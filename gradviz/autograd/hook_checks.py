"""What a hook may return in place of the gradients it was given, checked as torch checks it
(engine.cpp's check of hook results), for the engine's call_function and call_tensor_pre_hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradviz import _dtype


def _checked_hook_result(hook: Callable, old: Any, new: Any) -> Any:
    """A tensor hook's replacement gradient, refused as torch refuses it: not a tensor, or of
    another dtype, device or size than the gradient it replaces (the node it goes to was built
    for that one: a wrong one would fail later, far from the hook that made it, or not at all)."""
    from gradviz.tensor import Tensor

    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    name = getattr(hook, "__name__", "<unknown>")
    if new.dtype is not old.dtype or new.device != old.device:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {_legacy_type(old)} got {_legacy_type(new)})"
        )
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    return new


def _checked_hook_results(hook: Callable, old: list, res: Any) -> list:
    """A node pre-hook's or post-hook's replacement gradients, checked as torch checks them: a
    tuple of as many values as it was given, each None (undefined) or a tensor that fits the one
    it replaces (_checked_hook_result)."""
    if not isinstance(res, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(res).__name__}'")
    if len(res) != len(old):
        raise RuntimeError(
            f"hook '{getattr(hook, '__name__', '<unknown>')}' has returned an incorrect number of values "
            f"(got {len(res)}, but expected {len(old)})"
        )
    return [new if new is None else _checked_hook_result(hook, was, new) for was, new in zip(old, res, strict=True)]


def _legacy_type(t: Any) -> str:
    """torch's legacy tensor type name, in gradviz's namespace: gradviz.FloatTensor on cpu,
    gradviz.cuda.FloatTensor on cuda (as ``Tensor.type()`` names the cpu ones)."""
    where = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"torch.{where}{_dtype.scalar_type_name(t.dtype)}Tensor"
