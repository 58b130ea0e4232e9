"""The derivative table: one row per op, one gradient formula per forward input.

Each family module (gradviz/ops/arith.py, reductions.py, ...) keeps its rows next to its ops, in
its ``ROWS``; this module is the whole table, by key, and the node class made from each row.

Each formula takes the node (``n["name"]`` unpacks a saved value, checking its version) and the
gradient of the op's output ``g`` (for multi-output rows, the list of output gradients, None
where an output got no gradient), and returns the gradient of one input. ``None`` in place of a
formula means the input is not differentiable. Formulas use differentiable ops, so a backward
run with ``create_graph=True`` records its own graph. Names are checked against torch 2.13.
"""

from __future__ import annotations

from gradviz.ops import functions as _functions  # noqa: F401 - importing it registers every family's rows
from gradviz.ops._common import DERIVATIVES, NODES

__all__ = ["DERIVATIVES", "NODES"]
