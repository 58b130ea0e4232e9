"""InputBuffer: the gradients arriving for one node, one slot per node input (torch's
input_buffer.cpp). ``device()`` picks the ready queue the node goes to."""

from __future__ import annotations

import sys
from typing import Any

from gradviz._sparse_coo import SparseCOO
from gradviz.autograd import graph
from gradviz.autograd.grad_mode import _state as _grad_state
from gradviz.device import CPU as _CPU

CPU_DEVICE = "cpu"


def _refs_of_sole_holder() -> int:
    """What sys.getrefcount says here of an object that only a list and one local hold: 3 as
    Python runs this module (getrefcount's argument is a third), 2 where Cython compiled it
    (gradviz._compiled), whose calls take no reference of their own."""
    slots = [object()]
    old = slots[0]
    return sys.getrefcount(old)


_SOLE_HOLDER_REFS = _refs_of_sole_holder()


class InputBuffer:
    """The gradients arriving for one node, one slot per node input, summed as they come."""

    __slots__ = ("buffer", "owned")

    def __init__(self, size: int):
        self.buffer: list[Any] = [None] * size
        # Bit i set: slot i holds a gradient this buffer made its own by adding into it in
        # place; it stays the only holder (nothing hands out a buffer's contents before the
        # node runs), so later adds skip the ownership checks.
        self.owned = 0

    def add(self, pos: int, var: Any) -> str:
        """Put ``var`` in slot ``pos``; returns "set", "accumulate" or "undefined"."""
        if var is None:
            return "undefined"
        buffer = self.buffer
        old = buffer[pos]
        if old is None:
            buffer[pos] = var
            return "set"
        if type(old._data) is SparseCOO or type(var._data) is SparseCOO:
            # torch's accumulate of a sparse gradient: never in place, and a dense one added to
            # a sparse one as dense + sparse (the sum is dense)
            buffer[pos] = var + old if type(var._data) is not SparseCOO else old + var
            return "accumulate"
        if self.owned >> pos & 1 and not _grad_state.enabled:
            od, vd = old._data, var._data
            # Dtypes by identity first: numpy's dtype == is a rich comparison (two calls).
            odt, vdt = od.dtype, vd.dtype
            if (odt is vdt or odt == vdt) and od.shape == vd.shape:
                od += vd
                return "accumulate"
        # In place only when the buffer is the first gradient's sole holder and no graph is being
        # built (torch's rule): a tensor the user may also hold (from a hook, a capture, a root
        # gradient) is never changed. References: the list and ``old`` (_SOLE_HOLDER_REFS).
        if (
            not _grad_state.enabled
            and sys.getrefcount(old) <= _SOLE_HOLDER_REFS
            and ((odt := old._data.dtype) is (vdt := var._data.dtype) or odt == vdt)
            and old._data.shape == var._data.shape
            and graph.stealable(old)
        ):
            old._data += var._data
            self.owned |= 1 << pos
            return "accumulate"
        buffer[pos] = old + var
        return "accumulate"

    def device(self) -> str:
        """The first non-CPU device among the gradients; cpu if there is none."""
        return _buffer_device(self.buffer)

    def __len__(self) -> int:
        return len(self.buffer)




def _buffer_device(grads: list) -> str:
    """InputBuffer.device() of a buffer's list."""
    for var in grads:
        if var is not None:
            dev = var.device
            if dev is not _CPU and dev.type != "cpu":
                return dev._str
    return CPU_DEVICE


