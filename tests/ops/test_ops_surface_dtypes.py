"""Issue 14's dtypes and construction against torch 2.13: the ten dtypes, torch's type promotion,
set_default_dtype/get_default_dtype, the legacy constructors, new_*, as_tensor and from_numpy
sharing memory, the factories (arange, linspace, logspace, full, eye, meshgrid, zeros(size=)),
nelement/numel and inference_mode."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from _surface import G, same, same_error, x64

import gradviz

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_exists_with_torch_properties(name):
    t, g = getattr(torch, name), getattr(gradviz, name)
    assert (g.is_floating_point, g.itemsize, g.is_signed) == (t.is_floating_point, t.itemsize, t.is_signed)
    assert repr(g) == repr(t)


def test_dtype_aliases():
    for alias in ("float", "double", "half", "long", "int", "short"):
        assert getattr(gradviz, alias).name == str(getattr(torch, alias)).split(".")[1], alias


def _values(name):
    return [0, 1, 1] if name == "bool" else [1, 2, 3]


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promotion_of_two_tensors(a, b):
    # add promotes as torch's promoteTypes; bool + bool is logical or, as torch's
    same(lambda T: T.tensor(_values(a), dtype=getattr(T, a)) + T.tensor(_values(b), dtype=getattr(T, b)))


SCALAR_PROMOTION = {
    "int32_plus_int": lambda T: T.tensor([1, 2], dtype=T.int32) + 3,
    "int32_times_float": lambda T: T.tensor([1, 2], dtype=T.int32) * 0.5,
    "uint8_plus_bool": lambda T: T.tensor([1, 2], dtype=T.uint8) + True,
    "bool_plus_int": lambda T: T.tensor([True, False]) + 2,
    "float16_plus_float": lambda T: T.tensor([1.5, 2.0], dtype=T.float16) + 2.25,
    "bfloat16_times_int": lambda T: T.tensor([1.5, 2.0], dtype=T.bfloat16) * 3,
    "int8_plus_0dim_int64": lambda T: T.tensor([1, 2], dtype=T.int8) + T.tensor(5),
    "int16_plus_0dim_float64": lambda T: T.tensor([1, 2], dtype=T.int16) + T.tensor(0.5, dtype=T.float64),
    "float16_plus_0dim_float64": lambda T: T.tensor([1.0], dtype=T.float16) + T.tensor(0.5, dtype=T.float64),
    "int_div_int": lambda T: T.tensor([1, 3], dtype=T.int32) / T.tensor([2, 2], dtype=T.int32),
    "uint8_sub_int8": lambda T: T.tensor([3], dtype=T.uint8) - T.tensor([5], dtype=T.int8),
    "int32_pow_float": lambda T: T.tensor([2, 3], dtype=T.int32) ** 0.5,
    "int32_sqrt": lambda T: T.tensor([4, 9], dtype=T.int32).sqrt(),
    "float16_exp": lambda T: T.tensor([0.5, 1.0], dtype=T.float16).exp(),
    "bfloat16_sum": lambda T: T.tensor([0.5, 1.0, 3.0], dtype=T.bfloat16).sum(),
    "int16_mean_error_free_cast": lambda T: T.tensor([1, 2], dtype=T.int16).float().mean(),
    "float16_grad": lambda T: (lambda x: G(x * x, (x,)))(T.tensor([1.5, -2.0], dtype=T.float16, requires_grad=True)),
    "bfloat16_grad": lambda T: (lambda x: G((x * 3).sum(), (x,)))(
        T.tensor([1.5, -2.0], dtype=T.bfloat16, requires_grad=True)),
    "to_int32": lambda T: T.tensor([1.7, -1.7]).to(T.int32),
    "int_method": lambda T: T.tensor([1.7, -1.7]).int(),
    "half_method": lambda T: T.tensor([1.7, -1.7]).half(),
    "bfloat16_method": lambda T: T.tensor([1.7, -1.7]).bfloat16(),
    "byte_char_short": lambda T: (T.tensor([3.0]).byte(), T.tensor([3.0]).char(), T.tensor([3.0]).short()),
    "type_legacy_class": lambda T: (T.ones(2).type(T.LongTensor), T.ones(2).type("torch.IntTensor"),
                                    T.ones(2, dtype=T.int16).type().split(".")[1]),
    "promote_types": lambda T: (T.promote_types(T.uint8, T.int8), T.promote_types(T.float16, T.bfloat16),
                                T.is_floating_point(T.ones(1)), T.result_type(T.tensor([1], dtype=T.int8), 2.5)),
    "element_size": lambda T: (T.ones(1, dtype=T.int16).element_size(), T.ones(1).is_floating_point()),
    "result_type_numpy_int32": lambda T: T.tensor(np.array([1, 2], dtype=np.int32)),
    "tensor_uint8_numpy": lambda T: T.tensor(np.array([1, 2], dtype=np.uint8)) * 2,
}


@pytest.mark.parametrize("name", list(SCALAR_PROMOTION))
def test_promotion_with_numbers_and_0dim(name):
    same(SCALAR_PROMOTION[name])


@pytest.fixture
def default_float64():
    torch.set_default_dtype(torch.float64)
    gradviz.set_default_dtype(gradviz.float64)
    yield
    torch.set_default_dtype(torch.float32)
    gradviz.set_default_dtype(gradviz.float32)


DEFAULT_DTYPE = {
    "get": lambda T: T.get_default_dtype(),
    "tensor_of_floats": lambda T: T.tensor([1.0, 2.5]),
    "zeros": lambda T: T.zeros(2, 3),
    "ones_like_int": lambda T: T.ones_like(T.tensor([1, 2])),
    "arange_float": lambda T: T.arange(0.0, 1.0, 0.25),
    "linspace": lambda T: T.linspace(0, 1, 5),
    "int_times_float": lambda T: T.tensor([1, 2]) * 0.5,
    "int_true_division": lambda T: T.tensor([1, 2]) / 2,
    "legacy_tensor": lambda T: T.Tensor([1, 2]),
    "full_float": lambda T: T.full((2,), 1.5),
    "eye": lambda T: T.eye(2),
}


@pytest.mark.parametrize("name", list(DEFAULT_DTYPE))
def test_default_dtype_float64(name, default_float64):
    same(DEFAULT_DTYPE[name])


def test_set_default_dtype_refuses_integers():
    same_error(lambda T: T.set_default_dtype(T.int64))


CONSTRUCTORS = {
    "Tensor_list": lambda T: T.Tensor([1, 2, 3]),
    "Tensor_nested": lambda T: T.Tensor([[1, 2], [3, 4]]),
    "Tensor_sizes": lambda T: T.Tensor(2, 3).shape,
    "Tensor_size_object": lambda T: T.Tensor(T.Size([4])).shape,
    "Tensor_empty": lambda T: T.Tensor().shape,
    "FloatTensor": lambda T: T.FloatTensor([1, 2]),
    "LongTensor": lambda T: T.LongTensor([1, 2]),
    "LongTensor_sizes": lambda T: (T.LongTensor(3).shape, T.LongTensor(3).dtype),
    "DoubleTensor": lambda T: T.DoubleTensor([[1.5]]),
    "BoolTensor": lambda T: T.BoolTensor([True, False]),
    "IntTensor": lambda T: T.IntTensor([1, 2]),
    "isinstance_typed": lambda T: (isinstance(T.ones(2), T.FloatTensor), isinstance(T.ones(2), T.LongTensor),
                                   isinstance(T.tensor([1]), T.LongTensor)),
    "new_zeros": lambda T: T.ones(2, dtype=T.float64).new_zeros(3, 2),
    "new_zeros_tuple": lambda T: T.ones(2, dtype=T.int32).new_zeros((2,)),
    "new_ones_dtype": lambda T: T.ones(2).new_ones(2, dtype=T.int64),
    "new_full": lambda T: T.ones(2, dtype=T.float16).new_full((2, 2), 3.5),
    "new_empty_shape": lambda T: (T.ones(2).new_empty(3, 4).shape, T.ones(2).new_empty(3, 4).dtype),
    "new_tensor": lambda T: T.ones(2, dtype=T.float64).new_tensor([1, 2]),
    "new_tensor_requires_grad": lambda T: T.ones(2).new_tensor([1.0], requires_grad=True).requires_grad,
    "zeros_size_kw": lambda T: T.zeros(size=(2, 3)),
    "ones_size_kw": lambda T: T.ones(size=[3]),
    "full_int": lambda T: T.full((2, 2), 7),
    "full_bool": lambda T: T.full([2], True),
    "full_dtype": lambda T: T.full((2,), 3, dtype=T.float32),
    "full_like": lambda T: T.full_like(T.ones(2, dtype=T.int32), 4),
    "empty_like_shape": lambda T: (T.empty_like(T.ones(2, 3)).shape, T.empty_like(T.ones(2, 3)).dtype),
    "arange_int": lambda T: T.arange(5),
    "arange_start_end_step": lambda T: T.arange(1, 10, 3),
    "arange_float_step": lambda T: T.arange(0, 1, 0.1),
    "arange_negative": lambda T: T.arange(5, 0, -1.5),
    "arange_dtype": lambda T: T.arange(4, dtype=T.float64),
    "linspace": lambda T: T.linspace(-1, 1, 7),
    "linspace_one": lambda T: T.linspace(2, 5, 1),
    "linspace_float64": lambda T: T.linspace(0, 1, 11, dtype=T.float64),
    "linspace_int": lambda T: T.linspace(0, 10, 4, dtype=T.int64),
    "logspace": lambda T: T.logspace(0, 2, 3),
    "logspace_base": lambda T: T.logspace(0, 3, 4, base=2, dtype=T.float64),
    "eye": lambda T: T.eye(3),
    "eye_rect": lambda T: T.eye(2, 3, dtype=T.int64),
    "meshgrid_ij": lambda T: (lambda a, b: G(T.meshgrid(a, b, indexing="ij"), (a, b)))(x64(T, 3), x64(T, 2, seed=1)),
    "meshgrid_xy": lambda T: (lambda a, b: G(T.meshgrid(a, b, indexing="xy"), (a, b)))(x64(T, 3), x64(T, 2, seed=1)),
    "meshgrid_list": lambda T: T.meshgrid([T.arange(2), T.arange(3)], indexing="ij"),
    "nelement": lambda T: (T.ones(2, 3).nelement(), T.ones(2, 3).numel(), T.numel(T.ones(4))),
    "tensor_int32_numpy": lambda T: T.tensor(np.arange(3, dtype=np.int32)),
    "as_tensor_list": lambda T: T.as_tensor([1, 2]),
    "as_tensor_dtype": lambda T: T.as_tensor([1, 2], dtype=T.float64),
    "as_tensor_numpy_cast": lambda T: T.as_tensor(np.arange(3), dtype=T.float32),
}


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_constructors(name):
    same(CONSTRUCTORS[name])


def test_meshgrid_warns_without_indexing():
    for T in (torch, gradviz):
        with pytest.warns(UserWarning, match="indexing argument"):
            T.meshgrid(T.arange(2), T.arange(3))


@pytest.mark.parametrize("T", [torch, gradviz], ids=["torch", "gradviz"])
def test_from_numpy_and_as_tensor_share_memory(T):
    arr = np.arange(4.0)
    t = T.from_numpy(arr)
    arr[0] = 10.0
    t[1] = 20.0
    assert t.tolist() == [10.0, 20.0, 2.0, 3.0] and arr.tolist() == [10.0, 20.0, 2.0, 3.0]
    u = T.as_tensor(arr)
    arr[2] = 30.0
    assert u[2].item() == 30.0
    assert T.as_tensor(t) is t
    i32 = T.from_numpy(np.arange(3, dtype=np.int32))
    assert str(i32.dtype).split(".")[1] == "int32"
    copied = T.as_tensor(arr, dtype=T.float32)
    arr[3] = 40.0
    assert copied[3].item() == 3.0


ERRORS = {
    "Tensor_negative_size": lambda T: T.Tensor(-1),
    "LongTensor_from_float_tensor": lambda T: T.LongTensor(T.ones(2)),
    "repeat_negative": lambda T: T.ones(2).repeat(-1),
    "arange_zero_step": lambda T: T.arange(0, 5, 0),
    "arange_bad_sign": lambda T: T.arange(0, 5, -1),
    "linspace_negative_steps": lambda T: T.linspace(0, 1, -1),
    "eye_negative": lambda T: T.eye(-1),
    "zeros_negative": lambda T: T.zeros(2, -1),
    "from_numpy_object": lambda T: T.from_numpy(np.array(["a"], dtype=object)),
    "meshgrid_bad_indexing": lambda T: T.meshgrid(T.arange(2), indexing="yx"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_same_error_as_torch(name):
    same_error(ERRORS[name])


def _inference(T):
    x = T.ones(2, requires_grad=True)
    with T.inference_mode():
        y = x * 2
    with T.inference_mode(False):
        z = x * 2

    @T.inference_mode()
    def f(a):
        return a * 3

    @T.inference_mode
    def h(a):
        return a * 3

    return y.requires_grad, z.requires_grad, f(x).requires_grad, h(x).requires_grad, T.is_grad_enabled()


def test_inference_mode():
    assert _inference(gradviz) == _inference(torch)


def test_inference_mode_enabled_flag():
    assert gradviz.is_inference_mode_enabled() is torch.is_inference_mode_enabled() is False
    with gradviz.inference_mode(), torch.inference_mode():
        assert gradviz.is_inference_mode_enabled() is torch.is_inference_mode_enabled() is True


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("default", ["float32", "float64"])
def test_repr_names_the_dtype_as_torch(name, default):
    try:
        for T in (torch, gradviz):
            T.set_default_dtype(getattr(T, default))
        for vals in ([1, 0, 3], [], [[1.5, -2.25]], [1e10, 1.0]):
            try:
                ref = repr(torch.tensor(vals, dtype=getattr(torch, name)))
            except RuntimeError:  # a value the dtype cannot hold (1e10 in int8, -2.25 in uint8)
                continue
            got = repr(gradviz.tensor(vals, dtype=getattr(gradviz, name)))
            assert got == ref, (vals, ref, got)
    finally:
        for T in (torch, gradviz):
            T.set_default_dtype(T.float32)


def test_the_top_level_holds_torch_names_only() -> None:
    # The ops reach `import gradviz as torch` through their families' __all__: nothing gradviz
    # keeps for itself (the derivative table, node classes, helpers, the family modules) and no
    # name torch lacks at its top level (torch.linalg's norms live in gradviz.linalg, as in torch).
    from gradviz.ops import functions as F

    for name in F.__all__:
        assert hasattr(torch, name), name
    for name in ("DERIVATIVES", "OpNode", "sum_to", "node_class", "arith", "matrix_norm", "vector_norm", "one_hot"):
        assert not hasattr(gradviz, name), name
        assert name not in dir(gradviz), name
    assert gradviz.linalg.matrix_norm is not None and gradviz.linalg.vector_norm is not None
    assert set(gradviz.linalg.__all__) <= set(dir(torch.linalg))
