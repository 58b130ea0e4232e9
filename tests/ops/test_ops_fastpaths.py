"""The ops' fast paths compute what their general paths compute, bit for bit.

Backward formulas run on the arrays when no graph is built (create_graph=False) and through
tensor ops otherwise (create_graph=True records torch's double-backward graph); both must give
the same floats, dtype, shape and layout. Forward ops have fast paths for common operand kinds
(a floating tensor and a Python number, two tensors of one dtype, 2-d mm, nll_loss with plain
class indices, log_softmax over short rows) whose results must match the general code's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz
from gradviz.nn import functional as GF

# Sizes on both sides of the 4096-element line where the kernels switch to out= buffers.
SHAPES = [(3,), (2, 5), (64, 80)]
DTYPES = [np.float32, np.float64]


def _leaf(shape, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return gradviz.tensor((rng.standard_normal(shape) * scale).astype(dtype), requires_grad=True)


def _grads(fn, leaves, upstream, create_graph):
    out = fn(*leaves)
    gs = gradviz.autograd.grad(out, leaves, upstream, create_graph=create_graph)
    return [g.detach().numpy() for g in gs]


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.strides == b.strides, (a.strides, b.strides)
    assert a.tobytes() == b.tobytes()


UNARY = {
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "softmax": lambda x: x.softmax(-1),
    "log_softmax": lambda x: x.log_softmax(-1),
    "mul_number": lambda x: x * 0.37,
    "mul_int": lambda x: x * 3,
    "add_alpha": lambda x: gradviz.add(x, x * x, alpha=0.5),
    "sub_alpha": lambda x: gradviz.sub(x, x * x, alpha=3),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_fast_path_equals_formula_path(name, shape, dtype):
    fn = UNARY[name]
    x = _leaf(shape, dtype)
    up = gradviz.tensor(np.random.default_rng(1).standard_normal(shape).astype(dtype))
    fast = _grads(fn, [x], up, create_graph=False)
    slow = _grads(fn, [x], up, create_graph=True)
    for a, b in zip(fast, slow):
        _same(a, b)


@pytest.mark.parametrize("shape", [(), (5,), (64, 80)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_tanh_backward_inline_path_equals_kernel(shape, dtype):
    # TanhBackward0's formula computes g * (1 - y * y) with a 0-d one of y's dtype below the
    # kernels' out= size: the same floats as the kernel's Python 1 (and the create_graph path).
    rng = np.random.default_rng(0)
    x = gradviz.tensor(np.asarray(rng.standard_normal(shape) * 2, dtype=dtype), requires_grad=True)
    up = gradviz.tensor(np.asarray(rng.standard_normal(shape), dtype=dtype))
    fast = _grads(lambda t: t.tanh(), [x], up, create_graph=False)[0]
    y = np.tanh(x.detach().numpy())
    want = np.asarray(up.numpy() * (1 - y * y))
    _same(fast, want)
    _same(fast, _grads(lambda t: t.tanh(), [x], up, create_graph=True)[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["row", "col_self", "col_mat2", "col_both"])
def test_mm_backward_fast_path_keeps_values_and_layout(dtype, layout):
    a = _leaf((6, 4), dtype)
    b = _leaf((4, 5), dtype, seed=2)
    if layout in ("col_self", "col_both"):
        a = gradviz.tensor(np.asfortranarray(a.detach().numpy()), requires_grad=True)
    if layout in ("col_mat2", "col_both"):
        b = gradviz.tensor(np.asfortranarray(b.detach().numpy()), requires_grad=True)
    up = gradviz.tensor(np.random.default_rng(3).standard_normal((6, 5)).astype(dtype))
    fast = _grads(lambda p, q: p @ q, [a, b], up, create_graph=False)
    slow = _grads(lambda p, q: p @ q, [a, b], up, create_graph=True)
    for f, s in zip(fast, slow):
        _same(f, s)
    # and torch agrees on the layout it gives (column-major in, column-major gradient out)
    ta = torch.tensor(a.detach().numpy()).requires_grad_()
    tb = torch.tensor(b.detach().numpy()).requires_grad_()
    if layout in ("col_self", "col_both"):
        ta = torch.tensor(np.ascontiguousarray(a.detach().numpy().T)).t().requires_grad_()
    if layout in ("col_mat2", "col_both"):
        tb = torch.tensor(np.ascontiguousarray(b.detach().numpy().T)).t().requires_grad_()
    ga, gb = torch.autograd.grad(ta @ tb, [ta, tb], torch.tensor(up.numpy()))
    assert ga.stride() == tuple(s // fast[0].itemsize for s in fast[0].strides)
    assert gb.stride() == tuple(s // fast[1].itemsize for s in fast[1].strides)


def test_saved_tensor_checks_survive_the_fast_path():
    x = _leaf((3,), np.float32)
    y = x.tanh()
    s = y.sum()
    y.mul_(2)  # tanh saved its result: backward must refuse it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.backward()
    x = _leaf((2, 3), np.float32)
    w = _leaf((3, 4), np.float32, seed=1)
    out = (x @ w).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


# -- forward fast paths ---------------------------------------------------------------------


@pytest.mark.parametrize("tdtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("number", [2, 0.5, True, -3])
@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("shape", [(), (3,)])
def test_tensor_number_ops_as_torch(tdtype, number, op, shape):
    vals = np.array([1, 0, 1][: (3 if shape else 1)]).reshape(shape)
    res = []
    for T in (torch, gradviz):
        t = T.tensor(vals, dtype=getattr(T, tdtype))
        r = t + number if op == "add" else t * number
        res.append(r)
    want, got = res
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert type(got._data) is np.ndarray and got._data.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_same_dtype_tensor_ops_cast_back_a_widening_alpha():
    # numpy widens float32 + float32 * np.float64 to float64; torch keeps float32
    a, b = gradviz.ones(3), gradviz.ones(3)
    assert gradviz.add(a, b, alpha=np.float64(0.5)).dtype is gradviz.float32
    assert (a + b).dtype is gradviz.float32 and (a * b).dtype is gradviz.float32


def test_nll_loss_plain_path_equals_general_path():
    rng = np.random.default_rng(4)
    z = rng.standard_normal((64, 10)).astype(np.float32)
    t = rng.integers(0, 10, 64)
    ones = gradviz.ones(10)
    for reduction in ("mean", "sum"):
        outs = []
        for weight in (None, ones):  # a weight of ones takes the general path: same floats
            x = gradviz.tensor(z, requires_grad=True)
            loss = GF.cross_entropy(x, gradviz.tensor(t), weight=weight, reduction=reduction)
            loss.backward()
            outs.append((loss.detach().numpy(), x.grad.numpy()))
        _same(outs[0][0], outs[1][0])
        _same(outs[0][1], outs[1][1])
        tx = torch.tensor(z, requires_grad=True)
        tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t), reduction=reduction)
        tl.backward()
        np.testing.assert_allclose(outs[0][0], tl.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(outs[0][1], tx.grad.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", ["ignored_present", "ignored_absent", "out_of_range", "negative"])
def test_nll_loss_targets_off_the_plain_path(case):
    z = np.random.default_rng(5).standard_normal((4, 3))
    t = {"ignored_present": [0, 2, 1, 2], "ignored_absent": [0, 1, 1, 0], "out_of_range": [0, 3, 1, 2],
         "negative": [0, -1, 1, 2]}[case]
    res = []
    for T in (torch, gradviz):
        x = T.tensor(z, requires_grad=True)
        try:
            loss = T.nn.functional.nll_loss(x, T.tensor(t), ignore_index=2)
            loss.backward()
            res.append((loss.detach().numpy(), x.grad.numpy()))
        except (IndexError, RuntimeError) as exc:
            res.append(type(exc))
    if isinstance(res[0], tuple):
        np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
        np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)
    else:
        assert not isinstance(res[1], tuple), "gradviz accepted targets torch refuses"


def test_nll_loss_backward_rechecks_a_target_changed_in_place():
    # gradviz keeps the target unversioned (torch would refuse the backward); the plain-path
    # shortcut must not outlive the change: backward sees the ignored entry.
    x = gradviz.tensor(np.zeros((3, 4)), requires_grad=True)
    t = gradviz.tensor([0, 1, 2])
    loss = GF.nll_loss(x, t, reduction="sum")
    t[1] = -100
    loss.backward()
    want = np.zeros((3, 4))
    want[0, 0] = want[2, 2] = -1.0
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("shape,dim", [((64, 10), 1), ((64, 10), -1), ((5, 100), 1), ((10, 64), 0), ((3, 4, 5), 2)])
def test_log_softmax_values_as_the_plain_formula(shape, dim):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32) * 10
    x.flat[7] = np.nan
    got = gradviz.tensor(x).log_softmax(dim).numpy()
    shifted = x - x.max(axis=dim, keepdims=True)
    want = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
    np.testing.assert_array_equal(got, want)


def test_log_softmax_bad_dim_still_raises():
    with pytest.raises(IndexError):
        gradviz.ones(2, 3).log_softmax(2)


def test_mm_fast_path_keeps_the_errors():
    a = gradviz.ones(2, 3)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        a @ gradviz.ones(2, 3)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ gradviz.ones(3, 2, dtype=gradviz.float64)


def _names(t) -> list[str]:
    seen, out, stack = set(), [], [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(type(fn).__name__)
        stack.extend(f for f, _ in fn.next_functions)
    return sorted(out)


def test_number_formulas_record_torchs_nodes_under_create_graph():
    # var's formula scales the incoming gradient by a number (MulBackward1 when that gradient
    # requires grad); differentiating through that node with create_graph must record torch's
    # MulBackward1 again, not the array fast path's nothing or a MulBackward0.
    got = []
    for T in (torch, gradviz):
        x = T.tensor([0.5, -1.0, 2.0, 0.25], dtype=T.float64, requires_grad=True)
        v = T.tensor(1.5, dtype=T.float64, requires_grad=True)
        (g1,) = T.autograd.grad(x.var(), x, grad_outputs=v, create_graph=True)
        (g2,) = T.autograd.grad((g1 * g1).sum(), v, create_graph=True)
        got.append((_names(g1), _names(g2), g2.detach().numpy()))
    assert "MulBackward1" in got[0][1]
    assert got[1][0] == got[0][0]
    assert got[1][1] == got[0][1]
    np.testing.assert_allclose(got[1][2], got[0][2], rtol=1e-12)


@pytest.mark.parametrize("shapes", [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,))])
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"), ("float32", "float64"),
                                    ("int64", "int64"), ("int64", "float32")])
def test_tensor_tensor_add_as_torch(shapes, dtypes):
    rng = np.random.default_rng(8)
    res = []
    for T in (torch, gradviz):
        a = T.tensor(rng.integers(-3, 3, shapes[0]), dtype=getattr(T, dtypes[0]))
        b = T.tensor(rng.integers(-3, 3, shapes[1]), dtype=getattr(T, dtypes[1]))
        res.append(a + b)
        rng = np.random.default_rng(8)
    want, got = res
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert type(got._data) is np.ndarray and got._data.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
