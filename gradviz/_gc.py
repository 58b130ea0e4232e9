"""The cyclic garbage collector paused around building many objects that hold no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Collections off inside the block, and back on after it if they were on before.

    For code that makes a million objects without cycles (a trace's events, its nodes, a replay
    state): each young collection would walk every object made so far again, a third or more of
    that code's time. The collector's next run after the block sees them once."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
