"""Module's helpers: torch's type names in messages, indented printing, load_state_dict's result."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from gradviz.tensor import Tensor


def _type_name(t: Any) -> str:
    """torch's name for a value's type in assignment errors: 'torch.FloatTensor' for tensors."""
    if isinstance(t, Tensor):
        return t.type().replace("gradviz.", "torch.")
    return type(t).__module__.replace("gradviz", "torch") + "." + type(t).__qualname__ \
        if type(t).__module__ != "builtins" else type(t).__name__


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def _size(shape: Any) -> str:
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"
