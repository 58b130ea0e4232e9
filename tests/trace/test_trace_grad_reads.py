"""A read of a non-leaf's ``.grad`` (None whatever backward does; torch warns) is a
non_leaf_grad_read event on both engines, with the user's line; reads that can give a gradient
(a leaf's, a non-leaf that retains its grad) are not events. Both engines record the same."""

from __future__ import annotations

import sys
import warnings

import pytest
import torch as real_torch

import gradviz
from gradviz.trace import events as ev


def _program(torch):  # noqa: ANN001, ANN202 - the same code on either library
    w = torch.randn(3, requires_grad=True)
    h = w * 2.0
    kept = w * 3.0
    kept.retain_grad()
    loss = (h * kept).sum()
    loss.backward()
    line = sys._getframe().f_lineno
    reads = (h.grad, kept.grad, w.grad, h.grad)  # h twice; kept and w give gradients
    return line + 1, reads


@pytest.mark.parametrize("engine", ["gradviz", "torch"])
def test_non_leaf_grad_reads(engine: str) -> None:
    lib = gradviz if engine == "gradviz" else real_torch
    with warnings.catch_warnings(record=True) as caught, gradviz.record(engine=engine) as rec:
        warnings.simplefilter("always")
        line, reads = _program(lib)
    assert reads[0] is None and reads[1] is not None and reads[2] is not None
    assert any("not a leaf Tensor" in str(w.message) for w in caught)  # torch's warning stays
    got = rec.trace.of_kind(ev.NonLeafGradRead)
    assert [e.source for e in got] == [f"{__file__}:{line}"] * 2
    assert got[0].tensor == got[1].tensor


@pytest.mark.parametrize("engine", ["gradviz", "torch"])
def test_why_answers_the_read(engine: str) -> None:
    lib = gradviz if engine == "gradviz" else real_torch
    with warnings.catch_warnings(), gradviz.record(engine=engine) as rec:
        warnings.simplefilter("ignore")
        line, _ = _program(lib)
    a = rec.trace.why()
    assert a.reason == "not_leaf", a
    assert f"read at {__file__.rsplit('/', 1)[-1]}:{line}" in a.text, a
