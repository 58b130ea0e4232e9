"""torch.finfo / torch.iinfo against torch 2.13: every attribute (values and Python types), the
printed form, equality and the errors."""

from __future__ import annotations

import pytest
import torch

import gradviz

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS + [None])
def test_finfo(name: str | None) -> None:
    t, g = (T.finfo(getattr(T, name)) if name else T.finfo() for T in (torch, gradviz))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(g, attr) == getattr(t, attr) and type(getattr(g, attr)) is type(getattr(t, attr)), attr
    assert repr(g) == repr(t) and str(g) == str(t)
    assert g == gradviz.finfo(getattr(gradviz, g.dtype))
    assert (g == gradviz.finfo(gradviz.float64)) is (t == torch.finfo(torch.float64))
    with pytest.raises(TypeError):  # unhashable, as torch's
        hash(g)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name: str) -> None:
    t, g = (T.iinfo(getattr(T, name)) for T in (torch, gradviz))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(g, attr) == getattr(t, attr) and type(getattr(g, attr)) is type(getattr(t, attr)), attr
    assert repr(g) == repr(t)


@pytest.mark.parametrize("call", [
    lambda T: T.finfo(T.int32), lambda T: T.iinfo(T.float32), lambda T: T.iinfo(T.bool), lambda T: T.finfo("float32"),
])
def test_errors(call) -> None:
    with pytest.raises(TypeError) as want:
        call(torch)
    with pytest.raises(TypeError) as got:
        call(gradviz)
    assert str(got.value) == str(want.value)
