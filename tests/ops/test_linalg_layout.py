"""LAPACK results laid out as torch lays them: linalg.cholesky's and linalg.solve_triangular's
outputs are column-major per matrix, so a reshape of them records torch's node
(ReshapeAliasBackward0, as MultivariateNormal's Mahalanobis term does), not ViewBackward0."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 3))
B = RNG.standard_normal((2, 3, 4))


def _result(T, case: str):  # noqa: N803 - the engine's module
    a = T.tensor(A, requires_grad=True)
    spd = a @ a.mT + T.eye(3, dtype=T.float64)
    b = T.tensor(B)
    if case.startswith("cholesky"):
        return T.linalg.cholesky(spd[0] if case == "cholesky_2d" else spd, upper=case == "cholesky_upper")
    if case == "solve_right":
        return T.linalg.solve_triangular(a, b.mT, upper=True, left=False)
    return T.linalg.solve_triangular(a[0] if case == "solve_broadcast" else a, b, upper=False)


@pytest.mark.parametrize("case", ["cholesky", "cholesky_upper", "cholesky_2d", "solve_left", "solve_right",
                                  "solve_broadcast"])
def test_layout_and_reshape_node_match_torch(case: str) -> None:
    got = []
    for T in (torch, gradviz):
        out = _result(T, case)
        got.append((out.stride(), out.reshape(-1, out.shape[-1]).grad_fn.name(), out.detach().numpy().copy()))
    (ts, tn, tv), (gs, gn, gv) = got
    assert (gs, gn) == (ts, tn)
    np.testing.assert_allclose(gv, tv, rtol=1e-12)
