"""Finite-difference checks of every row of the derivative table (float64, central differences).

For each case, the analytic vector-Jacobian product (backward with a random output gradient) is
compared with the numerical one, ``sum(g * (f(x + eps e_i) - f(x - eps e_i)) / 2 eps)`` for every
element i of every input. Each case also asserts that its graph contains the row's node, and the
table must have at least one case per row, so a new row without a check fails here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import gradviz as gv
from gradviz.ops import functions as F
from gradviz.ops.derivatives import DERIVATIVES
from gradviz.ops.indexing import fw_primal as _fw_primal

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-7


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return _rng(seed).standard_normal(shape)


def away_from(values: np.ndarray, points: tuple[float, ...], margin: float = 0.1) -> np.ndarray:
    """Nudge values off the kinks (abs/relu at 0, clamp bounds) so differences stay one-sided-free."""
    v = values.copy()
    for p in points:
        close = np.abs(v - p) < margin
        v[close] = p + np.where(v[close] >= p, margin, -margin) * 2
    return v


def distinct(*shape: int, seed: int = 0) -> np.ndarray:
    """Values with no ties (max/min pick one element)."""
    n = int(np.prod(shape))
    return (_rng(seed).permutation(n).astype(np.float64) * 0.37 + 0.1).reshape(shape)


def positive(*shape: int, seed: int = 0) -> np.ndarray:
    return _rng(seed).uniform(0.5, 2.0, shape)


def _flat_outputs(out) -> list:
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, gv.Tensor) and o.dtype.is_floating_point]
    return [out]


def _node_names(outs: list) -> set[str]:
    names, stack, seen = set(), [o.grad_fn for o in outs if o.grad_fn is not None], set()
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        names.add(fn.name().rsplit("::", 1)[-1])  # torch's C++ nodes carry their namespace
        stack.extend(f for f, _ in fn.next_functions if f is not None)
    return names


def gradcheck(fn: Callable, inputs: list[np.ndarray], expect: str, seed: int = 1, eps: float = EPS,
              rtol: float = RTOL) -> None:
    xs = [gv.tensor(a, dtype=gv.float64, requires_grad=True) for a in inputs]
    outs = _flat_outputs(fn(*xs))
    assert expect in _node_names(outs), f"{expect} not in the graph: {_node_names(outs)}"
    rng = _rng(seed)
    gs = [rng.standard_normal(o.shape) for o in outs]
    analytic = gv.autograd.grad(outs, xs, [gv.tensor(g) for g in gs], allow_unused=True)

    def f_value(arrays: list[np.ndarray]) -> float:
        # With grad on: some cases differentiate inside (double backward).
        ys = _flat_outputs(fn(*[gv.tensor(a, dtype=gv.float64, requires_grad=True) for a in arrays]))
        return float(sum(np.sum(y.detach().numpy() * g) for y, g in zip(ys, gs)))

    for k, a in enumerate(inputs):
        numeric = np.zeros(a.size)
        for i in range(a.size):
            plus = [x.copy() for x in inputs]
            minus = [x.copy() for x in inputs]
            plus[k].reshape(-1)[i] += eps
            minus[k].reshape(-1)[i] -= eps
            numeric[i] = (f_value(plus) - f_value(minus)) / (2 * eps)
        got = np.zeros(a.shape) if analytic[k] is None else analytic[k].numpy()
        np.testing.assert_allclose(got.reshape(-1), numeric, rtol=rtol, atol=ATOL,
                                   err_msg=f"{expect}: input {k}")


def _double_backward_index(x):
    idx = gv.tensor([0, 2, 2])
    (g,) = gv.autograd.grad((x[idx] ** 3).sum(), x, create_graph=True)
    return g


def _grad_of(op):
    """x, w -> d/dx sum(op(x) * w) with create_graph: the graph holds op's fused backward node,
    with both of its inputs (the incoming gradient w and the saved forward value) differentiable."""

    def fn(x, w):
        (g,) = gv.autograd.grad((op(x) * w).sum(), x, create_graph=True)
        return g

    return fn


def _double_backward_select_slice(x):
    (g,) = gv.autograd.grad((x[1] ** 3).sum() + (x[:, 1:] ** 3).sum(), x, create_graph=True)
    return g


def _inplace_on_view(x, w):
    b = x * 1.5
    b[0].mul_(w)
    v = b[1]
    b.mul_(x)  # v's history is stale now: its grad_fn becomes AsStridedBackward0 of b
    return v * w + b.sum()


def _setitem(x, w):
    b = x * 1
    b[1] = w * w
    b[gv.tensor([0, 1]), gv.tensor([2, 0])] = w[:2]
    return b * x


def _fill_tensor(x, v):
    h = x * 1.5
    h.fill_(v * 2)
    return h * x


def _zero(x):
    h = x * 1.5
    h.zero_()
    return h + x.sin()


def _fill(x):
    h = x * 2
    h.fill_(2.0)
    return h * x


def _max_dim(x):
    v, i = x.max(1)
    return v


def _min_dim(x):
    v, i = x.min(0, keepdim=True)
    return v


# (row key, function, input arrays); several cases per row where shapes matter.
CASES: list[tuple[str, Callable, list[np.ndarray]]] = [
    ("add", lambda a, b: a + b, [randn(2, 3), randn(3, seed=1)]),
    ("add", lambda a, b: gv.add(a, b, alpha=2.5), [randn(2, 1), randn(1, 3, seed=1)]),
    ("add", lambda a: a + 3.0, [randn(3)]),
    ("sub", lambda a, b: a - b, [randn(2, 3), randn(2, 1, seed=1)]),
    ("sub", lambda a, b: gv.sub(a, b, alpha=-0.5), [randn(3), randn(2, 3, seed=1)]),
    ("rsub", lambda a: 2.0 - a, [randn(2, 3)]),
    ("mul", lambda a, b: a * b, [randn(2, 3), randn(3, seed=1)]),
    ("mul", lambda a: a * a, [randn(4)]),
    ("mul", lambda a: a * 3.5, [randn(4)]),
    ("div", lambda a, b: a / b, [randn(2, 3), positive(1, 3, seed=1)]),
    ("div", lambda a: a / 4.0, [randn(3)]),
    ("pow_scalar", lambda a: a ** 3, [randn(2, 3)]),
    ("pow_scalar", lambda a: a ** 0.5, [positive(3)]),
    ("pow_scalar", lambda a: a ** -2, [positive(3)]),
    ("pow_scalar", lambda a: a ** 0, [randn(3)]),
    ("pow_tensor", lambda a, e: a ** e, [positive(2, 3), randn(3, seed=1)]),
    ("pow_tensor", lambda a, e: a ** e, [positive(3), randn(2, 1, seed=1)]),
    ("pow_base", lambda e: 2.0 ** e, [randn(2, 3)]),
    ("pow_base", lambda e: 0.5 ** e, [randn(3)]),
    ("maximum", lambda a, b: gv.maximum(a, b), [distinct(2, 3), distinct(3, seed=1) + 0.05]),
    ("minimum", lambda a, b: gv.minimum(a, b), [distinct(2, 3), distinct(2, 1, seed=1) + 0.05]),
    ("where", lambda a, b: gv.where(gv.tensor([[True, False, True]]), a, b), [randn(2, 3), randn(2, 1, seed=1)]),
    ("where", lambda a: gv.where(gv.tensor([True, False, True]), a, 0.0), [randn(3)]),
    ("neg", lambda a: -a, [randn(3)]),
    ("abs", lambda a: a.abs(), [away_from(randn(2, 3), (0.0,))]),
    ("sqrt", lambda a: a.sqrt(), [positive(2, 3)]),
    ("exp", lambda a: a.exp(), [randn(2, 3)]),
    ("log", lambda a: a.log(), [positive(2, 3)]),
    ("log1p", lambda a: a.log1p(), [positive(2, 3)]),
    ("sin", lambda a: a.sin(), [randn(2, 3)]),
    ("cos", lambda a: a.cos(), [randn(2, 3)]),
    ("tanh", lambda a: a.tanh(), [randn(2, 3)]),
    ("sigmoid", lambda a: a.sigmoid(), [randn(2, 3)]),
    ("relu", lambda a: a.relu(), [away_from(randn(2, 3), (0.0,))]),
    ("sign", lambda a: a.sign() * a, [away_from(randn(2, 3), (0.0,))]),
    ("sgn", lambda a: gv.sgn(a) * a, [away_from(randn(2, 3), (0.0,))]),
    ("threshold_backward", _grad_of(lambda a: a.relu()), [away_from(randn(2, 3), (0.0,)), randn(2, 3, seed=1)]),
    ("tanh_backward", _grad_of(lambda a: a.tanh()), [randn(2, 3), randn(2, 3, seed=1)]),
    ("sigmoid_backward", _grad_of(lambda a: a.sigmoid()), [randn(2, 3), randn(2, 3, seed=1)]),
    ("softmax_backward_data", _grad_of(lambda a: a.softmax(1)), [randn(2, 3), randn(2, 3, seed=1)]),
    ("log_softmax_backward_data", _grad_of(lambda a: a.log_softmax(0)), [randn(2, 3), randn(2, 3, seed=1)]),
    ("add_scalar", _grad_of(lambda a: (a * a).log1p()), [randn(3), randn(3, seed=1)]),
    ("sub_scalar", lambda a, e: _grad_of(lambda x: x ** e)(a, e * 0 + 1), [positive(3), randn(3, seed=1)]),
    ("mul_scalar", _grad_of(lambda a: a ** 3), [randn(3), randn(3, seed=1)]),
    ("div_scalar", _grad_of(lambda a: (a * a).mean()), [randn(3), randn(3, seed=1)]),
    ("div_scalar", lambda a: F.div_scalar(a, 4.0), [randn(3)]),
    ("masked_fill", lambda a: gv.masked_fill(a, gv.tensor([True, False, True]), 2.0), [randn(2, 3)]),
    ("masked_fill_tensor", lambda a, v: gv.masked_fill(a, gv.tensor([True, False, True]), v), [randn(2, 3), randn()]),
    ("scatter", lambda a, s: gv.scatter(a, 1, gv.tensor([[2, 0], [1, 2]]), s), [randn(2, 3), randn(2, 2, seed=1)]),
    ("div_mode", lambda a, b: gv.div(a, b, rounding_mode=None), [randn(2, 3), positive(3)]),
    ("div_mode", lambda a: gv.div(a, 2.5, rounding_mode=None), [randn(2, 3)]),
    ("scatter_value", lambda a: gv.scatter(a, 1, gv.tensor([[2, 0], [1, 2]]), 1.5), [randn(2, 3)]),
    ("scatter_value", lambda a: (a * 1).scatter_(0, gv.tensor([[1, 0, 1]]), value=-2.0), [randn(2, 3)]),
    ("scatter_add", lambda a, s: gv.scatter_add(a, 0, gv.tensor([[1, 0, 1], [1, 1, 0]]), s),
     [randn(2, 3), randn(2, 3, seed=1)]),
    ("gather", lambda a: gv.gather(a, 1, gv.tensor([[2, 2, 0], [1, 0, 0]])), [randn(2, 3)]),
    ("reciprocal", lambda a: 1.0 / a, [positive(3)]),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), [away_from(randn(3, 4), (-0.5, 0.5), 0.05)]),
    ("clamp", lambda a: a.clamp(min=0.2), [away_from(randn(3, 4), (0.2,), 0.05)]),
    ("mm", lambda a, b: a @ b, [randn(2, 3), randn(3, 4, seed=1)]),
    ("mv", lambda a, v: a @ v, [randn(2, 3), randn(3, seed=1)]),
    ("dot", lambda a, b: a @ b, [randn(3), randn(3, seed=1)]),
    ("bmm", lambda a, b: a @ b, [randn(2, 2, 3), randn(2, 3, 2, seed=1)]),
    # Not foldable into one mv (a transposed batch and a constant vector): bmm on an unsqueezed vector.
    ("bmm", lambda a: a.transpose(1, 2) @ gv.tensor(randn(3, seed=1)), [randn(2, 3, 2)]),
    ("unsafe_view", lambda a, b: a @ b, [randn(2, 2, 3), randn(3, 2, seed=1)]),
    ("sum", lambda a: a.sum(), [randn(2, 3)]),
    ("sum_dim", lambda a: a.sum(1), [randn(2, 3, 2)]),
    ("sum_dim", lambda a: a.sum((0, 2), keepdim=True), [randn(2, 3, 2)]),
    ("mean", lambda a: a.mean(), [randn(2, 3)]),
    ("mean_dim", lambda a: a.mean(-1), [randn(2, 3)]),
    ("mean_dim", lambda a: a.mean((0, 1), keepdim=True), [randn(2, 3, 2)]),
    ("max", lambda a: a.max(), [distinct(2, 3)]),
    ("min", lambda a: a.min(), [distinct(2, 3)]),
    ("max_dim", _max_dim, [distinct(3, 4)]),
    ("min_dim", _min_dim, [distinct(3, 4)]),
    ("amax", lambda a: a.amax(1), [distinct(2, 3)]),
    ("amax", lambda a: gv.amax(a), [np.array([[1.0, 3.0], [3.0, 0.5]])]),  # a tie: shared evenly
    ("amin", lambda a: a.amin((0, 1), keepdim=True), [distinct(2, 3)]),
    ("var", lambda a: a.var(), [randn(2, 3)]),
    ("var", lambda a: a.var(1), [randn(2, 3)]),
    ("var", lambda a: a.var(0, keepdim=True, unbiased=False), [randn(3, 2)]),
    ("std", lambda a: a.std(), [randn(2, 3)]),
    ("std", lambda a: a.std(1), [randn(2, 3)]),
    ("std", lambda a: a.std((0, 1), keepdim=True), [randn(2, 3, 2)]),
    ("softmax", lambda a: a.softmax(-1), [randn(2, 4)]),
    ("softmax", lambda a: gv.softmax(a, 0), [randn(3, 2)]),
    ("log_softmax", lambda a: a.log_softmax(1), [randn(2, 4)]),
    ("log_softmax", lambda a: gv.log_softmax(a, 0), [randn(3, 2)]),
    ("view", lambda a: a.view(3, 2) * gv.tensor(randn(3, 2, seed=5)), [randn(2, 3)]),
    ("view", lambda a: a.reshape(-1), [randn(2, 3)]),
    ("unsafe_view", lambda a: a.t().reshape(6), [randn(2, 3)]),
    ("reshape_alias", lambda a: a[:, 1:].reshape(2, 4), [randn(2, 3, 2)]),
    ("t", lambda a: a.t(), [randn(2, 3)]),
    ("transpose", lambda a: a.transpose(0, 2), [randn(2, 3, 2)]),
    ("permute", lambda a: a.permute(2, 0, 1), [randn(2, 3, 4)]),
    ("unsqueeze", lambda a: a.unsqueeze(1), [randn(2, 3)]),
    ("squeeze", lambda a: a.squeeze(), [randn(1, 3, 1)]),
    ("squeeze_dim", lambda a: a.squeeze(0), [randn(1, 3)]),
    ("squeeze_dims", lambda a: a.squeeze((0, 2, 3)), [randn(1, 3, 1, 2)]),
    ("squeeze_dim_", lambda v, m: v @ m, [randn(2), randn(2, 3, seed=1)]),
    # the in-place view ops, on a non-leaf copy (a leaf refuses an in-place change)
    ("unsqueeze_", lambda a: (a * 1).unsqueeze_(1), [randn(2, 3)]),
    ("squeeze_", lambda a: (a * 1).squeeze_(), [randn(1, 3, 1)]),
    ("squeeze_dims_", lambda a: (a * 1).squeeze_((0, 2)), [randn(1, 3, 1, 2)]),
    ("t_", lambda a: (a * 1).t_(), [randn(2, 3)]),
    ("expand", lambda a: a.expand(2, 3, 4), [randn(3, 1)]),
    ("select", lambda a: a[1], [randn(3, 2)]),
    ("select", lambda a: a[:, -1], [randn(3, 2)]),
    ("slice", lambda a: a[1:3], [randn(4, 2)]),
    ("slice", lambda a: a[:, ::2], [randn(2, 5)]),
    ("index", lambda a: a[gv.tensor([0, 2, 2])], [randn(3, 2)]),
    ("index", lambda a: a[gv.tensor([[True, False], [False, True], [True, True]])], [randn(3, 2)]),
    ("index_backward", _double_backward_index, [randn(3, 2)]),
    ("select_backward", _double_backward_select_slice, [randn(3, 3)]),
    ("slice_backward", _double_backward_select_slice, [randn(3, 3)]),
    ("slice", lambda a: a[:], [randn(3, 2)]),
    ("alias", lambda a: a[...], [randn(3, 2)]),
    ("alias", lambda a: a[:, :], [randn(3, 2)]),
    ("fw_primal", lambda a: _fw_primal(a * 1), [randn(3, 2)]),
    ("cat", lambda a, b: gv.cat([a, b, a], 1), [randn(2, 3), randn(2, 1, seed=1)]),
    ("stack", lambda a, b: gv.stack([a, b], 1), [randn(2, 3), randn(2, 3, seed=1)]),
    ("split", lambda a: a.split(2), [randn(5, 2)]),
    ("split", lambda a: a.chunk(3, 1)[1], [randn(2, 3)]),
    ("split_with_sizes", lambda a: a.split([1, 3], 1), [randn(2, 4)]),
    ("unbind", lambda a: a.unbind(1), [randn(2, 3)]),
    ("unbind", lambda a: a.unbind(0)[1], [randn(3, 2)]),
    ("zero", _zero, [randn(3)]),
    ("fill", _fill, [randn(3)]),
    ("fill_tensor", _fill_tensor, [randn(3), randn(seed=1)]),
    ("clone", lambda a: a.clone(), [randn(2, 3)]),
    ("as_strided", _inplace_on_view, [randn(2, 3), randn(3, seed=1)]),
    ("copy", lambda x, w: (x * 1).copy_(w * w) * x, [randn(2, 3), randn(3, seed=1)]),
    ("index_put", _setitem, [randn(2, 3), randn(3, seed=1)]),
    # float32 in the middle: a step of 1e-6 would vanish in rounding, so this one uses a wide step
    # on a function that is linear (exact up to float32 rounding).
    ("to_copy", lambda a: (a.to(gv.float32) * 2).to(gv.float64), [np.round(randn(3) * 8) / 8]),
    # issue 14's tensor surface
    ("addmm", lambda c, a, b: gv.addmm(c, a, b, beta=0.5, alpha=2.0), [randn(3), randn(2, 4, seed=1),
                                                                        randn(4, 3, seed=2)]),
    ("baddbmm", lambda c, a, b: gv.baddbmm(c, a, b, alpha=-1.5), [randn(2, 2, 3), randn(2, 2, 4, seed=1),
                                                                  randn(2, 4, 3, seed=2)]),
    ("floor", lambda a: a.floor() + a, [away_from(randn(2, 3), (-1.0, 0.0, 1.0))]),
    ("ceil", lambda a: a.ceil() * a, [away_from(randn(2, 3), (-1.0, 0.0, 1.0))]),
    ("trunc", lambda a: a.trunc() + a, [away_from(randn(2, 3), (-1.0, 0.0, 1.0))]),
    ("round", lambda a: a.round() + a, [away_from(randn(2, 3), (-0.5, 0.5, 1.5))]),
    ("clamp_min", lambda a: a.clamp_min(0.2), [away_from(randn(3, 4), (0.2,), 0.05)]),
    ("clamp_tensor", lambda a, lo, hi: a.clamp(lo, hi), [np.array([[-2.0, 0.5, 3.0], [0.1, -0.4, 1.7]]),
                                                          np.array([-1.0, 0.0, 0.2]), np.array([[1.0], [1.5]])]),
    ("clamp_max", lambda a: a.clamp_max(-0.1), [away_from(randn(3, 4), (-0.1,), 0.05)]),
    ("cumsum", lambda a: a.cumsum(1), [randn(2, 4)]),
    ("cumprod", lambda a: a.cumprod(0), [randn(4, 2)]),
    ("cumprod", lambda a: a.cumprod(1), [np.array([[1.5, 0.0, 2.0, -1.0], [0.5, 3.0, 0.0, 0.0]])]),
    ("prod", lambda a: a.prod(), [randn(2, 3)]),
    ("prod", lambda a: a.prod(), [np.array([[1.5, 0.0], [2.0, -1.0]])]),
    ("prod_dim", lambda a: a.prod(1), [randn(3, 4)]),
    ("prod_dim", lambda a: a.prod(0, keepdim=True), [np.array([[1.5, 0.0], [2.0, -1.0], [0.0, 0.0]])]),
    ("logsumexp", lambda a: a.logsumexp(1), [randn(2, 4)]),
    ("norm", lambda a: a.norm(), [randn(2, 3)]),
    ("norm", lambda a: a.norm(1, dim=1), [away_from(randn(2, 3), (0.0,))]),
    ("norm", lambda a: a.norm(3, dim=0, keepdim=True), [randn(2, 3)]),
    ("norm", lambda a: a.norm(float("inf"), dim=1), [distinct(2, 3)]),
    ("var_mean", lambda a: gv.var_mean(a, 1), [randn(2, 3)]),
    ("std_mean", lambda a: gv.std_mean(a), [randn(2, 3)]),
    ("index_select", lambda a: a.index_select(1, gv.tensor([2, 0, 2])), [randn(2, 3)]),
    ("index_add", lambda a, s: a.index_add(0, gv.tensor([1, 1, 0]), s, alpha=2.0), [randn(2, 3), randn(3, 3, seed=1)]),
    ("repeat", lambda a: a.repeat(2, 1, 3), [randn(2, 3)]),
    ("flip", lambda a: a.flip(0, 1), [randn(2, 3)]),
    ("roll", lambda a: a.roll((1, -1), (0, 1)), [randn(2, 3)]),
    ("roll", lambda a: a.roll(2), [randn(2, 3)]),
    ("tril", lambda a: a.tril(), [randn(3, 3)]),
    ("triu", lambda a: a.triu(1), [randn(3, 4)]),
    ("sort", lambda a: a.sort(1, descending=True)[0], [distinct(2, 4)]),
    ("topk", lambda a: a.topk(2)[0], [distinct(3, 4)]),
    ("log10", lambda a: a.log10(), [positive(2, 3)]),
    ("log2", lambda a: a.log2(), [positive(2, 3)]),
    ("expm1", lambda a: a.expm1(), [randn(2, 3)]),
    ("rsqrt", lambda a: a.rsqrt(), [positive(2, 3)]),
    ("remainder_scalar", lambda a: a % 1.5, [away_from(randn(2, 3), (-1.5, 0.0, 1.5))]),
    ("remainder", lambda a, b: a % b, [away_from(randn(2, 3) * 3, (-2.0, 0.0, 2.0)), positive(3, seed=1) + 1.0]),
    ("fmod_scalar", lambda a: a.fmod(1.5), [away_from(randn(2, 3), (-1.5, 0.0, 1.5))]),
    ("fmod", lambda a, b: a.fmod(b), [away_from(randn(2, 3) * 3, (-2.0, 0.0, 2.0)), positive(3, seed=1) + 1.0]),
    # gaps (issue 14): einsum's repeated subscripts take a diagonal
    ("einsum_diagonal", lambda a: gv.einsum("bii->bi", a), [randn(2, 3, 3)]),
    ("einsum_diagonal", lambda a, b: gv.einsum("ii,ij->j", a, b), [randn(3, 3), randn(3, 2, seed=1)]),
    # masked_fill_ with a value tensor (MaskedFillBackward1 in place)
    ("masked_fill_tensor", lambda a, v: a.clone().masked_fill_(gv.tensor([True, False, True]), v),
     [randn(2, 3), randn()]),
    # avg_pool2d(ceil_mode=True): the last windows run past the input (and its padding)
    ("avg_pool2d", lambda x: gv.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [randn(1, 2, 6, 5)]),
    ("avg_pool2d", lambda x: gv.nn.functional.avg_pool2d(x, 2, 3, 1, ceil_mode=True, count_include_pad=False),
     [randn(1, 1, 7, 8)]),
    # matrix norms through the singular values
    ("linalg_svd", lambda a: gv.linalg.matrix_norm(a, "nuc"), [randn(3, 4)]),
    ("linalg_svd", lambda a: gv.linalg.matrix_norm(a, -2, dim=(0, 2)), [randn(2, 3, 4)]),
]

# Rows whose backward raises, as torch's (floor_divide, a number % a tensor): tested in
# tests/ops/test_ops_surface_arith.py.
NO_DERIVATIVE = {"not_implemented"}

WIDE_STEP = {"ToCopyBackward0": (1e-2, 1e-5)}

# The nn ops' rows (gradviz/ops/nn_*.py) have their cases beside their tests.
from tests._nn_gradcheck_cases import NN_CASES, NN_WIDE_STEP  # noqa: E402

CASES += NN_CASES
# sparse tensors, diag and elu (gradviz/ops/sparse_ops.py, gradviz/sparse, diag_ops.py, _functional_elu.py)
from tests._sparse_gradcheck_cases import SPARSE_CASES  # noqa: E402

CASES += SPARSE_CASES
# the math ops (gradviz/ops/math_ops.py, math_binary.py)
from tests._math_gradcheck_cases import MATH_CASES, MATH_NO_DERIVATIVE  # noqa: E402
from tests._more_gradcheck_cases import MORE_CASES  # noqa: E402

CASES += MATH_CASES
# the rows of issue 34's nn.utils and nn additions
from tests._nnutils_gradcheck_cases import NNUTILS_CASES  # noqa: E402

CASES += NNUTILS_CASES
CASES += MORE_CASES
from tests._coverage2_gradcheck_cases import COVERAGE2_CASES  # noqa: E402 - as_strided, unsafe_split_with_sizes

CASES += COVERAGE2_CASES
NO_DERIVATIVE |= MATH_NO_DERIVATIVE
# the torch functions, linalg, special and fft rows
from tests._torchfns_gradcheck_cases import TORCHFNS_CASES, TORCHFNS_NO_DERIVATIVE  # noqa: E402

CASES += TORCHFNS_CASES
NO_DERIVATIVE |= TORCHFNS_NO_DERIVATIVE
WIDE_STEP.update(NN_WIDE_STEP)


def _case_id(case: tuple) -> str:
    return case[0]


@pytest.mark.parametrize("key,fn,inputs", CASES, ids=[_case_id(c) for c in CASES])
def test_gradcheck(key, fn, inputs):
    name = DERIVATIVES[key].name
    eps, rtol = WIDE_STEP.get(name, (EPS, RTOL))
    gradcheck(fn, inputs, name, eps=eps, rtol=rtol)


def test_every_row_has_a_case():
    covered = {key for key, _, _ in CASES}
    missing = sorted(set(DERIVATIVES) - covered - NO_DERIVATIVE)
    assert not missing, f"rows of DERIVATIVES without a finite-difference check: {missing}"
