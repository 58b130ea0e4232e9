"""`gradviz.draw(x)`: torchviz's one call, on a live real-torch tensor, a live gradviz tensor and
a trace: an SVG with torch's node names and the leaves' module paths, written by render()."""

from __future__ import annotations

import pytest
import torch as real_torch

import gradviz
from gradviz.render import RenderError
from gradviz.trace import load, trace


def _mlp(m):
    model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(), m.nn.Linear(4, 1))
    return model, model(m.randn(2, 3)).sum()


@pytest.mark.parametrize("m", [real_torch, gradviz], ids=["torch", "gradviz"])
def test_draw_a_live_loss(m, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, loss = _mlp(m)
    d = gradviz.draw(loss)
    svg = d._repr_svg_()
    assert svg.lstrip().startswith("<svg")
    for name in ("SumBackward0", "AddmmBackward0", "ReluBackward0", "TBackward0", "AccumulateGrad"):
        assert name in svg, name
    for param in ("model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"):
        assert param in svg, param  # named by module path, as render names a trace's leaves
    assert "torch::autograd" not in svg
    assert d.nodes == 10
    bundle = d._repr_mimebundle_()
    assert bundle["image/svg+xml"] == svg and "10 nodes" in bundle["text/plain"]
    assert d.render("loss.svg").read_text().lstrip().startswith("<svg")
    assert d.save(tmp_path / "out" / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert "digraph" in d.render("loss.dot").read_text()
    loss.backward()  # drawing changed nothing: backward still runs, and after it the graph still draws
    assert model[0].weight.grad is not None
    assert "SumBackward0" in gradviz.draw(loss).svg


def test_the_same_graph_from_torch_and_gradviz():
    def names(m):
        m.manual_seed(0)
        a = m.randn(3, requires_grad=True)
        b = m.randn(3, requires_grad=True)
        y = (a * b).exp().sum() + (a.sin() * 2).mean()
        return sorted(n.name for n in gradviz.view.draw.graph_model(y, {}, "t").nodes.values())

    import gradviz.view.draw  # noqa: F401 (the module, for graph_model)

    assert names(real_torch) == names(gradviz)


def test_params_as_torchviz_takes_them():
    w = gradviz.randn(2, requires_grad=True)
    svg = gradviz.draw((w * 3).sum(), params={"my.weight": w}).svg
    assert "my.weight" in svg


def test_draw_a_trace_at_a_step(tmp_path):
    a = gradviz.tensor([1.0, 2.0], requires_grad=True)
    with trace(tmp_path / "t.json"):
        (a * a).sum().backward()
    t = load(tmp_path / "t.json")
    d = gradviz.draw(t, step=len(t))
    assert "MulBackward0" in d.svg and "done" in d.svg
    assert "MulBackward0" in gradviz.draw(tmp_path / "t.json").svg


def test_nothing_to_draw_is_a_clear_error():
    with pytest.raises(RenderError, match="no grad_fn"):
        gradviz.draw(gradviz.tensor([1.0]))
    with pytest.raises(RenderError, match="for a trace"):
        gradviz.draw((gradviz.tensor([1.0], requires_grad=True) * 2).sum(), step=3)
