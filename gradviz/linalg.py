"""torch.linalg: the norms gradviz implements, composed as torch composes them (the ops and their
backward nodes are in gradviz/ops/linalg_norms.py)."""

from __future__ import annotations

from gradviz.ops.linalg_norms import matrix_norm, norm, vector_norm

__all__ = ["matrix_norm", "norm", "vector_norm"]
