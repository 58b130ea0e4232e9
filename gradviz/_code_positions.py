"""Where on its line the instruction a frame is running stands: the column range of the op the
user's code called (``self.fc1(x)`` in ``return self.fc2(F.relu(self.fc1(x)))``), which the
line alone does not tell apart from the other calls on it. Python 3.11's code positions (PEP
657) give it; both recorders (gradviz's engine, real torch) ask here.
"""

from __future__ import annotations

from typing import Any

# code object -> its instructions' positions, one per code unit (co_positions, as a list): a
# call site is looked up by index, not by walking the table again. Emptied past _MAX objects
# (code made in a loop); the entries hold the code objects, so an id is never reused under one.
_POSITIONS: dict[Any, list[tuple[Any, Any, Any, Any]]] = {}
_MAX = 4096


def columns(code: Any, lasti: int) -> tuple[int, int] | None:
    """0-based [start, end) of the expression the instruction at byte offset ``lasti`` of
    ``code`` runs, on its first line, in UTF-8 bytes as Python counts them; end is -1 when the
    expression goes on past that line; None where Python knows no columns (``-X no_debug_ranges``)."""
    if lasti < 0:
        return None
    pos = _POSITIONS.get(code)
    if pos is None:
        if len(_POSITIONS) >= _MAX:
            _POSITIONS.clear()
        pos = _POSITIONS[code] = list(code.co_positions())
    i = lasti // 2
    if i >= len(pos):
        return None
    line, end_line, col, end_col = pos[i]
    if col is None:
        return None
    return (col, end_col if end_line == line and end_col is not None else -1)


def frame_columns(frame: Any) -> tuple[int, int] | None:
    """``columns`` of the call the frame is making now (None for no frame)."""
    return None if frame is None else columns(frame.f_code, frame.f_lasti)
