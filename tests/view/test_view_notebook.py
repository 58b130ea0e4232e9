"""Notebook display: a trace's and a recording's ``_repr_html_`` hold the graph; ``trace.view()``
is the page; samples/notebook.ipynb's code cells run headless (plain exec, no Jupyter)."""

from __future__ import annotations

import json
from pathlib import Path

import gradviz
from gradviz.trace import load, trace

NOTEBOOK = Path(__file__).resolve().parents[2] / "samples" / "notebook.ipynb"


def test_repr_html_of_a_trace_holds_its_graph(tmp_path):
    a = gradviz.tensor([1.0, 2.0], requires_grad=True)
    with trace(tmp_path / "t.json") as rec:
        (a.exp() * a).sum().backward()
    t = load(tmp_path / "t.json")
    h = t._repr_html_()
    assert "<svg" in h and "ExpBackward0" in h and "MulBackward0" in h and "SumBackward0" in h
    assert f"graph task {next(iter(t.tasks))}" in h
    assert "ExpBackward0" in rec._repr_html_()
    page = t.view()
    assert "<iframe srcdoc=" in page._repr_html_() and "gradviz-data" in page.html


def test_a_recording_in_memory_shows_itself():
    a = gradviz.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.record() as rec:
        (a * a).sum().backward()
    assert "MulBackward0" in rec._repr_html_()


def test_the_sample_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = json.loads(NOTEBOOK.read_text())
    ns: dict = {"__name__": "__main__"}
    shown = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        *body, last = src.rstrip().splitlines()
        exec(compile("\n".join(body), f"<cell {cell['id']}>", "exec"), ns)
        try:
            value = eval(compile(last, f"<cell {cell['id']}>", "eval"), ns)  # the value a notebook shows
        except SyntaxError:
            exec(compile(last, f"<cell {cell['id']}>", "exec"), ns)
            continue
        shown.append(value)
    html = [v._repr_html_() for v in shown if hasattr(v, "_repr_html_")]
    svgs = [v._repr_svg_() for v in shown if hasattr(v, "_repr_svg_")]
    assert any("AddmmBackward0" in s and "model.0.weight" in s for s in svgs)
    assert any("<svg" in h and "PowBackward0" in h and "MeanBackward0" in h for h in html)  # trace, recording
    assert any("<iframe" in h for h in html)
    assert (tmp_path / "loss-graph.svg").exists() and (tmp_path / "mlp.trace.json").exists()
