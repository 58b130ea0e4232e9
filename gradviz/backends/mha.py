"""torch.backends.mha: the fast-path flag of nn.MultiheadAttention / TransformerEncoderLayer.
Settable as torch's; gradviz's attention takes one path whatever it says."""

from __future__ import annotations

_fastpath_enabled = True


def get_fastpath_enabled() -> bool:
    return _fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    global _fastpath_enabled
    _fastpath_enabled = bool(value)
