"""torch.linalg: the norms gradviz implements, composed as torch composes them (the ops and their
backward nodes are in gradviz/ops/linalg_norms.py)."""

from __future__ import annotations

from gradviz.ops.linalg_norms import matrix_norm, norm, vector_norm

__all__ = ["matrix_norm", "norm", "vector_norm"]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
