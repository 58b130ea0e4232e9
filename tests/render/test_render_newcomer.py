"""What a newcomer trips on in render's pictures and messages (issue 35 items 5, 6, 11)."""

from __future__ import annotations

import re
import subprocess
import sys

from click.testing import CliRunner

import gradviz
from gradviz.cli import main
from gradviz.render import dot_source


def _node_labels(dot: str) -> dict[int, str]:
    """Node id -> the text of its HTML-like label (tags dropped)."""
    out = {}
    for m in re.finditer(r'^\s*n(\d+) \[id="node-\d+".*label=<(.*)>\]$', dot, re.M):
        out[int(m.group(1))] = " ".join(re.sub(r"<[^>]*>", " ", m.group(2)).split())
    return out


def _record(tmp_path, fn, name="t.trace.json"):
    path = tmp_path / name
    with gradviz.trace(str(path)):
        fn()
    return gradviz.load(str(path))


def test_syntax_error_script_says_nothing_to_draw_with_its_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("import gradviz\nx = (\n")
    subprocess.run([sys.executable, "-m", "gradviz", "run", "-o", "broken.trace.json", "broken.py"],
                   cwd=tmp_path, capture_output=True, check=False, timeout=120)
    assert (tmp_path / "broken.trace.json").exists()
    r = CliRunner().invoke(main, ["render", "broken.trace.json"])
    assert r.exit_code != 0
    assert "nothing to draw" in r.output and "SyntaxError" in r.output, r.output
    assert "wrote" not in r.output and not list(tmp_path.glob("*.svg"))
    assert "Traceback" not in r.output


def test_a_program_without_a_graph_says_nothing_to_draw(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _record(tmp_path, lambda: gradviz.ones(3) * 2)
    r = CliRunner().invoke(main, ["render", "t.trace.json", "--format", "dot"])
    assert r.exit_code == 1 and "nothing to draw" in r.output, r.output


def test_layout_fixed_help_says_it_needs_graphviz():
    r = CliRunner().invoke(main, ["render", "--help"], terminal_width=200)
    text = " ".join(r.output.split())
    i = text.index("fixed (")
    assert "neato" in text[i : i + 200] and "Only --format dot needs no Graphviz" in text


def test_edges_into_one_input_nodes_drop_in_0(tmp_path):
    def program():
        x = gradviz.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a, b = x.split(2)  # SplitBackward0 has two inputs: its edges keep the slot
        (a.sin() * b.exp()).sum().backward()

    trace = _record(tmp_path, program)
    dot = dot_source(trace)
    edges = re.findall(r"^\s*n(\d+) -> n(\d+) \[.*?\]$", dot, re.M)
    assert edges
    nodes = trace.nodes
    lines = re.findall(r"^\s*n\d+ -> n\d+ .*$", dot, re.M)
    labels = {(int(a), int(b)): line for (a, b), line in zip(edges, lines, strict=True)}
    several = [k for k in labels if nodes[k[1]].num_inputs > 1]
    assert several, "the program has a node with several inputs"
    for (_src, dst), line in labels.items():
        if nodes[dst].num_inputs == 1:
            assert "in 0" not in line, line
        else:
            assert re.search(r"in [01]", line), line


def test_labels_show_forward_line_and_accumulategrad_seq_nr_none(tmp_path):
    def program():
        w = gradviz.tensor([1.0, 2.0], requires_grad=True)
        y = w * 3  # the forward line
        y.sum().backward()

    trace = _record(tmp_path, program)
    dot = dot_source(trace)
    labels = _node_labels(dot)
    mul = next(n for n in trace.nodes.values() if n.name == "MulBackward0")
    line = mul.source.rpartition(":")[2]
    assert f"test_render_newcomer.py:{line}" in labels[mul.id]  # in the label, not only the tooltip
    assert "18446744073709551615" not in dot
    leaf = next(n for n in trace.nodes.values() if n.name == "AccumulateGrad")
    assert re.search(rf'n{leaf.id} \[.*sequence_nr none', dot)
