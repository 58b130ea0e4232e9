"""torch.Tensor's members that gradviz lacks raise the one line naming them, from descriptors
(gradviz/_missing.py MissingMember) rather than a ``__getattr__`` on Tensor, which would make
CPython read every attribute of every tensor by its slow path. Names torch's Tensor does not have
either raise torch's plain AttributeError."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz._as_torch import MissingTorchAttribute
from gradviz._missing import MissingMember
from gradviz._torch_tensor_names import TENSOR_NAMES

MISSING = sorted(n for n in TENSOR_NAMES if isinstance(vars(gradviz.Tensor).get(n), MissingMember))


def test_the_names_are_torchs():
    assert TENSOR_NAMES == {n for n in dir(torch.Tensor) if not n.startswith("_")}, (
        "regenerate: scripts/python scripts/torch_tensor_names.py")


def test_tensor_has_no_getattr_hook():
    assert all("__getattr__" not in vars(c) for c in gradviz.Tensor.__mro__)
    assert gradviz.Tensor.__getattribute__ is object.__getattribute__


def test_every_torch_member_is_there_or_named_missing():
    for name in TENSOR_NAMES:
        assert any(name in vars(c) for c in gradviz.Tensor.__mro__), name


@pytest.mark.parametrize("name", MISSING[:8])
def test_a_missing_member_names_itself_and_the_line(name):
    code = compile(f"import gradviz as torch\nx = torch.ones(2)\ny = x.{name}\n", "t.py", "exec")
    with pytest.raises(MissingTorchAttribute) as info:
        exec(code, {})
    assert str(info.value) == f"gradviz has no torch.Tensor.{name} (used at t.py:3); see README: what runs on gradviz"
    assert not hasattr(gradviz.ones(2), name)
    assert not hasattr(gradviz.nn.Parameter(gradviz.ones(2)), name)


def test_a_name_torch_lacks_too_is_torchs_plain_error():
    for T in (torch, gradviz):
        with pytest.raises(AttributeError) as info:
            T.ones(2).no_such_member  # noqa: B018
        assert type(info.value) is AttributeError
        assert str(info.value) == "'Tensor' object has no attribute 'no_such_member'"


def test_a_method_set_later_replaces_the_member():
    name = MISSING[0]
    saved = vars(gradviz.Tensor)[name]
    try:
        setattr(gradviz.Tensor, name, lambda self: "mine")
        assert getattr(gradviz.ones(1), name)() == "mine"
    finally:
        setattr(gradviz.Tensor, name, saved)
