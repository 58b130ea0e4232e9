"""Every torch name gradviz lacks (in the rows of docs/coverage.md) fails with the one line
``gradviz has no torch.X (used at file:line); see README: what runs on gradviz`` under
``import gradviz as torch``, as an AttributeError (issue 34 item 1)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import gradviz

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gradviz_coverage_script", ROOT / "scripts" / "coverage.py")
cov = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cov)


def _owner(path: str):
    if path == "Tensor":
        return gradviz.ones(1)
    obj = gradviz
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)  # raises the one line when gradviz lacks the module itself
    return obj


@pytest.mark.parametrize("path", cov.MODULES)
def test_each_missing_name_fails_with_one_line(path):
    torch_path = "torch.Tensor" if path == "Tensor" else path
    try:
        owner = _owner(path)
    except AttributeError as e:  # the whole module is missing: its one line names it
        assert str(e).startswith("gradviz has no torch.") and torch_path.startswith(str(e).split()[3])
        return
    for name in cov.public_names(path):
        if cov.gradviz_has(path, name):
            continue
        try:
            value = getattr(owner, name)
        except AttributeError as e:
            msg = str(e)
            assert msg.startswith(f"gradviz has no {torch_path}.{name} (used at "), msg
            assert msg.endswith("; see README: what runs on gradviz") and "\n" not in msg
        else:  # a stub: calling it must say what is missing
            assert cov._is_stub(value), (path, name)


def test_the_line_names_the_users_file_and_line():
    code = compile("import gradviz as torch\n\ny = torch.fx.symbolic_trace\n", "train.py", "exec")
    with pytest.raises(AttributeError) as info:
        exec(code, {})
    assert str(info.value) == "gradviz has no torch.fx (used at train.py:3); see README: what runs on gradviz"
    code = compile("import gradviz as torch\nx = torch.ones(2)\ny = x.to_sparse_csr()\n", "t.py", "exec")
    with pytest.raises(AttributeError) as info:
        exec(code, {})
    assert str(info.value) == ("gradviz has no torch.Tensor.to_sparse_csr (used at t.py:3); see README: what runs on "
                               "gradviz")


def test_hasattr_and_submodules_still_work():
    assert not hasattr(gradviz, "fx") and hasattr(gradviz, "nn")
    assert getattr(gradviz.nn, "NoSuchModule", None) is None
    assert gradviz.nn.utils.rnn.pad_sequence is not None  # a submodule reached as an attribute
    x = gradviz.ones(2)
    assert not hasattr(x, "_no_such_private")
