"""The program's warnings, seen as Python shows them: each one that passes the warning filters
(and their once-only rules) is reported to the recording just before it is shown (or caught),
and shown exactly as without the recording (same message, category, file and line).

Python's C ``warnings`` module shows a warning through ``warnings._showwarnmsg`` when the module
has it (3.11-3.13 do): that call gets the whole WarningMessage, so wrapping it changes nothing of
what is printed; without it, nothing is seen."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any


class WarningTap:
    """Reports each warning that passed the filters to ``report(msg, shown)`` while on (shown:
    printed, not caught by ``catch_warnings(record=True)``, which swaps Python's printing
    function for a list's append)."""

    def __init__(self, report: Callable[[Any, bool], None]) -> None:
        self.report = report
        self.on = False
        self._orig: Any = None
        self._impl: Any = None  # Python's printing function, while no catch_warnings(record=True) holds it
        self._fn = self._show  # one bound method: what is installed, compared by identity

    def install(self) -> None:
        orig = getattr(warnings, "_showwarnmsg", None)
        if orig is None or not callable(orig):
            return
        self._orig = orig
        self._impl = getattr(warnings, "_showwarnmsg_impl", None)
        self.on = True
        warnings._showwarnmsg = self._fn  # type: ignore[attr-defined]

    def remove(self) -> None:
        """Off; Python's own function back where nothing replaced ours since (else ours stays,
        inert, under what was put on top of it)."""
        self.on = False
        if self._orig is not None and getattr(warnings, "_showwarnmsg", None) is self._fn:
            warnings._showwarnmsg = self._orig  # type: ignore[attr-defined]

    def _show(self, msg: Any) -> Any:
        if self.on:
            try:
                self.report(msg, getattr(warnings, "_showwarnmsg_impl", None) is self._impl)
            except Exception:  # noqa: BLE001 - the recorder's fault never becomes the user's
                pass
        return self._orig(msg)
