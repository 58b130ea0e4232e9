"""Smaller torch functions and Tensor methods (issue 34's coverage) against torch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _fns_diff import check

import gradviz

X = [[-1.5, 0.0, 2.0, 0.75], [0.5, -0.25, 3.0, -2.0], [1.0, 2.5, -0.5, 0.125]]
V = [-1.5, 0.0, 2.0, math.nan]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "angle": lambda T: T.angle(_x(T, V)),
    "Tensor.angle ints": lambda T: T.tensor([-2, 0, 3]).angle(),
    "frexp": lambda T: T.frexp(_x(T)),
    "Tensor.frexp": lambda T: _x(T, [1e-300, 3.5, -7.0]).frexp(),
    "ldexp": lambda T: T.ldexp(_x(T), T.tensor([1, 2, -1, 0])),
    "ldexp floats": lambda T: _x(T).ldexp(_x(T, [[0.5, 1.0, -1.0, 2.0]])),
    "ldexp ints": lambda T: T.ldexp(T.tensor([1, 2]), T.tensor([1, 2])),
    "ldexp_": lambda T: (_x(T) * 1).ldexp_(T.tensor([2, 2, 2, 2])),
    "heaviside": lambda T: T.heaviside(_x(T), T.tensor([0.5], dtype=T.float64)).detach(),
    "heaviside node": lambda T: T.heaviside(_x(T), _x(T, [0.5])).grad_fn.name().split("::")[-1],
    "nextafter grads": lambda T: T.nextafter(_x(T, [1.0, 3.0]), _x(T, [2.0, 0.0])),
    "nextafter": lambda T: T.nextafter(T.tensor([1.0, -1.0, 0.0]), T.tensor([2.0, -2.0, -1.0])) - T.tensor(
        [1.0, -1.0, 0.0]),
    "gcd lcm": lambda T: [T.gcd(T.tensor([4, -6, 0]), T.tensor([6, 9, 0])),
                          T.tensor([4, -6, 0]).lcm(T.tensor([6, 9, 5])), T.tensor([12, 18]).gcd_(T.tensor([8, 27]))],
    "shifts": lambda T: [T.bitwise_left_shift(T.tensor([1, 2, -3]), 2), T.tensor([8, -9]).bitwise_right_shift(
        T.tensor([1, 2])), T.tensor([1, 2], dtype=T.int8).bitwise_left_shift_(3), T.bitwise_right_shift(
        T.tensor([8, -9]), 70)],
    "real conj_physical": lambda T: (lambda x: [T.real(x) is x, T.conj_physical(x) is x, x.conj_physical() is x])(
        T.ones(2)),
    "range": lambda T: [T.range(0, 1, 0.25), T.range(1, 4, dtype=T.int64)],
    "scalar_tensor": lambda T: [T.scalar_tensor(3), T.scalar_tensor(2.5, dtype=T.float64),
                                T.scalar_tensor(7, dtype=T.int64)],
    "empty_strided": lambda T: [T.empty_strided((2, 3), (1, 2)).stride(), T.empty_strided((2, 3), (1, 2)).shape],
    "unravel_index": lambda T: T.unravel_index(T.tensor([4, 5, 22, -1]), (3, 4, 2)),
    "unravel_index int": lambda T: T.unravel_index(T.tensor(7), 10),
    "predicates": lambda T: [T.is_distributed(T.ones(1)), T.is_vulkan_available(), T.cudnn_is_acceptable(T.ones(1)),
                             T.ones(1).is_distributed()],
    "cond": lambda T: [T.cond(T.tensor(True), lambda a: a + 1, lambda a: a - 1, (T.tensor(1.0),)),
                       T.cond(False, lambda a, b: a + b, lambda a, b: a - b, (T.tensor(1.0), T.tensor(3.0)))],
    "detach": lambda T: (lambda x: [T.detach(x).requires_grad, T.detach_(x * 1).requires_grad])(_x(T)),
    "slogdet": lambda T: T.slogdet(_x(T, [[2.0, 1.0], [0.5, -3.0]])),
    "fill": lambda T: T.fill(_x(T), 2.0),
    "fill tensor": lambda T: T.fill(_x(T), _x(T, 2.5)),
    "narrow_copy": lambda T: T.narrow_copy(_x(T), 1, 1, 2),
    # (torch 2.13's backward of narrow_copy with a negative start fails: forward only)
    "Tensor.narrow_copy negative": lambda T: _x(T).narrow_copy(0, -2, 2).detach(),
    "unfold": lambda T: _x(T).unfold(1, 2, 1),
    "unfold step 2 dim 0": lambda T: _x(T).unfold(0, 2, 2),
    "unfold overlapping grads": lambda T: _x(T).unfold(1, 3, 1) * T.tensor([1.0, 2.0, 3.0], dtype=T.float64),
    "unfold_copy": lambda T: T.unfold_copy(_x(T), 1, 2, 2),
    "split_with_sizes": lambda T: T.split_with_sizes(_x(T), [1, 3], 1),
    "Tensor.split_with_sizes": lambda T: _x(T).split_with_sizes([2, 1]),
    "unsafe_split": lambda T: T.unsafe_split(_x(T), 2, 1),
    "unsafe_chunk": lambda T: _x(T).unsafe_chunk(2),
    "unsafe_split_with_sizes": lambda T: T.unsafe_split_with_sizes(_x(T), [3, 1], 1),
    "dim_order": lambda T: [T.ones(2, 3, 4).dim_order(), T.ones(2, 3, 4).permute(2, 0, 1).dim_order()],
    "share_memory_": lambda T: (lambda x: x.share_memory_() is x)(T.ones(2)),
}


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name])


RUNTIME = {
    "sym": lambda T: [T.sym_int(3.7), T.sym_int(-3.7), T.sym_float(2), T.sym_max(2, 3.5), T.sym_min(2, 3),
                      T.sym_not(True), T.sym_sqrt(4), T.sym_sum([1, 2, 3]), T.sym_ite(True, 1, 2),
                      T.sym_constrain_range(3, min=0, max=5), T.sym_constrain_range_for_size(3)],
    "errors": lambda T: [issubclass(T.OutOfMemoryError, RuntimeError), issubclass(T.AcceleratorError, RuntimeError),
                         issubclass(T.FatalError, RuntimeError), issubclass(T.JITException, RuntimeError)],
    "memory formats": lambda T: [repr(T.contiguous_format), repr(T.channels_last), isinstance(T.preserve_format,
                                                                                               T.memory_format)],
    "DisableTorchFunction": lambda T: (lambda c: (c.__enter__(), c.__exit__(None, None, None), True)[-1])(
        T.DisableTorchFunctionSubclass()),
    "nonzero_static": lambda T: [T.nonzero_static(T.tensor([0, 1, 0, 2]), size=3),
                                 T.tensor([[0, 1], [2, 0]]).nonzero_static(size=1, fill_value=-5)],
    "gradient": lambda T: T.gradient(_x(T)),
    "gradient spacing dim": lambda T: T.gradient(_x(T), spacing=0.5, dim=1),
    "gradient edge_order 2": lambda T: T.gradient(_x(T), spacing=[2.0, 0.25], edge_order=2),
    "gradient 1-d ints": lambda T: T.gradient(T.tensor([1, 4, 9, 16, 25])),
}
CASES.update(RUNTIME)


@pytest.mark.parametrize("name", list(RUNTIME))
def test_runtime_matches_torch(name):
    check(RUNTIME[name])


STRIDED = {
    "as_strided": lambda T: T.as_strided(_x(T), (2, 2), (1, 2)),
    "as_strided offset overlapping": lambda T: _x(T).as_strided((3, 3), (2, 1), 1),
    "as_strided of a view": lambda T: _x(T)[1:].as_strided((2,), (3,), 5),
    "as_strided_copy": lambda T: T.as_strided_copy(_x(T), (2, 3), (4, 1), 1),
    "as_strided_scatter": lambda T: T.as_strided_scatter(_x(T), _x(T, [[1.0, 2.0], [3.0, 4.0]]), (2, 2), (4, 1)),
    "Tensor.as_strided_scatter": lambda T: _x(T).as_strided_scatter(_x(T, [7.0, 8.0, 9.0]), (3,), (5,), 1),
}
CASES.update(STRIDED)


@pytest.mark.parametrize("name", list(STRIDED))
def test_as_strided_matches_torch(name):
    check(STRIDED[name])


TENSOR_MORE = {
    "apply_ map_ map2_": lambda T: (lambda x: [x.apply_(lambda v: v * 2).clone(),
                                               x.map_(T.tensor([1.0, 1.0, 1.0]), lambda a, b: a + b).clone(),
                                               x.map2_(T.ones(3), T.tensor([2.0]), lambda a, b, c: a * c - b)])(
        T.tensor([1.0, 2.0, 3.0])),
    "new": lambda T: (lambda y: [y.new([1, 2]), tuple(y.new(2, 3).shape), tuple(y.new().shape),
                                 str(y.new(T.Size([1, 2])).dtype)])(
        T.tensor([[1.0, 2.0]], dtype=T.float64)),
    "new_empty_strided": lambda T: (lambda e: [e.stride(), str(e.dtype)])(T.ones(2, dtype=T.float64).new_empty_strided(
        (2, 2), (1, 2))),
    "resize_": lambda T: (lambda z: [tuple(z.resize_(3, 2).shape), tuple(z.resize_as_(T.ones(6)).shape), z[:4]])(
        T.arange(6.0).reshape(2, 3) * 1),
    "set_": lambda T: (lambda a, b: [a.set_(b), a.is_set_to(b), b.is_set_to(a[:1])])(T.ones(3), T.zeros(2)),
    "lu": lambda T: T.lu(_x(T, [[2.0, 1.0], [1.0, 3.0]])),
    "Tensor.lu infos": lambda T: _x(T, [[1.0, 2.0], [3.0, 4.0]]).lu(get_infos=True),
    "geqrf ormqr": lambda T: (lambda qt: [qt[0], qt[1], T.ormqr(qt[0], qt[1], T.eye(3, dtype=T.float64)),
                                          qt[0].ormqr(qt[1], T.ones(2, 3, dtype=T.float64), left=False,
                                                      transpose=True)])(
        T.geqrf(T.tensor([[2.0, 1.0], [1.0, 3.0], [0.5, 1.0]], dtype=T.float64))),
}
CASES.update(TENSOR_MORE)


@pytest.mark.filterwarnings("ignore:torch.lu is deprecated")
@pytest.mark.parametrize("name", list(TENSOR_MORE))
def test_tensor_more_matches_torch(name):
    check(TENSOR_MORE[name], rtol=1e-10, atol=1e-12)


def test_volatile_is_false_with_torch_warning():
    for T in (torch, gradviz):
        with pytest.warns(UserWarning, match=r"volatile was removed \(Variable.volatile is always False\)"):
            assert T.ones(2).volatile is False


SETTINGS = {
    "set_printoptions": lambda T: (T.set_printoptions(precision=2, linewidth=40), str(T.tensor([1.23456, 2.0])),
                                   T.set_printoptions(profile="short"), str(T.arange(10.0)),
                                   T.set_printoptions(profile="default"), str(T.tensor([1.23456])))[1::2],
    "set_default_tensor_type": lambda T: (T.set_default_tensor_type(T.DoubleTensor), str(T.ones(1).dtype),
                                          T.set_default_tensor_type("torch.FloatTensor"), str(T.ones(1).dtype))[1::2],
    "anomaly flags": lambda T: (T.set_anomaly_enabled(True, check_nan=False), T.is_anomaly_enabled(),
                                T.is_anomaly_check_nan_enabled(), T.set_anomaly_enabled(False),
                                T.is_anomaly_check_nan_enabled())[1:],
    "frombuffer": lambda T: [T.frombuffer(bytearray(b"\x01\x02\x03\x04"), dtype=T.uint8),
                             T.frombuffer(bytearray(np.array([1.0, 2.0, 3.0], np.float32).tobytes()),
                                          dtype=T.float32, count=2, offset=4)],
    "empty_permuted": lambda T: (lambda e: [tuple(e.shape), e.stride()])(T.empty_permuted((2, 3, 4), (0, 2, 1))),
    "histogramdd": lambda T: T.histogramdd(T.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), bins=[2, 2]),
    "histogramdd range weight": lambda T: T.histogramdd(
        T.tensor([[0.0, 1.0], [1.0, 0.5], [2.0, 2.0]], dtype=T.float64), bins=3, range=[0.0, 2.0, 0.0, 2.0],
        weight=T.tensor([1.0, 2.0, 0.5], dtype=T.float64)),
    "module_load": lambda T: (lambda p, o: [p.module_load(o), p, p.module_load(o * 2, assign=True)])(
        T.zeros(2), T.ones(2)),
    "grad_dtype": lambda T: str(T.ones(2, dtype=T.float64).grad_dtype),
}
CASES.update(SETTINGS)


@pytest.mark.filterwarnings("ignore:torch.set_default_tensor_type\\(\\) is deprecated")
@pytest.mark.parametrize("name", list(SETTINGS))
def test_settings_match_torch(name):
    check(SETTINGS[name])


RESIZE = {
    "Tensor.resize": lambda T: _x(T).resize(4, 3),
    "Tensor.resize_as": lambda T: _x(T).resize_as(T.ones(2, 6)),
    "resize_as_": lambda T: T.resize_as_(T.arange(6.0), T.ones(2, 2)),
    "as_subclass": lambda T: (lambda x: (x.as_subclass(T.Tensor) * 2, x.as_subclass(T.Tensor) is x))(_x(T)),
    "norm_except_dim": lambda T: [T.norm_except_dim(_x(T), 2, 0), T.norm_except_dim(_x(T), 3, 1),
                                  T.norm_except_dim(_x(T), 2, -1)],
    "norm_except_dim middle": lambda T: T.norm_except_dim(_x(T).reshape(2, 3, 2), 2, 1),
}
CASES.update(RESIZE)


@pytest.mark.filterwarnings("ignore:non-inplace resize")
@pytest.mark.parametrize("name", list(RESIZE))
def test_resize_and_norms_match_torch(name):
    check(RESIZE[name])


def test_as_subclass_of_a_subclass():
    class Mine(gradviz.Tensor):
        pass

    x = gradviz.ones(2, requires_grad=True)
    y = x.as_subclass(Mine)
    assert type(y) is Mine and y.grad_fn.name() == "AliasBackward0"
