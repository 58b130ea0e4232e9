"""What can go wrong reading a trace."""

from __future__ import annotations


class TraceError(ValueError):
    """A trace file that cannot be read. The message is one line naming the file, and for a bad
    event its number (0-based position in the file, equal to its seq), kind and field, e.g.
    ``trace.json: event 17 (queue_push): field 'size' must be int, got str``."""


class TraceWarning(UserWarning):
    """A trace that loads but is not whole (cut short by a crash or a kill)."""
