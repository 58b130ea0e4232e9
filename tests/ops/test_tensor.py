"""The Tensor API, creation functions, Node API and printing, side by side with torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz

_RNG_DATA = {
    "big2d": np.random.default_rng(0).standard_normal((40, 50)),
    "t3d": np.random.default_rng(1).standard_normal((4, 5, 6)),
    "wide": np.random.default_rng(2).standard_normal((3, 30)),
    "big3d": np.random.default_rng(3).standard_normal((10, 10, 20)),
}

PRINT_CASES = {
    "floats": lambda T: T.tensor([1.0, 2.5, -3.0]),
    "int_floats": lambda T: T.tensor([1.0, 2.0]),
    "ints": lambda T: T.tensor([[1, 2], [30, 4]]),
    "negative_ints": lambda T: T.tensor([-5, 300]),
    "bools": lambda T: T.tensor([True, False]),
    "bools2d": lambda T: T.tensor([[True, False], [False, False]]),
    "scalar_float": lambda T: T.tensor(3.5),
    "scalar_int": lambda T: T.tensor(3),
    "small_sci": lambda T: T.tensor([1e-5, 1.0]),
    "large_sci": lambda T: T.tensor([1e9, 1.0]),
    "wide_range": lambda T: T.tensor([0.1, 100.0, 12345.678]),
    "int_sci": lambda T: T.tensor([123456.0, 1.0]),
    "nan_inf": lambda T: T.tensor([1.0, float("nan"), float("inf")]),
    "nan_neg_inf": lambda T: T.tensor([0.5, float("nan"), -float("inf")]),
    "only_nan": lambda T: T.tensor([float("nan")]),
    "zeros": lambda T: T.tensor([0.0, 0.0]),
    "neg_zero": lambda T: T.tensor([-0.0, 1.0]),
    "float64": lambda T: T.tensor([1.5, 2.0], dtype=T.float64),
    "float64_2d": lambda T: T.tensor([[1.123456, -2.5], [3.25, 4.0]], dtype=T.float64),
    "float64_sci": lambda T: T.tensor([1e-10, 1e10], dtype=T.float64),
    "requires_grad": lambda T: T.tensor([1.5, 2.0], requires_grad=True),
    "grad_fn": lambda T: T.tensor([1.5, 2.0], requires_grad=True) * 2,
    "scalar_grad_fn": lambda T: T.tensor(2.0, requires_grad=True).exp(),
    "zeros2x3": lambda T: T.zeros(2, 3),
    "ones3d": lambda T: T.ones(2, 2, 2),
    "empty": lambda T: T.zeros(0),
    "empty2d": lambda T: T.zeros(2, 0),
    "empty_float64": lambda T: T.zeros(0, dtype=T.float64),
    "empty_int": lambda T: T.tensor([], dtype=T.int64),
    "arange": lambda T: T.arange(5),
    "arange_summarized": lambda T: T.arange(2000),
    "summarized_2d_ints": lambda T: T.tensor(np.arange(3000).reshape(30, 100)),
    "fractions": lambda T: T.arange(12.0).reshape(3, 4) / 7,
    "eye": lambda T: T.eye(3),
    "full": lambda T: T.full((2,), 7),
    "full_float": lambda T: T.full((2, 2), 1.5),
    "linspace_wraps": lambda T: T.linspace(0, 1, 30),
    "bool_zeros": lambda T: T.zeros(3, dtype=T.bool),
    "big2d": lambda T: T.tensor(_RNG_DATA["big2d"]),
    "t3d_grad": lambda T: T.tensor(_RNG_DATA["t3d"], requires_grad=True),
    "wide_float64_grad": lambda T: T.tensor(_RNG_DATA["wide"], dtype=T.float64, requires_grad=True),
    "big3d": lambda T: T.tensor(_RNG_DATA["big3d"]),
    "max_dim": lambda T: T.tensor([1.0, 2.0, 3.0]).max(0),
    "min_dim": lambda T: T.tensor([[1.0, 2.0, 3.0]]).min(1),
    "size": lambda T: T.tensor([1, 2]).shape,
    "dtype": lambda T: T.float64,
    "device": lambda T: T.tensor([1.0]).device,
}


@pytest.mark.parametrize("name", list(PRINT_CASES))
def test_printing_matches_torch(name):
    make = PRINT_CASES[name]
    expected = str(make(torch))
    assert str(make(gradviz)) == expected
    assert repr(make(gradviz)) == repr(make(torch))


def test_tensor_attributes():
    for T in (torch, gradviz):
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        assert tuple(x.shape) == (2, 3) and x.ndim == 2 and x.dim() == 2 and x.numel() == 6
        assert x.size() == x.shape and x.size(1) == 3 and len(x) == 2
        assert str(x.dtype) == "torch.float32" and str(x.device) == "cpu"
        assert x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
        y = x * 2
        assert not y.is_leaf and y.requires_grad and y.grad_fn.name() == "MulBackward0"
        assert x.detach().requires_grad is False and x.detach().is_leaf
        assert x.detach().numpy().tolist() == x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        assert y[1, 2].item() == 12.0 and isinstance(T.tensor(3).item(), int)
        assert isinstance(T.tensor(True).item(), bool)
        assert T.tensor([1, 2]).dtype == T.int64 and T.tensor([True]).dtype == T.bool
        assert T.tensor(np.array([1.0])).dtype == T.float64
        assert x.clone().requires_grad and x.clone().grad_fn.name() == "CloneBackward0"
        assert x.to(T.float64).dtype == T.float64 and x.to(T.float64).grad_fn.name() == "ToCopyBackward0"
        assert x.to(T.float32) is x
        assert float(T.tensor(2.5)) == 2.5 and int(T.tensor(3)) == 3


def test_requires_grad_flags():
    for T in (torch, gradviz):
        x = T.tensor([1.0, 2.0])
        assert x.requires_grad_() is x and x.requires_grad
        x.requires_grad = False
        assert not x.requires_grad
        y = T.ones(2, requires_grad=True)
        assert y.requires_grad


def test_retain_grad_and_register_hook():
    for T in (torch, gradviz):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        h.retain_grad()
        assert h.retains_grad and not x.retains_grad
        seen = []
        handle = h.register_hook(lambda g, seen=seen: seen.append(g.tolist()))
        (h * h).sum().backward()
        assert h.grad.tolist() == [6.0, 12.0] and seen == [[6.0, 12.0]]
        handle.remove()
        assert x.grad.tolist() == [18.0, 36.0]


def test_version_counter():
    for T in (torch, gradviz):
        x = T.zeros(3)
        v = x[1:]
        assert x._version == 0 and isinstance(x._version, int)
        x.add_(1)
        assert x._version == 1 and v._version == 1
        v.mul_(2)
        assert x._version == 2 and x.tolist() == [1.0, 2.0, 2.0]
        x.zero_()
        x.fill_(4.0)
        assert x._version == 4 and x.detach()._version == 4


def test_numpy_shares_memory_and_from_numpy():
    for T in (torch, gradviz):
        a = np.array([1.0, 2.0])
        t = T.from_numpy(a)
        assert t.dtype == T.float64
        a[0] = 5.0
        assert t.tolist() == [5.0, 2.0]
        t.add_(1.0)
        assert a.tolist() == [6.0, 3.0]
        assert t.numpy() is a or np.shares_memory(t.numpy(), a)


def test_creation_functions_match_torch():
    makers = {
        "zeros": lambda T: T.zeros(2, 3),
        "zeros_tuple": lambda T: T.zeros((2, 3), dtype=T.float64),
        "ones": lambda T: T.ones(3),
        "zeros_like": lambda T: T.zeros_like(T.ones(2, dtype=T.float64)),
        "ones_like": lambda T: T.ones_like(T.tensor([1, 2])),
        "full": lambda T: T.full((2, 2), 3.0),
        "full_int": lambda T: T.full((2,), 3),
        "full_bool": lambda T: T.full((2,), True),
        "arange": lambda T: T.arange(5),
        "arange_float": lambda T: T.arange(0, 1, 0.25),
        "arange_start": lambda T: T.arange(2, 7, 2),
        "eye": lambda T: T.eye(3),
        "eye_rect": lambda T: T.eye(2, 3),
        "tensor_nested": lambda T: T.tensor([[1, 2], [3, 4]]),
        "tensor_float64": lambda T: T.tensor([1, 2], dtype=T.float64),
    }
    for name, make in makers.items():
        a, b = make(torch), make(gradviz)
        assert str(b.dtype) == str(a.dtype), name
        assert tuple(b.shape) == tuple(a.shape), name
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=name)
        assert b.requires_grad is False and b.is_leaf
    assert gradviz.zeros(2, requires_grad=True).requires_grad


def test_random_with_manual_seed_is_repeatable():
    gradviz.manual_seed(123)
    a, b = gradviz.randn(2, 3), gradviz.rand(4)
    gradviz.manual_seed(123)
    assert gradviz.randn(2, 3).tolist() == a.tolist() and gradviz.rand(4).tolist() == b.tolist()
    assert a.dtype == gradviz.float32 and tuple(a.shape) == (2, 3)
    assert 0.0 <= b.numpy().min() and b.numpy().max() < 1.0
    r = gradviz.randn(3, requires_grad=True, dtype=gradviz.float64)
    assert r.requires_grad and r.dtype == gradviz.float64


def test_comparisons_return_bool_tensors():
    for T in (torch, gradviz):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        for m in (x > 2, x < 2, x >= 2, x <= 2, x == 2, x != 2, x > T.tensor([0.0, 5.0, 3.0])):
            assert m.dtype == T.bool and not m.requires_grad and m.grad_fn is None
        assert (x > 1.5).tolist() == [False, True, True]


def test_node_api():
    for T in (torch, gradviz):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        a = x * 2
        b = a.exp()
        fn = b.grad_fn
        assert fn.name() == "ExpBackward0"
        assert fn.next_functions[0][0] is a.grad_fn
        assert a.grad_fn.next_functions[1] == (None, 0)
        acc = a.grad_fn.next_functions[0][0]
        assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
        assert fn._sequence_nr() == a.grad_fn._sequence_nr() + 1
        assert fn.metadata == {} and isinstance(fn.metadata, dict)
        fn.metadata["k"] = 1
        assert b.grad_fn.metadata["k"] == 1
        calls = []
        h1 = fn.register_prehook(lambda go, calls=calls: calls.append("pre"))
        h2 = fn.register_hook(lambda gi, go, calls=calls: calls.append("post"))
        b.sum().backward(retain_graph=True)
        assert calls == ["pre", "post"]
        h1.remove()
        h2.remove()
        b.sum().backward()
        assert calls == ["pre", "post"]


def test_saved_tensors_as_node_attributes():
    for T in (torch, gradviz):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = T.tensor([3.0, 4.0], requires_grad=True)
        m = x * y
        assert m.grad_fn._saved_self is x and m.grad_fn._saved_other is y
        e = x.exp()
        assert T.equal(e.grad_fn._saved_result, e)
        e.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            e.grad_fn._saved_result  # noqa: B018
        with pytest.raises(AttributeError):
            e.grad_fn._saved_nothing  # noqa: B018


def test_graph_freed_without_gc():
    # torch frees a graph by refcount the moment its last user goes (its C++ nodes cannot be
    # weakly referenced, so only gradviz is observed here): a saved output must not form a cycle.
    import gc
    import weakref

    gc.disable()
    try:
        x = gradviz.tensor([1.0, 2.0], requires_grad=True)
        for make in (lambda t: t.exp(), lambda t: t.tanh(), lambda t: t.sigmoid(), lambda t: t.sqrt()):
            y = make(x)  # each of these nodes saves its result
            ref = weakref.ref(y.grad_fn)
            del y
            assert ref() is None, ref
    finally:
        gc.enable()


def test_cpp_node_names_carry_torchs_namespace():
    """torch's C++-defined nodes name themselves with their namespace (a program may compare
    name() with 'torch::autograd::AccumulateGrad'); the type name and repr stay short."""
    got = []
    for T in (torch, gradviz):
        x = T.zeros(3, requires_grad=True)
        y = x * 1
        y[0] = 5.0
        acc = (x * 2).grad_fn.next_functions[0][0]
        got.append((acc.name(), type(acc).__name__, y.grad_fn.name(), type(y.grad_fn).__name__,
                    (x * 2).grad_fn.name(), repr(y).split("grad_fn=")[1]))
    assert got[1] == got[0]


def test_import_gradviz_as_torch_snippet():
    import gradviz as torch  # noqa: F811 - the point: torch code runs unchanged

    torch.manual_seed(0)
    w = torch.randn(3, 2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    x = torch.tensor([[1.0, 2.0, 3.0]])
    with torch.no_grad():
        assert not (x @ w).requires_grad
    loss = ((x @ w + b).relu() ** 2).mean()
    loss.backward()
    assert w.grad.shape == w.shape and b.grad.shape == b.shape
    assert loss.grad_fn.name() == "MeanBackward0"


def test_every_gradviz_package_is_installed():
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[2]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "gradviz").rglob("__init__.py")}
    assert found <= listed, f"packages not installed: {sorted(found - listed)}"


_TENSORS_IN_LISTS = {
    "0-d tensors": lambda m: [m.tensor(1.0), m.tensor(2.0)],
    "one-element tensors of any shape": lambda m: [m.ones(1, 1), m.ones(1)],
    "float64 and float32 tensors": lambda m: [m.tensor(1.0, dtype=m.float64), m.tensor(2.0)],
    "a float32 tensor and a float": lambda m: [m.tensor(1.0), 2.5],
    "a bool tensor and an int": lambda m: [m.tensor(True), 1],
    "an int64 tensor and a float": lambda m: [m.tensor(3), 0.5],
    "nested": lambda m: [[m.tensor(1.0), 2.0], [3.0, m.tensor(4.0, dtype=m.float64)]],
}


@pytest.mark.parametrize("case", sorted(_TENSORS_IN_LISTS))
def test_tensors_inside_a_list_are_scalars_as_torch_reads_them(case):
    make = _TENSORS_IN_LISTS[case]
    want = torch.tensor(make(torch))
    got = gradviz.tensor(make(gradviz))
    assert got.shape == tuple(want.shape) and str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_tensor_of_several_elements_inside_a_list_is_refused_as_torch():
    with pytest.raises(ValueError) as want:
        torch.tensor([torch.ones(2), torch.ones(2)])
    with pytest.raises(ValueError) as got:
        gradviz.tensor([gradviz.ones(2), gradviz.ones(2)])
    assert str(got.value) == str(want.value)
