"""torch.linalg: the norms (gradviz/ops/linalg_norms.py), inverses, determinants, solves and
Cholesky (gradviz/ops/linalg_solvers.py), with torch's backward nodes."""

from __future__ import annotations

from typing import Any

from gradviz.ops.linalg import matmul
from gradviz.ops.linalg_more import LINALG as _LINALG
from gradviz.ops.linalg_norms import matrix_norm, norm, vector_norm
from gradviz.ops.linalg_solvers import (
    cholesky_ex,
    det,
    inv,
    inv_ex,
    matrix_power,
    multi_dot,
    slogdet,
    solve,
    solve_ex,
    solve_triangular,
    vecdot,
)
from gradviz.ops.linalg_solvers import linalg_cholesky as cholesky
from gradviz.ops.math_more import diagonal as _diagonal
from gradviz.ops.products import linalg_cross as cross  # issue 34 (torchfns)
from gradviz.ops.products import linalg_vander as vander
from gradviz.tensor import Tensor

__all__ = ["cholesky", "cholesky_ex", "det", "diagonal", "inv", "inv_ex", "matmul", "matrix_norm", "matrix_power",
           "multi_dot", "norm", "slogdet", "solve", "solve_ex", "solve_triangular", "vecdot", "vector_norm"]
__all__ += ["cross", "vander", *_LINALG]  # issue 34 (torchfns)
globals().update(_LINALG)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:  # noqa: N803
    """torch.linalg.diagonal: torch.diagonal over the last two dims by default."""
    return _diagonal(A, offset, dim1, dim2)


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
