"""gradviz diff: one script recorded by torch and by gradviz's engine agrees; a wrong custom
backward is named with its gradient (exit 1); different programs diverge in structure."""

from __future__ import annotations

import torch  # the torch side of the comparison: fails, never skips, without torch
from click.testing import CliRunner

import gradviz
from gradviz.cli import main
from gradviz.diff import diff
from gradviz.torchrec import TorchRecorder

W = [[0.5, -1.0, 0.25], [1.5, 0.75, -0.5], [0.1, 0.2, 0.3], [-0.3, 0.9, 1.1]]
X = [[1.0, 2.0, -1.0, 0.5], [0.0, -0.5, 1.5, 2.0]]


def program(T, scale_back: float = 1.0):
    """A small model with a custom Function (Square), written for torch's API (T = torch or gradviz)."""

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * scale_back  # scale_back != 1: a deliberately wrong backward

    w = T.tensor(W, requires_grad=True)
    b = T.tensor([0.1, -0.2, 0.3], requires_grad=True)
    x = T.tensor(X)
    h = (x @ w + b).tanh()
    loss = Square.apply(h).sum() + h.exp().mean()
    loss.backward()


def record_torch(path, **kw):
    with TorchRecorder(path):
        program(torch, **kw)
    return gradviz.load(path)


def record_gradviz(path):
    with gradviz.trace(path):
        program(gradviz)
    return gradviz.load(path)


def test_same_script_both_engines_no_divergence(tmp_path):
    a = record_torch(tmp_path / "torch.json")
    b = record_gradviz(tmp_path / "gradviz.json")
    assert diff(a, b) == []
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "torch.json"), str(tmp_path / "gradviz.json")])
    assert r.exit_code == 0, r.output
    assert "no divergence" in r.output and "torch 2.13" in r.output


def test_wrong_custom_backward_is_named(tmp_path):
    record_torch(tmp_path / "good.json")
    record_torch(tmp_path / "bad.json", scale_back=1.5)
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "good.json"), str(tmp_path / "bad.json")])
    assert r.exit_code == 1
    lines = [ln for ln in r.output.splitlines() if ln.startswith("gradient:")]
    assert len(lines) == 1
    # the first gradient that differs is the one the wrong backward hands on
    assert "gradient SquareBackward (#" in lines[0] and "-> TanhBackward0" in lines[0]
    assert "structure:" not in r.output and "order:" not in r.output


def test_different_programs_structural_divergence(tmp_path):
    a = record_torch(tmp_path / "a.json")
    with TorchRecorder(tmp_path / "b.json"):
        w = torch.tensor(W, requires_grad=True)
        (torch.tensor(X) @ w).sin().sum().backward()
    found = diff(a, gradviz.load(tmp_path / "b.json"))
    assert found[0].kind == "structure"
    assert "AddBackward0 vs SumBackward0" in found[0].message
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert r.exit_code == 1 and "structure: task 1: node #0" in r.output


def test_rtol_decides(tmp_path):
    a = record_torch(tmp_path / "a.json")
    b = record_torch(tmp_path / "b.json", scale_back=1.0 + 1e-3)
    assert [d.kind for d in diff(a, b)] == ["gradient"]
    assert diff(a, b, rtol=1e-2) == []
