"""`gradviz why --error` names the in-place op that modified a tensor saved for backward, and the
user's line, whichever in-place op it was (issue 28's answer): ops whose kernels once reported no
step (``sin_``, ``abs_``, nn.init's ``normal_``, ``a[k] = v``), alike on both engines."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import gradviz

PROGRAM = '''\
def run(torch, op):
    w = torch.randn(3, requires_grad=True)
    y = w.exp()  # exp saves its result: y
    if op == "sin_":
        y.sin_()
    if op == "abs_":
        y.abs_()
    if op == "normal_":
        torch.nn.init.normal_(y)
    if op == "__setitem__":
        y[0] = 2.0
    y.sum().backward()
'''
# op -> (its line, its text on it)
WRITES = {"sin_": (5, "y.sin_()"), "abs_": (7, "y.abs_()"), "normal_": (9, "torch.nn.init.normal_(y)"),
          "__setitem__": (11, "y[0]")}
ENGINES = ["gradviz", "torch"]  # in this process: about a second a case on torch


def _answer(engine: str, op: str, folder: Path) -> Any:
    path = folder / "inplace_ops.py"
    path.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location(f"inplace_ops_{engine}_{op}", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    if engine == "torch":
        import torch
    else:
        torch = gradviz
    with gradviz.record(engine=engine) as rec:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod.run(torch, op)
    return rec.trace.why(error=True)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("op", sorted(WRITES))
def test_the_inplace_answer_names_the_op_and_its_line(engine: str, op: str, tmp_path: Path) -> None:
    a = _answer(engine, op, tmp_path)
    line, text = WRITES[op]
    assert a.reason == "inplace", a
    assert a.where == f"{tmp_path / 'inplace_ops.py'}:{line}", a  # the JSON contract: file:line
    assert a.text.startswith(f"`{op}` at inplace_ops.py:{line}:9 (`{text}`) modified in place"), a.text
    assert "ExpBackward0" in a.text, a.text  # and who saved it
    if engine == "gradviz":  # torch's forward_op names no node: the saver's op and line are gradviz's
        assert "`exp` at inplace_ops.py:3:9 (`w.exp()`) (ExpBackward0)" in a.text, a.text
