"""torch.set_printoptions: the precision, summarization threshold, edge items, line width and
scientific notation that gradviz's tensor printing (gradviz/_format.py) uses, with torch's three
profiles. Like torch's, the options are process-wide and stay until set again."""

from __future__ import annotations

from gradviz import _format

__all__ = ["set_printoptions"]

# torch's profiles: (precision, threshold, edgeitems, linewidth)
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, float("inf"), 3, 80),
}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """A profile sets the four numbers first; the numbers given override it. ``sci_mode`` is set
    on every call (None: chosen from the values, as by default)."""
    if profile is not None:
        if profile not in _PROFILES:
            return  # torch ignores an unknown profile name
        _format.PRECISION, _format.THRESHOLD, _format.EDGEITEMS, _format.LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        _format.PRECISION = precision
    if threshold is not None:
        _format.THRESHOLD = threshold
    if edgeitems is not None:
        _format.EDGEITEMS = edgeitems
    if linewidth is not None:
        _format.LINEWIDTH = linewidth
    _format.SCI_MODE = sci_mode
