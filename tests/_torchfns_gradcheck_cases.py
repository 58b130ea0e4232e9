"""Finite-difference cases for the rows the torch functions, linalg, special and fft added to the
derivative table (gradviz/ops/products.py, linalg_more.py, special_ops.py, fft_ops.py,
indexing_more.py, selection_more.py, misc_more.py, inplace_variants.py, ...);
tests/engine/test_gradcheck.py runs them with its own cases."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gradviz as gv
from gradviz.ops.nn_weight_norm_ops import norm_except_dim

# Rows whose backward raises, as torch's: zeta(tensor, number) (its self has no derivative),
# unique_consecutive, and cdist's backward (the derivative of '_cdist_backward' is not implemented).
TORCHFNS_NO_DERIVATIVE = {"zeta_other_scalar", "unique_consecutive", "cdist_backward"}


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _uniform(lo: float, hi: float, *shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def _distinct(*shape: int, seed: int = 0) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.37 + 0.1).reshape(shape)


def _away(v: np.ndarray, points: tuple[float, ...], margin: float = 0.1) -> np.ndarray:
    v = v.copy()
    for p in points:
        close = np.abs(v - p) < margin
        v[close] = p + np.where(v[close] >= p, margin, -margin) * 2
    return v


def _i64(*values: int) -> gv.Tensor:
    return gv.tensor(np.array(values, dtype=np.int64))


def _c(a: np.ndarray) -> gv.Tensor:
    return gv.tensor(a, dtype=gv.float64)


def _well_conditioned(n: int, seed: int = 0) -> np.ndarray:
    return _randn(n, n, seed=seed) + 3.0 * np.eye(n)


def _spd(b: gv.Tensor) -> gv.Tensor:
    return b @ b.T + gv.eye(b.shape[0], dtype=b.dtype)


def _lower(b: gv.Tensor) -> gv.Tensor:
    return b.tril(-1) + gv.diag(b.diagonal().exp())


def _sym(a: gv.Tensor) -> gv.Tensor:
    return (a + a.T) / 2


def _grad_of(op: Callable) -> Callable:
    """x, w -> d/dx sum(op(x) * w) with create_graph (the graph holds op's backward node)."""

    def fn(x, w):
        (g,) = gv.autograd.grad((op(x) * w).sum(), x, create_graph=True)
        return g

    return fn


def _lu_solve(lu, b):
    with gv.no_grad():
        _, piv = gv.linalg.lu_factor(lu)
    return gv.linalg.lu_solve(lu, piv, b)


def _lu_unpack(lu):
    with gv.no_grad():
        _, piv = gv.linalg.lu_factor(lu)
    p, low, up = gv.lu_unpack(lu, piv)
    return low, up


def _eigh(a):
    w, v = gv.linalg.eigh(_sym(a))
    return w, v * v  # a column's sign is arbitrary: its squares are not


def _svd(a):
    u, s, vh = gv.linalg.svd(a, full_matrices=False)
    return s, u * u, vh * vh


def _qr(a):
    q, r = gv.linalg.qr(a)
    return q, r


def _cmp_inplace(name: str, other: float | None = None) -> Callable:
    # the comparison written into a float copy: its values are 0 and 1, its gradient zero
    if other is None:
        return lambda a, b: getattr(a * 1.0, name)(b) * a
    return lambda a: getattr(a * 1.0, name)(other) * a


_CMP = np.array([[0.1, 0.7, 1.3], [-0.4, 0.9, 0.2]])
_CMP_B = np.array([[0.5, 0.7 + 0.3, 0.2], [-0.4 - 0.3, 1.5, 0.9]])

TORCHFNS_CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    # products
    ("addbmm", lambda c, a, b: gv.addbmm(c, a, b, beta=0.5, alpha=1.5),
     [_randn(2, 3), _randn(2, 2, 4, seed=1), _randn(2, 4, 3, seed=2)]),
    ("addmv", lambda c, a, v: gv.addmv(c, a, v, beta=2.0, alpha=-0.5),
     [_randn(2), _randn(2, 3, seed=1), _randn(3, seed=2)]),
    ("addr", lambda c, a, b: gv.addr(c, a, b, alpha=2.0), [_randn(2, 3), _randn(2, seed=1), _randn(3, seed=2)]),
    ("block_diag", lambda a, b: gv.block_diag(a, b), [_randn(2, 3), _randn(1, 2, seed=1)]),
    ("cdist", lambda a, b: gv.cdist(a, b, p=1.5), [_randn(3, 2), _randn(2, 2, seed=1)]),
    ("cdist", lambda a, b: gv.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
     [_randn(3, 2), _randn(2, 2, seed=1)]),
    ("euclidean_dist", lambda a, b: gv.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
     [_randn(3, 2), _randn(2, 2, seed=1)]),
    ("cross", lambda a, b: gv.linalg.cross(a, b), [_randn(2, 3), _randn(2, 3, seed=1)]),
    ("dist", lambda a, b: gv.dist(a, b, 3), [_randn(2, 3), _randn(3, seed=1)]),
    ("pdist", lambda a: gv.pdist(a), [_randn(4, 3)]),
    ("renorm", lambda a: gv.renorm(a, 2, 0, 1.0), [_randn(3, 4)]),
    ("renorm", lambda a: gv.renorm(a, float("inf"), 0, 0.5), [_distinct(2, 3)]),
    ("rot90", lambda a: gv.rot90(a, 1, (0, 1)), [_randn(2, 3)]),
    ("rot90", lambda a: gv.rot90(a, -2, (1, 0)), [_randn(2, 3)]),
    # norms
    ("norm_Scalar", lambda a: norm_except_dim(a, 3, -1), [_randn(2, 3)]),
    ("norm_scalaropt_dim", lambda a: norm_except_dim(a, 2, 0), [_randn(2, 3)]),
    ("frobenius_norm", lambda a: gv.frobenius_norm(a, (0, 1)), [_randn(2, 3)]),
    # linalg
    ("cholesky_inverse", lambda b: gv.cholesky_inverse(_lower(b)), [_randn(3, 3) * 0.5]),
    ("cholesky_solve", lambda x, b: gv.cholesky_solve(x, _lower(b)), [_randn(3, 2), _randn(3, 3, seed=1) * 0.5]),
    ("torch_cholesky", lambda b: gv.cholesky(_spd(b)), [_randn(3, 3)]),
    ("eigh", _eigh, [_randn(3, 3)]),
    ("svd", _svd, [_randn(3, 2)]),
    ("qr", _qr, [_randn(3, 2)]),
    ("qr", _qr, [_randn(2, 4)]),  # wide: R = [U V]
    ("qr", lambda a: gv.linalg.qr(a, mode="complete"), [_randn(3, 3)]),
    ("pinv", lambda a: gv.linalg.pinv(a), [_randn(3, 2)]),
    ("lstsq", lambda a, b: gv.linalg.lstsq(a, b).solution, [_randn(4, 3), _randn(4, 2, seed=1)]),
    ("householder_product", lambda a, t: gv.linalg.householder_product(a, t), [_randn(4, 3), _randn(2, seed=1)]),
    ("matrix_exp", lambda a: gv.linalg.matrix_exp(a), [_randn(3, 3) * 0.5]),
    ("triangular_solve", lambda b, a: gv.triangular_solve(b, a, upper=True)[0],
     [_randn(3, 2), _well_conditioned(3, seed=1)]),
    ("lu", lambda a: gv.linalg.lu(a)[1:], [_well_conditioned(3)]),
    ("lu", lambda a: gv.linalg.lu(a)[1:], [_randn(2, 4)]),
    ("lu", lambda a: gv.linalg.lu(a)[1:], [_randn(4, 3)]),
    ("lu_factor_ex", lambda a: gv.linalg.lu_factor_ex(a)[0], [_well_conditioned(3)]),
    ("lu_factor_ex", lambda a: gv.linalg.lu_factor_ex(a)[0], [_randn(3, 4)]),
    ("lu_factor_ex", lambda a: gv.linalg.lu_factor_ex(a)[0], [_randn(2, 4, 2)]),
    ("lu_solve", _lu_solve, [_well_conditioned(3), _randn(3, 2, seed=1)]),
    ("lu_unpack", _lu_unpack, [_well_conditioned(3)]),
    # fft: hfft conjugates, then a complex-to-real transform
    ("conj", lambda a: gv.fft.hfft(a), [_randn(4)]),
    ("fft_c2r", lambda a: gv.fft.irfft(a, 6), [_randn(4)]),
    # special
    ("entr", lambda a: gv.special.entr(a), [_uniform(0.2, 2.0, 2, 3)]),
    ("erfcx", lambda a: gv.special.erfcx(a), [_randn(2, 3)]),
    ("i0", lambda a: gv.i0(a), [_randn(2, 3)]),
    ("i0e", lambda a: gv.special.i0e(a), [_away(_randn(2, 3), (0.0,))]),
    ("i1", lambda a: gv.special.i1(a), [_randn(2, 3)]),
    ("i1e", lambda a: gv.special.i1e(a), [_away(_randn(2, 3), (0.0,))]),
    ("log_ndtr", lambda a: gv.special.log_ndtr(a), [_randn(2, 3)]),
    ("ndtri", lambda a: gv.special.ndtri(a), [_uniform(0.1, 0.9, 2, 3)]),
    ("sinc", lambda a: gv.sinc(a), [_away(_randn(2, 3), (0.0,))]),
    ("polygamma", lambda a: gv.polygamma(1, a), [_uniform(0.5, 3.0, 2, 3)]),
    ("polygamma_", lambda a: (a * 1.0).polygamma_(2), [_uniform(0.5, 3.0, 3)]),
    ("mvlgamma", lambda a: gv.mvlgamma(a, 2), [_uniform(1.0, 3.0, 2, 3)]),
    ("igamma", lambda x: gv.igamma(_c(_uniform(0.5, 2.0, 3, seed=1)), x), [_uniform(0.5, 2.0, 2, 3)]),
    ("igammac", lambda x: gv.igammac(_c(_uniform(0.5, 2.0, 3, seed=1)), x), [_uniform(0.5, 2.0, 2, 3)]),
    ("xlog1py", lambda a, b: gv.special.xlog1py(a, b), [_randn(2, 3), _uniform(-0.5, 2.0, 3, seed=1)]),
    ("xlog1py_self_scalar", lambda b: gv.special.xlog1py(1.5, b), [_uniform(-0.5, 2.0, 3)]),
    ("xlog1py_other_scalar", lambda a: gv.special.xlog1py(a, 0.5), [_randn(3)]),
    ("zeta", lambda q: gv.special.zeta(_c(_uniform(1.5, 3.0, 3, seed=1)), q), [_uniform(0.5, 2.0, 2, 3)]),
    ("zeta_self_scalar", lambda q: gv.special.zeta(2.5, q), [_uniform(0.5, 2.0, 3)]),
    ("round_decimals", lambda a: gv.special.round(a, decimals=1) * a, [np.array([0.12, -0.33, 1.71, 2.04])]),
    ("angle", lambda a: gv.angle(a) + a, [_away(_randn(2, 3), (0.0,))]),
    ("frexp", lambda a: gv.frexp(a)[0], [np.array([0.3, -1.7, 5.5, 0.8])]),
    ("ldexp", lambda a, b: gv.ldexp(a, b), [_randn(2, 3), _randn(3, seed=1)]),
    ("nextafter", lambda a, b: gv.nextafter(a, b), [_randn(2, 3), _randn(2, 3, seed=1)]),
    # reductions and selections
    ("aminmax", lambda a: gv.aminmax(a), [_distinct(2, 3)]),
    ("aminmax", lambda a: gv.aminmax(a, dim=1, keepdim=True), [_distinct(2, 3)]),
    ("cummax", lambda a: gv.cummax(a, 1)[0], [_distinct(2, 4)]),
    ("cummin", lambda a: gv.cummin(a, 0)[0], [_distinct(3, 2)]),
    ("logcumsumexp", lambda a: gv.logcumsumexp(a, 1), [_randn(2, 4)]),
    ("kthvalue", lambda a: gv.kthvalue(a, 2, 1)[0], [_distinct(2, 4)]),
    ("median", lambda a: a.median(), [_distinct(2, 3)]),
    ("median_dim", lambda a: a.median(1)[0], [_distinct(2, 3)]),
    ("nanmedian", lambda a: a.nanmedian(), [_distinct(2, 3)]),
    ("nanmedian_dim", lambda a: a.nanmedian(0, keepdim=True)[0], [_distinct(3, 2)]),
    ("mode", lambda a: a.mode(1)[0], [_distinct(2, 3)]),
    # indexing
    ("index_copy", lambda a, s: a.index_copy(0, _i64(2, 0), s), [_randn(3, 2), _randn(2, 2, seed=1)]),
    ("index_fill", lambda a: a.index_fill(1, _i64(0, 2), -1.5), [_randn(2, 3)]),
    ("index_fill_tensor", lambda a, v: a.index_fill(1, _i64(1), v), [_randn(2, 3), _randn(seed=1)]),
    ("index_put_accumulate", lambda a, v: a.index_put((_i64(0, 2, 0),), v, accumulate=True),
     [_randn(3, 2), _randn(3, 2, seed=1)]),
    ("index_reduce", lambda a, s: a.index_reduce(0, _i64(0, 2, 0), s, "prod"), [_randn(3, 2), _randn(3, 2, seed=1)]),
    ("index_reduce", lambda a, s: a.index_reduce(0, _i64(1, 1), s, "mean", include_self=False),
     [_randn(3, 2), _randn(2, 2, seed=1)]),
    ("index_reduce", lambda a, s: a.index_reduce(1, _i64(0, 0, 1), s, "amax"),
     [_distinct(2, 3), _distinct(2, 3, seed=1)]),
    ("scatter_reduce", lambda a, s: a.scatter_reduce(1, _i64(0, 2, 0, 1, 1, 1).reshape(2, 3), s, "sum"),
     [_randn(2, 3), _randn(2, 3, seed=1)]),
    ("scatter_reduce", lambda a, s: a.scatter_reduce(0, _i64(1, 0, 1).reshape(1, 3), s, "prod", include_self=True),
     [_randn(2, 3), _randn(1, 3, seed=1)]),
    ("scatter_reduce", lambda a, s: a.scatter_reduce(1, _i64(0, 0, 2).reshape(1, 3), s, "amin", include_self=False),
     [_distinct(1, 3), _distinct(1, 3, seed=1) + 0.05]),
    ("scatter_reduce", lambda a, s: a.scatter_reduce(0, _i64(0, 0, 1), s, "mean"), [_randn(2), _randn(3, seed=1)]),
    # prod over zeros: a single zero's gradient is the product of the others; two zeros give none
    ("index_reduce", lambda a, s: a.index_reduce(0, _i64(0, 1, 0), s, "prod"),
     [np.array([[0.0, 1.0], [2.0, 0.5]]), np.array([[2.0, 0.0], [0.0, 1.5], [3.0, 2.0]])]),
    ("scatter_reduce", lambda a, s: a.scatter_reduce(0, _i64(0, 0, 1, 1), s, "prod", include_self=False),
     [np.array([0.0, 2.0]), np.array([1.5, 0.0, 0.0, 3.0])]),
    ("put", lambda a, s: a.put(_i64(4, 0, 2), s), [_randn(2, 3), _randn(3, seed=1)]),
    ("put", lambda a, s: a.put(_i64(1, 1), s, accumulate=True), [_randn(2, 3), _randn(2, seed=1)]),
    ("masked_scatter", lambda a, s: a.masked_scatter(gv.tensor([[True, False, True], [False, False, True]]), s),
     [_randn(2, 3), _randn(4, seed=1)]),
    ("select_scatter", lambda a, s: gv.select_scatter(a, s, 1, 0), [_randn(2, 3), _randn(2, seed=1)]),
    ("slice_scatter", lambda a, s: gv.slice_scatter(a, s, 1, 0, 3, 2), [_randn(2, 3), _randn(2, 2, seed=1)]),
    ("diagonal_scatter", lambda a, s: gv.diagonal_scatter(a, s, 1), [_randn(3, 3), _randn(2, seed=1)]),
    # src only: torch 2.13 gives self the gradient of the scattered positions (zeros elsewhere), the
    # reverse of what the forward reads from it, and gradviz keeps its oracle's numbers
    ("as_strided_scatter", lambda s: gv.as_strided_scatter(_c(_randn(2, 3)), s, (2, 2), (1, 2), 1),
     [_randn(2, 2, seed=1)]),
    # fill as a function, the in-place comparisons (values 0 and 1: a zero gradient), resize
    ("fill_out_of_place", lambda a: gv.fill(a, 2.0) * a, [_randn(2, 3)]),
    ("fill_tensor_out_of_place", lambda a, v: gv.fill(a, v) * a, [_randn(2, 3), _randn(seed=1)]),
    ("eq_scalar_", _cmp_inplace("eq_", 0.75), [_CMP]),
    ("ne_scalar_", _cmp_inplace("ne_", 0.75), [_CMP]),
    ("lt_scalar_", _cmp_inplace("lt_", 0.5), [_CMP]),
    ("le_scalar_", _cmp_inplace("le_", 0.5), [_CMP]),
    ("gt_scalar_", _cmp_inplace("gt_", 0.5), [_CMP]),
    ("ge_scalar_", _cmp_inplace("ge_", 0.5), [_CMP]),
    ("eq_tensor_", _cmp_inplace("eq_"), [_CMP, _CMP_B]),
    ("ne_tensor_", _cmp_inplace("ne_"), [_CMP, _CMP_B]),
    ("lt_tensor_", _cmp_inplace("lt_"), [_CMP, _CMP_B]),
    ("le_tensor_", _cmp_inplace("le_"), [_CMP, _CMP_B]),
    ("gt_tensor_", _cmp_inplace("gt_"), [_CMP, _CMP_B]),
    ("ge_tensor_", _cmp_inplace("ge_"), [_CMP, _CMP_B]),
    # views as copies
    ("alias_copy", lambda a: gv.alias_copy(a), [_randn(2, 3)]),
    ("as_strided_copy", lambda a: gv.as_strided_copy(a, (2, 2), (1, 2), 1), [_randn(2, 3)]),
    ("einsum_diagonal_copy", lambda a: gv.diagonal_copy(a), [_randn(3, 3)]),
    ("expand_copy", lambda a: gv.expand_copy(a, (2, 2, 3)), [_randn(2, 1)]),
    ("narrow_copy", lambda a: gv.narrow_copy(a, 1, 1, 2), [_randn(2, 3)]),
    ("permute_copy", lambda a: gv.permute_copy(a, (2, 0, 1)), [_randn(2, 3, 2)]),
    ("select_copy", lambda a: gv.select_copy(a, 1, 2), [_randn(2, 3)]),
    ("slice_copy", lambda a: gv.slice_copy(a, 1, 0, 3, 2), [_randn(2, 3)]),
    ("split_copy", lambda a: gv.split_copy(a, 2, 1), [_randn(2, 3)]),
    ("split_with_sizes_copy", lambda a: gv.split_with_sizes_copy(a, [1, 2], 1), [_randn(2, 3)]),
    ("unsafe_split", lambda a: gv.unsafe_split(a, 2, 1), [_randn(2, 3)]),
    ("unsafe_split_with_sizes", lambda a: gv.unsafe_split_with_sizes(a, [2, 1], 1), [_randn(2, 3)]),
    ("squeeze_copy", lambda a: gv.squeeze_copy(a), [_randn(1, 3, 1)]),
    ("squeeze_dim_copy", lambda a: gv.squeeze_copy(a, 0), [_randn(1, 3)]),
    ("squeeze_dims_copy", lambda a: gv.squeeze_copy(a, (0, 2)), [_randn(1, 3, 1)]),
    ("t_copy", lambda a: gv.t_copy(a), [_randn(2, 3)]),
    ("transpose_copy", lambda a: gv.transpose_copy(a, 0, 1), [_randn(2, 3)]),
    ("unbind_copy", lambda a: gv.unbind_copy(a, 1), [_randn(2, 3)]),
    ("unfold", lambda a: a.unfold(1, 2, 1), [_randn(2, 4)]),
    ("unfold_copy", lambda a: gv.unfold_copy(a, 0, 2, 2), [_randn(5, 2)]),
    ("unsqueeze_copy", lambda a: gv.unsqueeze_copy(a, 1), [_randn(2, 3)]),
    ("view_copy", lambda a: gv.view_copy(a, (3, 2)), [_randn(2, 3)]),
]
