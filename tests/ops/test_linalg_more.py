"""More of torch.linalg (issue 34's coverage) against torch: values, nodes and gradients. Where a
factor's signs are free (singular and eigenvectors), the programs use what does not depend on them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _fns_diff import check

import gradviz

A = [[2.0, -1.0, 0.5], [0.25, 3.0, 1.0], [1.0, 0.5, -1.5]]
B = [[1.0, 2.0], [0.25, -3.0], [2.0, 0.5]]
TALL = [[1.0, 2.0], [0.5, -1.0], [3.0, 0.25], [-2.0, 1.0]]
SPD = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]]
W = [[0.3, -1.2, 0.7], [2.0, 0.1, -0.4], [0.5, 0.9, 1.1]]


def _x(T, data=A):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


def _w(T, shape_like):
    return T.tensor(W, dtype=T.float64)[: shape_like.shape[-2], : shape_like.shape[-1]]


CASES = {
    "svd S": lambda T: T.linalg.svd(_x(T))[1],
    "svd sign-free": lambda T: (lambda u, s, vh: (s, u * u * _w(T, u), vh * vh * _w(T, vh)))(
        *T.linalg.svd(_x(T), full_matrices=False)),
    "svd tall sign-free": lambda T: (lambda u, s, vh: (s, u * u, vh * vh * _w(T, vh)))(
        *T.linalg.svd(_x(T, TALL), full_matrices=False)),
    "svd wide sign-free": lambda T: (lambda u, s, vh: (s, u * u * _w(T, u), vh * vh))(
        *T.linalg.svd(_x(T, [row[:3] for row in TALL[:2]]), full_matrices=False)),
    "svdvals": lambda T: T.linalg.svdvals(_x(T, TALL)),
    "torch.svd": lambda T: (lambda u, s, v: (s, u * u, v * v * _w(T, v)))(*T.svd(_x(T))),
    "Tensor.svd": lambda T: _x(T).svd()[1],
    "qr": lambda T: T.linalg.qr(_x(T)),
    "qr tall": lambda T: T.linalg.qr(_x(T, TALL)),
    "qr wide": lambda T: T.linalg.qr(_x(T, np.transpose(TALL).tolist())),
    "lu tall": lambda T: T.linalg.lu(_x(T, TALL))[1:],
    "lu wide": lambda T: T.linalg.lu(_x(T, np.transpose(TALL).tolist()))[1:],
    "lu_factor tall": lambda T: T.linalg.lu_factor(_x(T, TALL))[0],
    "qr r": lambda T: T.linalg.qr(T.tensor(A, dtype=T.float64), mode="r")[1],
    "torch.qr": lambda T: T.qr(_x(T, TALL)),
    "eigh": lambda T: (lambda w, v: (w, v * v * _w(T, v)))(*T.linalg.eigh(_x(T, SPD))),
    "eigh upper": lambda T: T.linalg.eigh(_x(T, A), UPLO="U")[0],
    "eigvalsh": lambda T: T.linalg.eigvalsh(_x(T, A)),
    "pinv": lambda T: T.linalg.pinv(_x(T)),
    "pinv tall": lambda T: T.linalg.pinv(_x(T, TALL)),
    "pinv wide": lambda T: T.linalg.pinv(_x(T, B).t()),
    "pinverse": lambda T: T.pinverse(_x(T, TALL)),
    "lstsq": lambda T: T.linalg.lstsq(_x(T, TALL), _x(T, [[1.0], [2.0], [0.5], [-1.0]])).solution,
    "lstsq square": lambda T: T.linalg.lstsq(_x(T), _x(T, B)).solution,
    "matrix_exp": lambda T: T.linalg.matrix_exp(_x(T)),
    "matrix_exp large norm": lambda T: T.matrix_exp(_x(T) * 3),
    "Tensor.matrix_exp batched": lambda T: T.stack([_x(T), _x(T, SPD) * 0.1]).matrix_exp(),
    "matrix_rank": lambda T: [T.linalg.matrix_rank(T.tensor(A)),
                              T.linalg.matrix_rank(T.tensor([[1.0, 2.0], [2.0, 4.0]])),
                              T.linalg.matrix_rank(T.tensor(TALL), atol=1.5)],
    "cond": lambda T: T.linalg.cond(_x(T)),
    # (torch 2.13 cannot backward through these: its in-place nan_to_num_ invalidates the saved inverse)
    "cond fro": lambda T: (lambda c: (c.detach(), c.grad_fn.name()))(T.linalg.cond(_x(T), "fro")),
    "cond 1": lambda T: T.linalg.cond(T.tensor(A, dtype=T.float64), 1),
    "cond -2": lambda T: T.linalg.cond(_x(T), -2),
    "solve_triangular upper": lambda T: T.linalg.solve_triangular(_x(T).triu(), _x(T, B), upper=True),
    "solve_triangular lower unit": lambda T: T.linalg.solve_triangular(_x(T).tril(), _x(T, B), upper=False,
                                                                      unitriangular=True),
    "solve_triangular right": lambda T: T.linalg.solve_triangular(_x(T).triu(), _x(T, B).t(), upper=True,
                                                                 left=False),
    "triangular_solve": lambda T: T.triangular_solve(_x(T, B), _x(T).triu())[0],
    "triangular_solve lower transpose": lambda T: T.triangular_solve(_x(T, B), _x(T).tril(), upper=False,
                                                                     transpose=True)[0],
    "tensorinv": lambda T: T.linalg.tensorinv(
        (_x(T, [[float(i == j) * 3 + (i * j % 5) * 0.1 for j in range(6)] for i in range(6)]) * 1).reshape(6, 2, 3), 1),
    "tensorsolve": lambda T: T.linalg.tensorsolve(_x(T), _x(T, [1.0, 2.0, 3.0])),
    "lu_factor": lambda T: T.linalg.lu_factor(_x(T)),
    "lu_factor_ex": lambda T: T.linalg.lu_factor_ex(_x(T, SPD)),
    "lu": lambda T: T.linalg.lu(_x(T)),
    "lu_unpack": lambda T: T.lu_unpack(*T.linalg.lu_factor(_x(T))),
    "lu_solve": lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(_x(T)), _x(T, B)),
    "lu_solve adjoint": lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(_x(T)), _x(T, B), adjoint=True),
    "torch.lu_solve": lambda T: T.lu_solve(_x(T, B), *T.linalg.lu_factor(_x(T))),
    "householder_product": lambda T: T.linalg.householder_product(_x(T, TALL), _x(T, [1.2, 0.7])),
    "orgqr": lambda T: T.orgqr(_x(T), _x(T, [1.5, 0.3])),
    "torch.cholesky": lambda T: T.cholesky(_x(T, SPD)),
    "cholesky_inverse": lambda T: T.cholesky_inverse(_x(T, SPD).tril()),
    "cholesky_inverse upper": lambda T: _x(T, SPD).triu().cholesky_inverse(upper=True),
    "cholesky_solve": lambda T: T.cholesky_solve(_x(T, B), T.linalg.cholesky(_x(T, SPD))),
    "cholesky_solve upper": lambda T: T.cholesky_solve(_x(T, B), T.linalg.cholesky(_x(T, SPD)).mT, upper=True),
    "nuclear_norm": lambda T: T.nuclear_norm(_x(T)),
    "frobenius_norm": lambda T: T.frobenius_norm(_x(T), (0, 1)),
    "frobenius_norm keepdim": lambda T: T.frobenius_norm(_x(T), (0, 1), True),
    "Tensor.slogdet": lambda T: _x(T).slogdet()[1],
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name], rtol=1e-9, atol=1e-11)


def test_return_types_have_torchs_fields():
    for T in (torch, gradviz):
        a = T.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=T.float64)
        fields = {"svd": (T.linalg.svd(a), ("U", "S", "Vh")), "torch.svd": (T.svd(a), ("U", "S", "V")),
                  "qr": (T.linalg.qr(a), ("Q", "R")), "eigh": (T.linalg.eigh(a), ("eigenvalues", "eigenvectors")),
                  "lu": (T.linalg.lu(a), ("P", "L", "U")), "lu_factor": (T.linalg.lu_factor(a), ("LU", "pivots")),
                  "lstsq": (T.linalg.lstsq(a, a), ("solution", "residuals", "rank", "singular_values"))}
        for name, (result, names) in fields.items():
            assert all(getattr(result, f) is result[i] for i, f in enumerate(names)), (T.__name__, name)


def _symmetric(seed, n, small_diagonal=False):
    m = np.random.default_rng(seed).standard_normal((n, n))
    m = m + m.T
    if small_diagonal:  # forces 2x2 pivots and interchanges
        m[np.diag_indices(n)] *= 0.01
    return m.tolist()


LDL = {
    "ldl_factor 1x1 pivots": lambda T: T.linalg.ldl_factor(T.tensor(SPD, dtype=T.float64)),
    "ldl_factor 2x2 pivots": lambda T: T.linalg.ldl_factor(T.tensor([[1.0, 2, 3], [2, -1, 0.5], [3, 0.5, 0.2]],
                                                                    dtype=T.float64)),
    "ldl_factor_ex zero diagonal": lambda T: T.linalg.ldl_factor_ex(T.tensor([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]],
                                                                             dtype=T.float64)),
    "ldl_factor_ex singular": lambda T: T.linalg.ldl_factor_ex(T.zeros(2, 2, dtype=T.float64)),
    **{f"ldl random {i}": (lambda seed: lambda T: T.linalg.ldl_factor(T.tensor(
        _symmetric(seed, 6, seed % 2 == 0), dtype=T.float64)))(i) for i in range(6)},
    "ldl batched": lambda T: T.linalg.ldl_factor(T.tensor([_symmetric(7, 4, True), _symmetric(8, 4)],
                                                          dtype=T.float64)),
    "ldl_solve": lambda T: (lambda f: T.linalg.ldl_solve(f.LD, f.pivots, T.tensor(B, dtype=T.float64)))(
        T.linalg.ldl_factor(T.tensor([[1.0, 2, 3], [2, -1, 0.5], [3, 0.5, 0.2]], dtype=T.float64))),
    "ldl_solve random": lambda T: (lambda f: T.linalg.ldl_solve(f.LD, f.pivots, T.ones(5, 3, dtype=T.float64)))(
        T.linalg.ldl_factor(T.tensor(_symmetric(11, 5, True), dtype=T.float64))),
    "ldl node": lambda T: T.linalg.ldl_factor(_x(T, SPD) * 1).LD.grad_fn.name().split("::")[-1],
}


@pytest.mark.parametrize("name", list(LDL))
def test_ldl_matches_torch(name):
    check(LDL[name], rtol=1e-10, atol=1e-12)


def test_ldl_has_no_derivative_as_torch():
    for T in (torch, gradviz):
        a = T.tensor(SPD, dtype=T.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
            T.linalg.ldl_factor(a * 1).LD.sum().backward()


def test_qr_complete_tall_has_no_derivative_as_torch():
    for T in (torch, gradviz):
        a = T.tensor(TALL, dtype=T.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
            T.linalg.qr(a, mode="complete")[0].sum().backward()
