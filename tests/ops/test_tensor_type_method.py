"""Tensor.type(x) against torch: every form torch accepts (dtype, typed class, torch.Tensor itself,
full type names, keyword forms), what it returns (dtype, the same object when nothing changes,
the grad_fn of a conversion) and its errors. Programs write `x.type(torch.Tensor)` and
`x.type(Tensor)` with `Tensor = torch.FloatTensor` (PyTorch-GAN's trainers, CycleGAN's loop)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradviz

ARGS = ["Tensor", "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor",
        "HalfTensor", "float64", "int32", "bool", "'torch.Tensor'", "'torch.FloatTensor'", "'torch.LongTensor'",
        "'torch.BoolTensor'", "'torch.DoubleTensor'", "'DoubleTensor'", "'torch.Foo'", "'float'", "int",
        "nn.Parameter", "'torch.HalfTensor'"]


def _arg(T: Any, spec: str) -> Any:
    if spec.startswith("'"):
        return spec.strip("'")
    if spec == "int":
        return int
    if spec == "nn.Parameter":
        return T.nn.Parameter
    return getattr(T, spec)


def _outcome(T: Any, spec: str, src_dtype: str, default: str) -> Any:
    old = T.get_default_dtype()
    T.set_default_dtype(getattr(T, default))
    try:
        t = T.arange(4, dtype=getattr(T, src_dtype))
        try:
            r = t.type(_arg(T, spec))
        except (ValueError, TypeError, AttributeError) as e:
            return type(e).__name__, str(e)
        return str(r.dtype), r is t, r.tolist()
    finally:
        T.set_default_dtype(old)


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("src_dtype", ["int64", "float32"])
@pytest.mark.parametrize("spec", ARGS)
def test_type_equals_torchs(spec: str, src_dtype: str, default: str) -> None:
    assert _outcome(gradviz, spec, src_dtype, default) == _outcome(torch, spec, src_dtype, default)


@pytest.mark.parametrize("T", [torch, gradviz], ids=["torch", "gradviz"])
def test_name_keywords_and_grad_fn(T: Any) -> None:
    x = T.ones(3, requires_grad=True)
    assert x.type() == "torch.FloatTensor"
    y = x.type(dtype=T.float64, non_blocking=True)
    assert y.dtype == T.float64 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == T.float32 and x.grad.tolist() == [1.0, 1.0, 1.0]
    assert x.type(T.Tensor) is x and x.type("torch.FloatTensor") is x


CUDA_TYPED = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
              "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]


@pytest.mark.parametrize("name", CUDA_TYPED)
def test_cuda_typed_classes_equal_torchs_without_a_gpu(name: str) -> None:
    def facts(T: Any) -> Any:
        cls = getattr(T.cuda, name)
        built = None
        try:
            cls(2)
        except TypeError as e:
            built = str(e)
        return (str(cls.dtype), cls.is_cuda, isinstance(T.ones(1, dtype=cls.dtype), cls),
                isinstance(T.ones(1), T.cuda.FloatTensor), built)

    assert facts(gradviz) == facts(torch)


@pytest.mark.parametrize("T", [torch, gradviz], ids=["torch", "gradviz"])
def test_type_to_a_cuda_class_moves_to_cuda(T: Any) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - torch and gradviz word the missing CUDA differently
        T.ones(2).type(T.cuda.FloatTensor)
    with pytest.raises(Exception):  # noqa: B017, PT011
        T.ones(2).type("torch.cuda.LongTensor")
