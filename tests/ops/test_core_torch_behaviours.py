"""Behaviours found to differ from torch 2.13 (issue 34 item 7, issue 35 item 10), each compared
with torch itself: device equality, the legacy constructor's dtype, numpy indices in assignment,
deepcopy's strides, printing."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import gradviz


@pytest.mark.parametrize("other", ["cpu", "auto", "cuda", 0, None])
def test_device_compares_equal_only_to_a_device(other):
    for T in (torch, gradviz):
        d = T.device("cpu")
        assert (d == other) is (torch.device("cpu") == other) is False
        assert (d != other) is True
    assert gradviz.device("cpu") == gradviz.device("cpu") and gradviz.device("virtual:1") != gradviz.device("cpu")


@pytest.mark.parametrize("np_dtype", [np.int64, np.int32, np.float64, np.float16, np.uint8, np.bool_])
def test_legacy_tensor_of_an_array_is_in_the_default_dtype(np_dtype):
    arr = np.arange(4).astype(np_dtype)
    for T in (torch, gradviz):
        t = T.Tensor(arr)
        assert str(t.dtype) == str(torch.Tensor(arr).dtype) == "torch.float32"
        assert t.tolist() == torch.Tensor(arr).tolist()


def test_legacy_tensor_of_a_float32_array_shares_its_memory_as_torch():
    for T in (torch, gradviz):
        arr = np.zeros(3, np.float32)
        t = T.Tensor(arr)
        arr[0] = 9
        assert t.tolist() == [9.0, 0.0, 0.0]


def _assign(T, key_fn, value):
    t = T.zeros(3, 4)
    t[key_fn()] = value
    return t.tolist()


_KEYS = {
    "ellipsis, np.int64": lambda: (Ellipsis, np.int64(2)),
    "np.int32 alone": lambda: np.int32(1),
    "slice, np.int64": lambda: (slice(None), np.int64(0)),
    "index array": lambda: np.array([0, 2]),
    "slice, index array": lambda: (slice(None), np.array([1, 3])),
    "bool array": lambda: np.array([True, False, True]),
    "np.int64 pair": lambda: (np.int64(1), np.int64(3)),
}


@pytest.mark.parametrize("name", list(_KEYS))
def test_assignment_through_numpy_indices_writes(name):
    assert _assign(gradviz, _KEYS[name], 5.0) == _assign(torch, _KEYS[name], 5.0)


@pytest.mark.parametrize("name", list(_KEYS))
def test_indexing_with_numpy_indices_records_torchs_node(name):
    names = []
    for T in (torch, gradviz):
        x = T.arange(12.0).view(3, 4).requires_grad_()
        y = x[_KEYS[name]()]
        y.sum().backward()
        names.append((y.grad_fn.name(), y.tolist(), x.grad.tolist()))
    assert names[0] == names[1]


def test_deepcopy_keeps_a_transposed_tensors_strides():
    draws = []
    for T in (torch, gradviz):
        T.manual_seed(0)
        b = copy.deepcopy(T.zeros(5, 8).t())
        b.normal_()
        p = copy.deepcopy(T.nn.Parameter(T.zeros(5, 8).t()))
        with T.no_grad():
            p.uniform_()
        draws.append((b.is_contiguous(), p.is_contiguous(), b.tolist(), p.tolist()))
    assert draws[0][:2] == draws[1][:2] == (False, False)
    np.testing.assert_allclose(draws[1][2], draws[0][2], rtol=1e-6)
    np.testing.assert_allclose(draws[1][3], draws[0][3], rtol=1e-6)


_PRINTS = {
    "dtype": lambda T: T.float32,
    "int dtype": lambda T: T.ones(2, dtype=T.int64).dtype,
    "size": lambda T: T.ones(2, 3).shape,
    "size()": lambda T: T.ones(2, 3).size(),
    "empty size": lambda T: T.ones(()).shape,
    "type()": lambda T: T.ones(2).type(),
    "max's tuple": lambda T: T.tensor([1.0, 3.0]).max(0),
    "layout": lambda T: T.ones(2).layout,
}


@pytest.mark.parametrize("name", list(_PRINTS))
def test_dtypes_and_sizes_print_as_torchs(name):
    make = _PRINTS[name]
    assert repr(make(gradviz)) == repr(make(torch)) and str(make(gradviz)) == str(make(torch))
    assert f"{make(gradviz)}" == f"{make(torch)}"


# -- autograd: graphs and hooks ------------------------------------------------------------------


def _graph(fn) -> list:
    """Every node under fn, depth first: (name, next names), namespaces dropped."""
    out, seen = [], set()

    def walk(f):
        if f is None or f in seen:
            return
        seen.add(f)
        out.append((f.name().split("::")[-1], [g.name().split("::")[-1] if g else None for g, _ in f.next_functions]))
        for g, _ in f.next_functions:
            walk(g)

    walk(fn)
    return out


def test_double_backward_through_tanh_records_torchs_graph():
    runs = []
    for T in (torch, gradviz):
        x = T.tensor([[0.1, -0.3], [0.5, 0.7]], requires_grad=True)
        (g,) = T.autograd.grad(T.tanh(x).sum(), x, create_graph=True)
        graph = _graph(g.grad_fn)
        g.sum().backward()
        runs.append((graph, x.grad.tolist()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-6)


def _addmm_program(T, colmajor_mat1: bool, linear: bool):
    m1 = T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, -1.0], [0.5, 0.25]], requires_grad=True)
    w = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [0.1, 0.2, 0.3], [1.0, 1.0, 1.0]], requires_grad=True)
    b = T.tensor([0.1, 0.2, 0.3], requires_grad=True)
    mat1 = m1.t() if colmajor_mat1 else m1.t().contiguous()
    if linear:  # Linear's addmm: mat2 is weight.t(), column-major
        out = T.nn.functional.linear(mat1, w.t().contiguous(), b)
    else:
        out = T.addmm(b, mat1, w, alpha=0.5)
    grads = T.autograd.grad((out**2).sum(), (b, m1, w), create_graph=True)
    graphs = [_graph(g.grad_fn) for g in grads]
    sum(g.sum() for g in grads).backward()
    return graphs, [t.grad.tolist() for t in (m1, w, b)]


@pytest.mark.parametrize("linear", [False, True], ids=["addmm", "linear"])
@pytest.mark.parametrize("colmajor", [True, False], ids=["column-major", "row-major"])
def test_double_backward_through_addmm_records_torchs_graph(colmajor, linear):
    want = _addmm_program(torch, colmajor, linear)
    got = _addmm_program(gradviz, colmajor, linear)
    assert got[0] == want[0]
    for a, b in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_a_first_gradient_stored_with_create_graph_is_copied_as_torch_copies_it():
    seen = []
    for T in (torch, gradviz):
        x = T.ones(3, requires_grad=True)
        (x * x).sum().backward(create_graph=True)
        fn = x.grad.grad_fn
        y = T.ones(3, requires_grad=True)
        (y * 2).sum().backward(create_graph=True)  # a gradient without history: no node
        seen.append((fn.name(), _graph(fn), y.grad.grad_fn is None, y.grad.requires_grad))
        x.grad.sum().backward()
        seen.append(x.grad.tolist())
    assert seen[0] == seen[2] and seen[0][0] == "torch::autograd::CopyBackwards"
    assert seen[1] == seen[3]


def test_accumulate_grad_hooks_run_in_torchs_order_and_see_what_torch_hands_them():
    logs = []
    for T in (torch, gradviz):
        log = []
        x = T.ones(3, requires_grad=True)
        x.grad = T.full((3,), 5.0)
        y = (x * 2).sum()
        acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
        acc.register_hook(lambda gi, go, x=x, log=log: log.append(("node post", gi, [g.tolist() for g in go],
                                                                   x.grad.tolist())))
        acc.register_prehook(lambda gi, log=log: log.append(("node pre", [g.tolist() for g in gi])) or (gi[0] + 1,))
        x.register_hook(lambda g, log=log: log.append(("tensor pre", g.tolist())) or g * 3)
        x.register_post_accumulate_grad_hook(lambda t, log=log: log.append(("post accumulate", t.grad.tolist())))
        y.backward()
        logs.append(log)
    assert logs[0] == logs[1]
    assert [e[0] for e in logs[0]] == ["tensor pre", "node pre", "post accumulate", "node post"]


def test_double_backward_through_scaled_baddbmm_and_addmm_multiplies_by_a_scalar_as_torch():
    runs = []
    for T in (torch, gradviz):
        T.manual_seed(0)
        inp, b1, b2 = T.rand(2, 3, 4), T.rand(2, 3, 5), T.rand(2, 5, 4)
        for t in (inp, b1, b2):
            t.requires_grad_()
        out = T.baddbmm(inp, b1, b2, beta=0.5, alpha=2.0)
        grads = T.autograd.grad((out**2).sum(), (inp, b1, b2), create_graph=True)
        graphs = [_graph(g.grad_fn) for g in grads]
        sum(g.sum() for g in grads).backward()
        runs.append((graphs, [t.grad.tolist() for t in (inp, b1, b2)]))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[1][1], runs[0][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)
