"""The names added to raise the coverage (issue 34 item 1: aliases, composites, more math, what a
tensor says of itself), each run under torch and gradviz: values, the backward node and its next
nodes, and the gradients of the inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import gradviz


def _leaf(T, data, grad=True):
    return T.tensor(data, dtype=T.float64, requires_grad=grad)


X = [[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]]
Y = [[1.0, 2.0, -0.5], [0.25, -3.0, 1.0]]
V = [0.5, -1.0, 2.0]
Z = [[1.5, -0.5], [2.0, 0.25]]

def _inplace_case(op, make):
    return lambda T: getattr(T, op + "_")(make(T))


# name -> program(T) returning the output; the leaves are made inside from X, Y, V
CASES = {
    # aliases: torch records the aliased op's node
    "absolute": lambda T: T.absolute(_leaf(T, X)),
    "arccos": lambda T: T.arccos(_leaf(T, X) / 4),
    "arcsinh": lambda T: T.arcsinh(_leaf(T, X)),
    "arctan2": lambda T: T.arctan2(_leaf(T, X), _leaf(T, Y)),
    "Tensor.arctanh": lambda T: (_leaf(T, X) / 4).arctanh(),
    "divide": lambda T: T.divide(_leaf(T, X), _leaf(T, Y)),
    "true_divide": lambda T: T.true_divide(_leaf(T, X), 2.0),
    "multiply": lambda T: T.multiply(_leaf(T, X), _leaf(T, Y)),
    "subtract alpha": lambda T: T.subtract(_leaf(T, X), _leaf(T, Y), alpha=2),
    "Tensor.negative": lambda T: _leaf(T, X).negative(),
    "greater": lambda T: T.greater(_leaf(T, X), 0.5),
    "Tensor.less_equal": lambda T: _leaf(T, X).less_equal(_leaf(T, Y)),
    "not_equal": lambda T: T.not_equal(_leaf(T, X), _leaf(T, X)),
    "fix": lambda T: T.fix(_leaf(T, X)),
    "swapaxes": lambda T: T.swapaxes(_leaf(T, X), 0, 1),
    "Tensor.swapdims": lambda T: _leaf(T, X).swapdims(1, 0),
    "concatenate": lambda T: T.concatenate([_leaf(T, X), _leaf(T, Y)], 1),
    "ger": lambda T: T.ger(_leaf(T, V), _leaf(T, V)),
    "Tensor.multiply_": lambda T: (_leaf(T, X) * 1).multiply_(_leaf(T, Y)),
    # composites: torch's decomposition's nodes
    "positive": lambda T: T.positive(_leaf(T, X) * 1),
    "moveaxis": lambda T: T.moveaxis(_leaf(T, X).unsqueeze(0), 0, 2),
    "movedim lists": lambda T: T.movedim(_leaf(T, X).unsqueeze(0), (0, 1), (2, 0)),
    "ravel transposed": lambda T: _leaf(T, X).t().ravel(),
    "unflatten": lambda T: _leaf(T, X).unflatten(1, (3, 1)),
    "broadcast_to": lambda T: T.broadcast_to(_leaf(T, V), (2, 3)),
    "broadcast_tensors": lambda T: T.broadcast_tensors(_leaf(T, V), _leaf(T, X)[:, :1])[1],
    "atleast_1d scalar": lambda T: T.atleast_1d(_leaf(T, 2.5)),
    "atleast_2d": lambda T: T.atleast_2d(_leaf(T, V)),
    "atleast_3d": lambda T: T.atleast_3d(_leaf(T, V)),
    "hstack": lambda T: T.hstack([_leaf(T, X), _leaf(T, Y)]),
    "vstack 1-d": lambda T: T.vstack([_leaf(T, V), _leaf(T, V)]),
    "row_stack": lambda T: T.row_stack([_leaf(T, X), _leaf(T, V)]),
    "dstack": lambda T: T.dstack([_leaf(T, X), _leaf(T, Y)]),
    "column_stack": lambda T: T.column_stack([_leaf(T, V), _leaf(T, X).t()]),
    "tensor_split sections": lambda T: T.tensor_split(_leaf(T, X), 2, dim=1)[0],
    "tensor_split indices": lambda T: _leaf(T, X).tensor_split([1, 2], dim=1)[2],
    "hsplit": lambda T: T.hsplit(_leaf(T, X), 3)[1],
    "vsplit": lambda T: _leaf(T, X).vsplit([1])[1],
    "fliplr": lambda T: T.fliplr(_leaf(T, X)),
    "flipud": lambda T: _leaf(T, X).flipud(),
    "tile": lambda T: T.tile(_leaf(T, X), (2,)),
    "take_along_dim": lambda T: T.take_along_dim(_leaf(T, X), T.tensor([[0, 2]]), dim=1),
    "take_along_dim flat": lambda T: T.take_along_dim(_leaf(T, X), T.tensor([4, 1])),
    "sum_to_size": lambda T: _leaf(T, X).sum_to_size(1, 3),
    # more math: their own nodes
    "tan": lambda T: T.tan(_leaf(T, X)),
    "exp2": lambda T: _leaf(T, X).exp2(),
    "deg2rad": lambda T: T.deg2rad(_leaf(T, X)),
    "rad2deg": lambda T: _leaf(T, X).rad2deg(),
    "logaddexp2": lambda T: T.logaddexp2(_leaf(T, X), _leaf(T, Y)),
    "fmax": lambda T: T.fmax(_leaf(T, X), _leaf(T, Y)),
    "fmin nan": lambda T: T.fmin(_leaf(T, X), T.tensor([[math.nan, 0.0, 1.0]], dtype=T.float64, requires_grad=True)),
    "addcmul": lambda T: T.addcmul(_leaf(T, X), _leaf(T, Y), _leaf(T, V), value=0.5),
    "addcdiv": lambda T: _leaf(T, X).addcdiv(_leaf(T, Y), _leaf(T, V), value=2),
    "nansum": lambda T: T.nansum(_leaf(T, [[1.0, math.nan], [2.0, 3.0]])),
    "nansum dim": lambda T: _leaf(T, [[1.0, math.nan], [2.0, 3.0]]).nansum(1),
    "nanmean": lambda T: T.nanmean(_leaf(T, [[1.0, math.nan], [2.0, 3.0]])),
    "nanmean dim keepdim": lambda T: T.nanmean(_leaf(T, [[1.0, math.nan], [2.0, 3.0]]), 0, keepdim=True),
    "Tensor.trace": lambda T: _leaf(T, X).trace(),  # torch.trace: gradviz.trace is the recorder
    "diagonal": lambda T: T.diagonal(_leaf(T, X)),
    "Tensor.diagonal dims": lambda T: _leaf(T, X).unsqueeze(0).expand(3, 2, 3).diagonal(0, 0, 2),
    "vdot": lambda T: T.vdot(_leaf(T, V), _leaf(T, V) * 2),
    "count_nonzero": lambda T: T.count_nonzero(T.tensor([[0.0, 1.0], [2.0, 0.0]]), 0),
    "logical_xor": lambda T: T.logical_xor(T.tensor([True, False, True]), T.tensor([True, True, False])),
    "signbit": lambda T: T.signbit(T.tensor([-0.0, 0.0, -1.0, 2.0])),
    "isneginf/isposinf/isreal": lambda T: T.stack([T.isneginf(T.tensor([-math.inf, 1.0, math.inf])),
                                                   T.tensor([-math.inf, 1.0, math.inf]).isposinf(),
                                                   T.isreal(T.tensor([-math.inf, 1.0, math.nan]))]),
    "float_power": lambda T: T.float_power(_leaf(T, X).float(), 2),
    "float_power tensors": lambda T: _leaf(T, P).float_power(_leaf(T, X)),
    "diff": lambda T: T.diff(_leaf(T, X)),
    "diff n=2 dim 0 prepend": lambda T: _leaf(T, X).diff(n=2, dim=0, prepend=_leaf(T, Y)),
    "masked_select": lambda T: T.masked_select(_leaf(T, X), T.tensor([True, False, True])),
    "take": lambda T: _leaf(T, X).take(T.tensor([[0, 5], [5, 1]])),
    "copysign": lambda T: T.copysign(_leaf(T, X), _leaf(T, Y)),
    "copysign number": lambda T: _leaf(T, X).copysign(-1.0),
    "Tensor.logical_and": lambda T: T.tensor([True, False]).logical_and(T.tensor([True, True])),
    "Tensor.bitwise_xor": lambda T: T.tensor([5, 3]).bitwise_xor(T.tensor([1, 1])),
    # in place: the op's node over the old history; self saved as a clone, or the result
    **{f"{op}_": _inplace_case(op, lambda T: _leaf(T, X) * 1.5) for op in (
        "abs", "ceil", "cos", "expm1", "fix", "floor", "round", "sin", "square", "trunc")},
    **{f"{op}_ positive": _inplace_case(op, lambda T: _leaf(T, X).abs() + 0.5) for op in (
        "log", "log1p", "log2", "log10", "rsqrt", "reciprocal")},
    "Tensor.sign_": lambda T: (_leaf(T, X) * 1).sign_(),
    "Tensor.abs_ then more": lambda T: ((_leaf(T, X) * 2).abs_() * _leaf(T, Y)).log1p_(),
    "Tensor.scatter_": lambda T: (_leaf(T, X) * 1).scatter_(1, T.tensor([[2, 0], [1, 2]]), _leaf(T, Z)),
    "Tensor.scatter_ into a plain tensor": lambda T: T.zeros(2, 3, dtype=T.float64).scatter_(
        0, T.tensor([[1, 0, 1]]), _leaf(T, [V])),
    "Tensor.scatter_add_": lambda T: (_leaf(T, X) * 1).scatter_add_(-1, T.tensor([[2, 2], [0, 0]]), _leaf(T, Z)),
    "Tensor.index_add_": lambda T: (_leaf(T, X) * 1).index_add_(0, T.tensor([1, 1]), _leaf(T, Y), alpha=2.0),
}


def _names(fn):
    if fn is None:
        return None
    return (fn.name().split("::")[-1], [f.name().split("::")[-1] if f else None for f, _ in fn.next_functions])


def _run(T, program):
    T.manual_seed(0)
    leaves = []
    real_tensor = T.tensor

    def tensor(*a, **k):
        t = real_tensor(*a, **k)
        if t.requires_grad:
            leaves.append(t)
        return t

    T.tensor = tensor
    try:
        out = program(T)
    finally:
        T.tensor = real_tensor
    names = _names(out.grad_fn)
    grads = None
    if out.requires_grad:
        out.sum().backward()
        grads = [None if t.grad is None else t.grad.tolist() for t in leaves]
    return out, names, grads


@pytest.mark.parametrize("name", list(CASES))
def test_addition_matches_torch(name):
    want, want_names, want_grads = _run(torch, CASES[name])
    got, got_names, got_grads = _run(gradviz, CASES[name])
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got.tolist(), dtype=float), np.asarray(want.tolist(), dtype=float),
                               rtol=1e-12, atol=1e-12)
    assert got_names == want_names
    if want_grads is None:
        assert got_grads is None
        return
    for g, w in zip(got_grads, want_grads, strict=True):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float), rtol=1e-12,
                                       atol=1e-12)


def test_aliases_are_the_same_op():
    from gradviz.ops import aliases

    for alias, op in aliases.FUNCTIONS.items():
        assert getattr(gradviz, alias) is op and hasattr(torch, alias), alias
    for alias in aliases.METHODS:
        assert hasattr(torch.Tensor, alias) and hasattr(gradviz.Tensor, alias), alias


_INFO = {
    "stride": lambda T: T.ones(2, 3).stride(),
    "stride transposed": lambda T: T.ones(2, 3).t().stride(),
    "stride expanded": lambda T: T.ones(2, 3).expand(4, 2, 3).stride(),
    "stride(dim)": lambda T: T.ones(2, 3).stride(-1),
    "storage_offset": lambda T: T.ones(2, 3)[:, 1:].storage_offset(),
    "storage_offset row": lambda T: T.ones(4, 3)[2].storage_offset(),
    "get_device": lambda T: T.ones(2).get_device(),
    "ndimension": lambda T: T.ones(2, 3).ndimension(),
    "is_signed float": lambda T: T.ones(2).is_signed(),
    "is_signed uint8": lambda T: T.ones(2, dtype=T.uint8).is_signed(),
    "itemsize": lambda T: T.ones(2, dtype=T.float16).itemsize,
    "nbytes": lambda T: T.ones(2, 3).nbytes,
    "is_cpu": lambda T: T.ones(2).is_cpu,
    "flags": lambda T: [T.ones(1).is_complex(), T.ones(1).is_conj(), T.ones(1).is_neg(), T.ones(1).is_inference(),
                        T.ones(1).is_nested, T.ones(1).is_meta, T.ones(1).is_quantized, T.ones(1).is_mkldnn],
    "conj is self": lambda T: [(x := T.ones(2)).conj() is x, x.resolve_conj() is x, x.resolve_neg() is x, x.real is x],
    "data_ptr of a view": lambda T: (lambda t: t[1].data_ptr() - t.data_ptr())(T.ones(3, 4)),
}


@pytest.mark.parametrize("name", list(_INFO))
def test_tensor_info_matches_torch(name):
    assert _INFO[name](gradviz) == _INFO[name](torch)


_TOP_LEVEL_NN = {
    "conv1d": lambda T: T.conv1d(_leaf(T, [[[1.0, 2.0, 3.0, 4.0]]]), _leaf(T, [[[0.5, -1.0]]]), stride=2),
    "conv2d": lambda T: T.conv2d(_leaf(T, [[[[1.0, 2.0], [3.0, 4.0]]]]), _leaf(T, [[[[0.5]]]])),
    "conv_transpose1d": lambda T: T.conv_transpose1d(_leaf(T, [[[1.0, 2.0]]]), _leaf(T, [[[0.5, -1.0]]])),
    "cosine_similarity": lambda T: T.cosine_similarity(_leaf(T, X), _leaf(T, Y)),
    "pairwise_distance": lambda T: T.pairwise_distance(_leaf(T, X), _leaf(T, Y)),
    "pixel_shuffle": lambda T: T.pixel_shuffle(_leaf(T, [[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]]), 2),
    "celu": lambda T: T.celu(_leaf(T, X), 0.5),
    "selu": lambda T: T.selu(_leaf(T, X)),
    "threshold": lambda T: T.threshold(_leaf(T, X), 0.6, -1.0),
    "hardshrink": lambda T: T.hardshrink(_leaf(T, X)),
    "prelu": lambda T: T.prelu(_leaf(T, X), _leaf(T, [0.25])),
    "Tensor.mH": lambda T: _leaf(T, X).mH,
    "Tensor.H": lambda T: _leaf(T, X).H,
    "adjoint": lambda T: T.adjoint(_leaf(T, X)),
}
CASES.update(_TOP_LEVEL_NN)  # (collected below)


@pytest.mark.parametrize("name", list(_TOP_LEVEL_NN))
def test_top_level_nn_and_transposes_match_torch(name):
    test_addition_matches_torch(name)


_RUNTIME = {
    "windows": lambda T: [T.hann_window(5).tolist(), T.hamming_window(4, periodic=False).tolist(),
                          T.blackman_window(6, dtype=T.float64).tolist(), T.bartlett_window(5).tolist(),
                          T.kaiser_window(7, True, 5.0).tolist(), T.hann_window(1).tolist(), T.hann_window(0).tolist()],
    "window dtype": lambda T: str(T.hann_window(3, dtype=T.float64).dtype),
    "tril_indices": lambda T: T.tril_indices(3, 4, -1).tolist(),
    "triu_indices": lambda T: T.triu_indices(4, 3, 1).tolist(),
    "deterministic": lambda T: (T.use_deterministic_algorithms(True, warn_only=True),
                                [T.are_deterministic_algorithms_enabled(),
                                 T.is_deterministic_algorithms_warn_only_enabled(), T.get_deterministic_debug_mode()],
                                T.set_deterministic_debug_mode("default"), T.get_deterministic_debug_mode())[1:],
    "matmul precision": lambda T: (T.set_float32_matmul_precision("high"), T.get_float32_matmul_precision(),
                                   T.set_float32_matmul_precision("highest"))[1],
    "threads": lambda T: (T.set_num_threads(3), T.get_num_threads())[1],
    "warn_always": lambda T: (T.set_warn_always(True), T.is_warn_always_enabled(), T.set_warn_always(False))[1],
    "typename": lambda T: [T.typename(T.ones(1)), T.typename(T.ones(1, dtype=T.int64)), T.typename(1)],
    "can_cast": lambda T: [T.can_cast(T.float32, T.int32), T.can_cast(T.int32, T.float32),
                           T.can_cast(T.int64, T.bool), T.can_cast(T.bool, T.int8)],
    "predicates": lambda T: [T.is_signed(T.ones(1, dtype=T.uint8)), T.is_nonzero(T.tensor([0.5])),
                             T.is_same_size(T.ones(2), T.ones(1, 2)), T.is_complex(T.ones(1)), T.get_device(T.ones(1)),
                             T.is_storage(T.ones(1)), T.set_flush_denormal(False)],
}


@pytest.mark.parametrize("name", list(_RUNTIME))
def test_runtime_settings_windows_and_predicates_match_torch(name):
    threads = torch.get_num_threads(), gradviz.get_num_threads()
    got, want = _RUNTIME[name](gradviz), _RUNTIME[name](torch)
    torch.set_num_threads(threads[0])
    gradviz.set_num_threads(threads[1])
    if name == "windows":
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)
    else:
        assert got == want


P = [[0.25, 0.5, 0.75], [0.1, 0.9, 0.4]]
_SPECIAL = {
    "digamma": lambda T: T.special.digamma(_leaf(T, P) + 1),
    "psi": lambda T: T.special.psi(_leaf(T, P) + 1),
    "erf": lambda T: T.special.erf(_leaf(T, X)),
    "erfc": lambda T: T.special.erfc(_leaf(T, X)),
    "erfinv": lambda T: T.special.erfinv(_leaf(T, P)),
    "exp2": lambda T: T.special.exp2(_leaf(T, X)),
    "expit": lambda T: T.special.expit(_leaf(T, X)),
    "expm1": lambda T: T.special.expm1(_leaf(T, X)),
    "gammaln": lambda T: T.special.gammaln(_leaf(T, P) + 1),
    "log1p": lambda T: T.special.log1p(_leaf(T, P)),
    "logit": lambda T: T.special.logit(_leaf(T, P)),
    "logit eps": lambda T: T.special.logit(_leaf(T, P), eps=0.3),
    "logsumexp": lambda T: T.special.logsumexp(_leaf(T, X), 1),
    "softmax": lambda T: T.special.softmax(_leaf(T, X), 1),
    "log_softmax dtype": lambda T: T.special.log_softmax(_leaf(T, X).float(), 0, dtype=T.float64),
    "xlogy": lambda T: T.special.xlogy(_leaf(T, X), _leaf(T, P)),
}
CASES.update(_SPECIAL)


@pytest.mark.parametrize("name", list(_SPECIAL))
def test_special_matches_torch(name):
    test_addition_matches_torch(name)
