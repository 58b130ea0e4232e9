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
