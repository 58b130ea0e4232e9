"""gradviz render: real SVG drawn by graphviz's dot, checked the way a reader would look at it.

Sample traces are recorded from samples/*.py with `gradviz run`; hand-made traces
(tests/trace_builders.py) cover what samples do not (hostile names, a failing node).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import trace_builders as tb
from click.testing import CliRunner

from gradviz.cli import main
from gradviz.render import GraphvizNotFound, RenderError, dot_source, render, styles
from gradviz.render.dot import _shape
from gradviz.trace import events as ev
from gradviz.trace.file import load
from gradviz.trace.model import Trace

REPO = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' not installed")


# --- helpers -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """Record samples/<name>.py with `gradviz run` (once per session) and load the trace."""
    cache: dict[str, Trace] = {}
    out = tmp_path_factory.mktemp("traces")

    def get(name: str, *args: str) -> Trace:
        if name not in cache:
            path = out / f"{name}.trace.json"
            subprocess.run(
                [sys.executable, "-m", "gradviz.cli", "run", "-o", str(path), f"samples/{name}.py", *args],
                cwd=REPO, capture_output=True, check=False, timeout=120,
            )
            cache[name] = load(path)
        return cache[name]

    return get


class Svg:
    """A rendered SVG, parsed (which also proves it is well-formed XML)."""

    def __init__(self, path: Path):
        self.root = ET.parse(path).getroot()
        gs = list(self.root.iter(f"{SVG}g"))
        self.nodes = {g.get("id"): g for g in gs if g.get("class") == "node"}
        self.edges = {g.get("id"): g for g in gs if g.get("class") == "edge"}

    def node(self, nid: int) -> ET.Element:
        return self.nodes[f"node-{nid}"]

    def group_ids(self) -> list[str]:
        return [k for k in self.nodes if k.startswith("group-")]

    @staticmethod
    def texts(g: ET.Element) -> list[str]:
        return [t.text or "" for t in g.iter(f"{SVG}text")]

    @staticmethod
    def flat(g: ET.Element) -> str:
        """All text of a box on one line (graphviz splits a bold word into its own text)."""
        return " ".join(Svg.texts(g)).replace(" :", ":")

    @staticmethod
    def fill(g: ET.Element) -> str:
        for el in g.iter():
            if el.tag in (f"{SVG}polygon", f"{SVG}ellipse", f"{SVG}path") and el.get("fill") not in (None, "none"):
                return el.get("fill", "")
        raise AssertionError("node has no filled shape")

    @staticmethod
    def node_stroke(g: ET.Element) -> str:
        for el in g.iter():
            if el.tag in (f"{SVG}polygon", f"{SVG}ellipse", f"{SVG}path") and el.get("stroke"):
                return el.get("stroke", "")
        raise AssertionError("node has no outline")

    @staticmethod
    def tooltip(g: ET.Element) -> str:
        for a in g.iter(f"{SVG}a"):
            if a.get(f"{XLINK}title"):
                return a.get(f"{XLINK}title", "")
        return ""

    def title_text(self) -> str:
        """Text of the graph label (title, notes, legend): the texts outside nodes and edges."""
        inside = {id(t) for g in [*self.nodes.values(), *self.edges.values()] for t in g.iter(f"{SVG}text")}
        return "\n".join(t.text or "" for t in self.root.iter(f"{SVG}text") if id(t) not in inside)


def reachable(trace: Trace, task: int) -> set[int]:
    """Nodes of a task, computed from the events independently of the renderer."""
    roots = [r for r, _ in trace.tasks[task].begin.roots]
    seen, stack = set(roots), list(roots)
    while stack:
        for dst, _ in trace.nodes[stack.pop()].next_edges:
            if dst is not None and dst not in seen:
                seen.add(dst)
                stack.append(dst)
    return seen


def draw(trace: Trace, tmp_path: Path, name: str = "g.svg", **kw) -> Svg:
    pics = render(trace, tmp_path / name, **kw)
    assert len(pics) == 1
    return Svg(pics[0].path)


def step_after(trace: Trace, pred) -> int:
    """The step (number of events applied) right after the first event matching pred."""
    return next(i + 1 for i, e in enumerate(trace.events) if pred(e))


# --- one SVG node per graph node, edges, tooltips -----------------------------------------


@needs_dot
@pytest.mark.parametrize("sample", ["diamond", "mlp", "reentrant", "multi_device"])
def test_one_svg_node_per_graph_node_with_edges_and_source_tooltips(recorded, tmp_path, sample):
    trace = recorded(sample, *(["2"] if sample == "mlp" else []))
    assert trace.tasks, "the sample ran no backward"
    for task in trace.tasks:
        svg = draw(trace, tmp_path, f"{sample}{task}.svg", task=task)
        ids = reachable(trace, task)
        assert set(svg.nodes) == {f"node-{n}" for n in ids}
        for n in ids:
            info = trace.nodes[n]
            g = svg.node(n)
            assert info.name in svg.texts(g)
            # The tooltip starts with the user's file:line that created the node.
            assert info.source and svg.tooltip(g).startswith(info.source)
            assert re.match(r"samples/\w+\.py:\d+$", info.source) or sample == "reentrant"
        # One drawn edge per valid next_edge; its label says the input_nr where the target has
        # several inputs (issue 35: "in 0" into a one-input node says nothing).
        nodes = trace.nodes
        expected = {(f"n{n}", f"n{d}", f"in {nr}" if nodes[d].num_inputs > 1 or nr else "")
                    for n in ids for d, nr in nodes[n].next_edges if d is not None}
        drawn = set()
        for eid, g in svg.edges.items():
            src, dst = eid.removeprefix("edge-").split("-")
            drawn.add((src, dst, " ".join(svg.texts(g))))
        assert drawn == expected


@needs_dot
def test_node_shows_name_seqnr_order_thread_deps_saved_and_leaf(recorded, tmp_path):
    trace = recorded("diamond")
    svg = draw(trace, tmp_path)
    order = trace.execution_order_ids(1)
    deps = dict(next(e for e in trace.events if isinstance(e, ev.Dependencies)).counts)
    for n in reachable(trace, 1):
        text = " ".join(svg.texts(svg.node(n)))
        info = trace.nodes[n]
        assert f"ran #{order.index(n) + 1} on MainThread" in text
        if n in deps:
            assert f"deps {deps[n]}" in text
        if info.name != "AccumulateGrad":
            assert f"seq_nr {info.sequence_nr}" in text
        if info.saved:
            assert "saved " + ", ".join(_shape(x) for x in info.saved[:4]) in text
    leaf = next(n for n, i in trace.nodes.items() if i.name == "AccumulateGrad")
    text = " ".join(svg.texts(svg.node(leaf)))
    update = next(e for e in trace.events if isinstance(e, ev.AccumulateGradUpdate))
    t = trace.tensors[update.tensor]
    assert f"{t.name} {_shape(t.shape)} {t.dtype}" in text and f"grad norm {update.after.norm:.4g}" in text
    root = trace.tasks[1].begin.roots[0][0]
    assert svg.fill(svg.node(root)) == styles.KINDS["root"].fill
    # The legend in the picture explains the styles used.
    assert styles.KINDS["leaf"].meaning in svg.title_text()


@needs_dot
def test_grads_on_edges(recorded, tmp_path):
    trace = recorded("diamond")
    svg = draw(trace, tmp_path, grads=True)
    adds = [e for e in trace.events if isinstance(e, ev.BufferAdd) and e.producer is not None]
    for e in adds:
        g = svg.edges[f"edge-n{e.producer}-n{e.node}"]
        assert f"{_shape(e.shape)} ‖g‖ {e.stats.norm:.4g}" in " ".join(svg.texts(g))


# --- state at a step -------------------------------------------------------------------------


def _fill(state: str) -> str:
    return styles.STATES[state].fill


@needs_dot
def test_diamond_states_at_steps(recorded, tmp_path):
    trace = recorded("diamond")
    ids = reachable(trace, 1)
    names = {n: trace.nodes[n].name for n in ids}
    leaf = next(n for n in ids if names[n] == "AccumulateGrad")
    add = next(n for n in ids if names[n] == "AddBackward0")
    root = next(n for n in ids if names[n] == "SumBackward0")

    svg = draw(trace, tmp_path, "s0.svg", step=0)
    assert {Svg.fill(svg.node(n)) for n in ids} == {_fill("unreached")}

    s = step_after(trace, lambda e: isinstance(e, ev.QueuePush) and e.node == root)
    svg = draw(trace, tmp_path, "push.svg", step=s)
    assert Svg.fill(svg.node(root)) == _fill("queued")
    assert Svg.fill(svg.node(add)) == _fill("unreached")

    s = step_after(trace, lambda e: isinstance(e, ev.NodeBegin) and e.node == add)
    svg = draw(trace, tmp_path, "run.svg", step=s)
    assert Svg.fill(svg.node(add)) == _fill("running")
    assert "running: on MainThread" in Svg.flat(svg.node(add))
    assert Svg.fill(svg.node(root)) in (_fill("done"), _fill("released"))

    # The leaf gets one of its two gradients and waits in not_ready: k of n slots filled.
    s = step_after(trace, lambda e: isinstance(e, ev.NotReadyPark) and e.node == leaf)
    svg = draw(trace, tmp_path, "park.svg", step=s)
    assert Svg.fill(svg.node(leaf)) == _fill("parked")
    # In gradients, not slots (issue 35: "1/1 slots filled, 1 missing" read as a contradiction).
    assert "parked: 1 of 2 gradients in" in Svg.flat(svg.node(leaf))
    assert "will run #" in " ".join(svg.texts(svg.node(leaf)))  # not "ran": it has not yet

    svg = draw(trace, tmp_path, "end.svg", step=len(trace.events))
    for n in ids:
        expect = "released" if trace.nodes[n].saved else "done"
        assert Svg.fill(svg.node(n)) == _fill(expect), names[n]
    assert f"state after {len(trace.events)} events (the last: #{len(trace.events) - 1} trace_end)" in svg.title_text()


@needs_dot
def test_reentrant_states_outer_node_runs_while_inner_task_works(recorded, tmp_path):
    trace = recorded("reentrant")
    assert len(trace.tasks) == 2
    inner_task = next(t for t, info in trace.tasks.items() if info.begin.reentrant_depth == 1)
    outer_task = next(t for t in trace.tasks if t != inner_task)
    outer = next(n for n in reachable(trace, outer_task) if trace.nodes[n].name == "CheckpointedBackward")
    s = step_after(trace, lambda e: isinstance(e, ev.NodeBegin) and e.task == inner_task)
    inner_first = trace.events[s - 1].node
    outer_svg = draw(trace, tmp_path, "outer.svg", task=outer_task, step=s)
    inner_svg = draw(trace, tmp_path, "inner.svg", task=inner_task, step=s)
    assert Svg.fill(outer_svg.node(outer)) == _fill("running")
    assert Svg.fill(inner_svg.node(inner_first)) == _fill("running")
    leaves = [n for n in reachable(trace, outer_task) if trace.nodes[n].name == "AccumulateGrad"]
    assert {Svg.fill(outer_svg.node(n)) for n in leaves} == {_fill("unreached")}
    # After the inner task ends, its nodes are done while the outer node still runs.
    s = step_after(trace, lambda e: isinstance(e, ev.TaskEnd) and e.task == inner_task)
    outer_svg = draw(trace, tmp_path, "outer2.svg", task=outer_task, step=s)
    inner_svg = draw(trace, tmp_path, "inner2.svg", task=inner_task, step=s)
    assert Svg.fill(outer_svg.node(outer)) == _fill("running")
    assert {Svg.fill(inner_svg.node(n)) for n in reachable(trace, inner_task)} <= {_fill("done"), _fill("released")}


# --- pruned, errors, NaN ---------------------------------------------------------------------------


@needs_dot
def test_pruned_nodes_are_faded(tmp_path):
    trace = tb.pruned()
    svg = draw(trace, tmp_path)
    assert Svg.fill(svg.node(2)) == styles.MARKS["pruned"].fill  # AccumulateGrad(w2): not needed
    assert Svg.fill(svg.node(1)) == styles.KINDS["leaf"].fill
    assert svg.edges["edge-n3-n2"].find(f".//{SVG}path").get("stroke-dasharray")
    svg = draw(trace, tmp_path, "s.svg", step=len(trace.events))
    assert Svg.fill(svg.node(2)) == _fill("pruned")


@needs_dot
def test_grad_subset_sample_prunes(recorded, tmp_path):
    trace = recorded("grad_subset")
    execinfo = [e for e in trace.events if isinstance(e, ev.ExecInfo)]
    assert execinfo
    task = execinfo[0].task
    svg = draw(trace, tmp_path, task=task)
    pruned = reachable(trace, task) - set(execinfo[0].needed)
    assert pruned
    for n in pruned:
        assert Svg.fill(svg.node(n)) == styles.MARKS["pruned"].fill


@needs_dot
@pytest.mark.parametrize("nan", [False, True])
def test_errored_and_nan_nodes_are_red(tmp_path, nan):
    trace = tb.failing(nan=nan)
    svg = draw(trace, tmp_path)
    assert Svg.fill(svg.node(2)) == styles.MARKS["error"].fill
    text = " ".join(svg.texts(svg.node(2)))
    assert ("nan values" in text) if nan else ("RuntimeError: LogBackward0 failed" in text)
    assert Svg.fill(svg.node(3)) != styles.MARKS["error"].fill


@needs_dot
def test_error_sample_is_red(recorded, tmp_path):
    trace = recorded("error")
    errs = [e for e in trace.events if isinstance(e, ev.Error) and e.node is not None]
    assert errs
    svg = draw(trace, tmp_path, task=errs[0].task)
    assert Svg.fill(svg.node(errs[0].node)) == styles.MARKS["error"].fill


# --- devices -----------------------------------------------------------------------------------------


@needs_dot
def test_devices_are_clusters(tmp_path):
    svg = draw(tb.two_devices(), tmp_path)
    clusters = {g.get("id"): g for g in svg.root.iter(f"{SVG}g") if g.get("class") == "cluster"}
    assert len(clusters) == 2
    labels = {" ".join(Svg.texts(g)) for g in clusters.values()}
    assert labels == {"cpu", "virtual:0"}


# --- safety -----------------------------------------------------------------------------------------


@needs_dot
@pytest.mark.parametrize("fmt", ["svg", "png", "pdf"])
def test_hostile_names_render_valid_output(tmp_path, fmt):
    trace = tb.hostile()
    pics = render(trace, tmp_path / f"h.{fmt}")
    data = pics[0].path.read_bytes()
    assert data[:4] in (b"<?xm", b"\x89PNG", b"%PDF")
    if fmt != "svg":
        return
    svg = Svg(pics[0].path)  # parses: well-formed XML
    assert not [el for el in svg.root.iter() if el.tag.split("}")[-1] in ("script", "foreignObject")]
    assert set(svg.nodes) == {f"node-{n}" for n in trace.nodes}
    # Every name is drawn as text, unchanged but for control characters and lone surrogates.
    for nid, info in trace.nodes.items():
        if info.name == "AccumulateGrad":
            continue
        drawn = "\n".join(svg.texts(svg.node(nid)))
        expected = info.name.replace("\r", "\n").replace("\t", " ").replace("\ud800", "?")
        expected = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", "\N{REPLACEMENT CHARACTER}", expected)
        assert expected in drawn, (info.name, drawn)
    # Nothing leaked into graphviz's own escapes (\N = node name, \G = graph name).
    assert "gradviz" not in " ".join(svg.texts(svg.node(11)))
    # Quotes and brackets in sources stay inside the tooltip.
    leaf = svg.node(1)
    assert Svg.tooltip(leaf).startswith('Evil"Backward0.py:0"<>')


def test_hostile_dot_source_has_no_raw_user_text_in_ids():
    dot = dot_source(tb.hostile())
    for line in dot.splitlines()[4:]:
        line = line.strip()
        assert re.match(r"^(n\d+|g\d+|n\d+ -> n\d+|g\d+ -> \w+|\}|subgraph cluster_\d+ \{|graph \[)", line), line
    assert "\\" not in dot  # no DOT escape can start from user text


# --- big graphs: collapse ---------------------------------------------------------------------------


def _counts(svg: Svg) -> int:
    """Graph nodes behind the drawn boxes: 1 per node box, the ×count of each group box."""
    total = sum(1 for k in svg.nodes if k.startswith("node-"))
    for gid in svg.group_ids():
        text = " ".join(Svg.texts(svg.nodes[gid]))
        total += int(re.search(r"\((\d+) nodes\)|×(\d+) nodes", text).group(1) or re.search(r"×(\d+)", text).group(1))
    return total


@needs_dot
@pytest.mark.parametrize("kind", ["mlp", "chain", "wide"])
def test_big_graph_collapses_under_max_nodes_and_says_so(tmp_path, kind):
    from tests.synth import backward_graph

    trace = backward_graph(kind, 2000).trace()
    svg = draw(trace, tmp_path, max_nodes=150)
    assert len(svg.nodes) <= 150
    assert svg.group_ids()
    assert _counts(svg) == len(trace.nodes)
    assert f"{len(trace.nodes)} nodes drawn as {len(svg.nodes)} boxes" in svg.title_text()
    assert "--expand draws every node" in svg.title_text()
    root = trace.tasks[1].begin.roots[0][0]
    assert f"node-{root}" in svg.nodes  # where backward started is never collapsed away


@needs_dot
def test_mlp_repeats_keep_one_block_and_count_the_rest(tmp_path):
    from tests.synth import backward_graph

    trace = backward_graph("mlp", 602).trace()  # 100 identical layers
    svg = draw(trace, tmp_path, max_nodes=100)
    groups = [" ".join(Svg.texts(svg.nodes[g])) for g in svg.group_ids()]
    assert any(re.search(r"×9\d more blocks like the one above", t) for t in groups), groups
    assert "ReluBackward0" in " ".join(groups)
    assert len(svg.nodes) < 20


@needs_dot
def test_expand_and_small_graphs_draw_every_node(tmp_path):
    from tests.synth import backward_graph

    trace = backward_graph("chain", 700).trace()
    svg = draw(trace, tmp_path, expand=True)
    assert set(svg.nodes) == {f"node-{n}" for n in trace.nodes}
    assert "compact labels" in svg.title_text()


@needs_dot
def test_group_by_line(tmp_path):
    from tests.synth import backward_graph

    trace = backward_graph("mlp", 62).trace()
    svg = draw(trace, tmp_path, group_by="line")
    texts = [" ".join(Svg.texts(svg.nodes[g])) for g in svg.group_ids()]
    assert any("from synthetic_mlp.py:10" in t for t in texts)
    assert _counts(svg) == len(trace.nodes)


@needs_dot
def test_step_colours_collapsed_boxes_by_their_most_active_member(tmp_path):
    from tests.synth import backward_graph

    trace = backward_graph("chain", 600).trace()
    s = len(trace.events) // 2
    svg = draw(trace, tmp_path, max_nodes=60, step=s)
    fills = {Svg.fill(svg.nodes[g]) for g in svg.group_ids()}
    assert _fill("running") in fills or _fill("queued") in fills
    assert fills & {_fill("done"), _fill("released")} and _fill("unreached") in fills


# --- outputs, CLI ------------------------------------------------------------------------------------


def test_dot_format_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    pics = render(tb.diamond(), tmp_path / "d.dot")
    assert pics[0].path.read_text().startswith("digraph gradviz {")
    with pytest.raises(GraphvizNotFound, match="apt-get install graphviz.*brew install graphviz"):
        render(tb.diamond(), tmp_path / "d.svg")
    result = CliRunner().invoke(main, ["render", str(_save(tb.diamond(), tmp_path)), "-o", str(tmp_path / "x.png")])
    assert result.exit_code == 1
    assert "is not installed" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def _save(trace: Trace, tmp_path: Path, name: str = "t.trace.json") -> Path:
    from gradviz.trace.file import save

    path = tmp_path / name
    save(trace.events, path)
    return path


def _many_tasks(tmp_path: Path, n: int = 12, fail_at: int | None = None) -> Path:
    """A trace of n backward passes (one graph task each); pass ``fail_at`` raises in its backward."""
    import gradviz

    path = tmp_path / "many.trace.json"

    class Boom(gradviz.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = gradviz.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.trace(str(path)):
        for i in range(n):
            y = Boom.apply(x) if i == fail_at else x * 2
            try:
                y.sum().backward()
            except ValueError:
                pass
    return path


@needs_dot
def test_cli_default_output_is_one_picture_of_the_first_task_in_the_current_folder(tmp_path, monkeypatch):
    path = _save(tb.reentrant(), tmp_path, "re.trace.json")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = CliRunner().invoke(main, ["render", str(path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in work.iterdir()) == ["re.svg"]
    assert "drew task 1 of 2 (the first): --task N draws another, --all draws all 2" in result.output
    result = CliRunner().invoke(main, ["render", str(path), "-o", "raw.svg"])
    assert result.exit_code == 0 and (work / "raw.svg").exists() and not (work / "raw.task1.svg").exists()
    result = CliRunner().invoke(main, ["render", str(path), "--all", "-o", "all.svg"])
    assert result.exit_code == 0 and (work / "all.task1.svg").exists() and (work / "all.task2.svg").exists()
    result = CliRunner().invoke(main, ["render", str(path), "--step", "5"])  # does not overwrite re.svg
    assert result.exit_code == 0 and (work / "re.step5.svg").exists()
    result = CliRunner().invoke(main, ["render", str(path), "--task", "2", "-o", "x.pdf"])
    assert result.exit_code == 0 and (work / "x.pdf").read_bytes().startswith(b"%PDF")
    result = CliRunner().invoke(main, ["render", str(path), "--task", "1", "--format", "png"])
    assert result.exit_code == 0 and (work / "re.png").read_bytes().startswith(b"\x89PNG")
    result = CliRunner().invoke(main, ["render", str(path), "-o", "new/dir/n.dot"])
    assert result.exit_code == 0 and (work / "new" / "dir" / "n.dot").exists()


def test_cli_default_picture_is_the_first_failing_task(tmp_path, monkeypatch):
    path = _many_tasks(tmp_path, 5, fail_at=3)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["render", str(path), "--format", "dot"])
    assert result.exit_code == 0, result.output
    assert f"drew task {list(load(path).tasks)[3]} of 5 (the first that failed)" in result.output
    assert sorted(p.name for p in tmp_path.glob("many*.dot")) == ["many.dot"]


def test_cli_missing_task_names_a_range_and_a_count(tmp_path):
    path = _many_tasks(tmp_path, 12)
    ids = list(load(path).tasks)  # task ids count on from earlier backwards in this process
    result = CliRunner().invoke(main, ["render", str(path), "--task", "9999"])
    assert result.exit_code == 2
    assert f"no graph task 9999 in the trace (12 tasks, {ids[0]}..{ids[-1]})" in result.output
    assert f"{ids[3]}, {ids[4]}" not in result.output


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_cli_render_into_a_device_is_one_line(tmp_path):
    path = _save(tb.reentrant(), tmp_path, "re.trace.json")
    link = tmp_path / "link"
    link.symlink_to("/dev/full")
    for target in ("/dev/full", str(link)):
        result = CliRunner().invoke(main, ["render", str(path), "--all", "-o", target, "--format", "dot"])
        assert result.exit_code == 1 and "not a regular file" in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not list(Path("/dev").glob("full.task*")) and not list(tmp_path.glob("link.task*"))
    result = CliRunner().invoke(main, ["render", str(path), "--format", "dot", "-o", "/dev/full"])
    assert result.exit_code == 1 and "No space left on device" in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


@needs_dot
def test_svg_legend_keeps_key_and_meaning_apart(tmp_path):
    """The key and its meaning are separate cells: every meaning starts in one column, clear of
    the longest key, whatever the renderer does with spaces (the SVG read by a second renderer,
    rsvg-convert, where it is installed)."""
    svg = draw(tb.diamond(), tmp_path, "legend.svg", step=10)
    texts = list(svg.root.iter(f"{SVG}text"))
    meanings = {st.meaning: st.key for st in (*styles.KINDS.values(), *styles.STATES.values())}
    pairs = [(texts[i - 1], t) for i, t in enumerate(texts) if t.text in meanings and i]
    assert len(pairs) >= 4, [t.text for t in texts]
    for key, meaning in pairs:  # each meaning follows its own bold key, in a text of its own
        assert key.text == meanings[meaning.text] and key.get("font-weight") == "bold"
    xs = {float(m.get("x")) for _, m in pairs}
    assert len(xs) == 1, xs  # one column
    longest = max((k for k, _ in pairs), key=lambda k: len(k.text))
    assert xs.pop() > float(longest.get("x")) + 5 * len(longest.text)  # clear of the longest bold key (9 pt)
    rsvg = shutil.which("rsvg-convert")
    if rsvg is not None:
        png = tmp_path / "legend.png"
        subprocess.run([rsvg, str(tmp_path / "legend.svg"), "-o", str(png)], check=True, timeout=60)
        assert png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "9"], "no graph task 9 in the trace (tasks: 1, 2)"),
        (["--step", "-1"], "-1 is out of range: the trace has 69 events (0..69)"),
        (["--step", "100000"], "100000 is out of range: the trace has 69 events (0..69)"),
        (["-o", "x.svg", "--format", "png"], "--format png contradicts"),
        (["-o", "x.jpeg"], "cannot tell the format from '.jpeg'"),
        (["--max-nodes", "0"], "--max-nodes must be at least 1"),
    ],
)
def test_cli_user_mistakes_are_one_line_errors(tmp_path, args, message):
    path = _save(tb.reentrant(), tmp_path)
    result = CliRunner().invoke(main, ["render", str(path), *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_missing_trace_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["render", str(tmp_path / "nope.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output  # a usage mistake (issue 35 item 7)


def test_help_explains_every_style():
    result = CliRunner().invoke(main, ["render", "--help"])
    assert result.exit_code == 0
    for group in (styles.KINDS, styles.MARKS, styles.STATES):
        for s in group.values():
            assert s.meaning in result.output
    for opt in ("--output", "--format", "--task", "--step", "--grads", "--max-nodes", "--expand", "--group-by"):
        assert opt in result.output


def test_forward_only_trace_renders_the_forward_graph(tmp_path):
    from tests.synth import TraceBuilder

    b = TraceBuilder()
    a = b.leaf("a")
    b.op("MulBackward0", [a, None])
    dot = dot_source(b.trace())
    assert "forward graph (no backward ran)" in dot and "n2 -&gt;" not in dot and "n2 -> n1" in dot


def test_unknown_layout_is_an_error(tmp_path):
    with pytest.raises(RenderError, match="unknown layout"):
        render(tb.diamond(), tmp_path / "x.dot", layout="circo")


# --- recorded inline programs: GraphRoot, parallel edges, reentrant nesting ---------------------


@needs_dot
def test_graph_root_parallel_edges_and_nested_tasks(tmp_path):
    import gradviz as torch

    with torch.record() as rec:
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        torch.autograd.backward([(a * 2).sum(), a.exp().sum()])  # two roots: a GraphRoot
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()  # MulBackward0 feeds x's AccumulateGrad twice
    trace = rec.trace
    first, second = list(trace.tasks)
    gr = trace.tasks[first].begin.graph_root
    assert gr is not None
    svg = draw(trace, tmp_path, "gr.svg", task=first)
    assert svg.node(gr).find(f".//{SVG}polygon") is not None  # the octagon
    assert Svg.fill(svg.node(gr)) == styles.KINDS["graph_root"].fill
    for r, _ in trace.tasks[first].begin.roots:
        assert Svg.fill(svg.node(r)) == styles.KINDS["root"].fill
    svg = draw(trace, tmp_path, "xx.svg", task=second)
    mul = next(n for n in reachable(trace, second) if trace.nodes[n].name == "MulBackward0")
    leaf = next(n for n in reachable(trace, second) if trace.nodes[n].name == "AccumulateGrad")
    assert {k for k in svg.edges if k.startswith(f"edge-n{mul}-n{leaf}")} == {
        f"edge-n{mul}-n{leaf}",
        f"edge-n{mul}-n{leaf}-slot1",
    }


@needs_dot
def test_reentrant_node_says_which_task_ran_inside_it(recorded, tmp_path):
    trace = recorded("reentrant")
    inner = next(t for t, info in trace.tasks.items() if info.begin.reentrant_depth == 1)
    outer = next(t for t in trace.tasks if t != inner)
    node = next(n for n in reachable(trace, outer) if trace.nodes[n].name == "CheckpointedBackward")
    svg = draw(trace, tmp_path, task=outer)
    assert f"ran task {inner} inside (reentrant)" in Svg.flat(svg.node(node))


def test_bench_render_quick_runs(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("graphviz 'dot' not installed")
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_render.py", "--quick", "--no-expand"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| mlp | 997 | default |" in proc.stdout and "load + render" in proc.stdout


@needs_dot
def test_group_by_function_names_the_enclosing_function(recorded, tmp_path, monkeypatch):
    trace = recorded("reentrant")
    monkeypatch.chdir(REPO)  # sources are recorded relative to where the program ran
    inner = next(t for t, info in trace.tasks.items() if info.begin.reentrant_depth == 1)
    svg = draw(trace, tmp_path, task=inner, group_by="function")
    (gid,) = svg.group_ids()
    assert "nodes from samples/reentrant.py: Checkpointed.backward()" in Svg.flat(svg.nodes[gid])


@needs_dot
def test_expanded_5000_nodes_use_the_fixed_layout_and_draw_every_node(tmp_path):
    from tests.synth import backward_graph

    trace = backward_graph("mlp", 5000).trace()
    pics = render(trace, tmp_path / "big.svg", expand=True)
    assert pics[0].layout == "fixed" and pics[0].boxes == len(trace.nodes)
    svg = Svg(pics[0].path)
    assert set(svg.nodes) == {f"node-{n}" for n in trace.nodes}
    # One-line labels; the source line moves to the tooltip with the rest.
    some = svg.node(next(iter(trace.nodes)))
    assert len(Svg.texts(some)) == 1 and Svg.tooltip(some).startswith("synthetic_mlp.py:")


@needs_dot
def test_nan_turns_red_at_the_step_it_appears(tmp_path):
    trace = tb.failing(nan=True)
    s = step_after(trace, lambda e: isinstance(e, ev.NodeEnd) and e.node == 2)
    svg = draw(trace, tmp_path, "before.svg", step=s)
    assert Svg.fill(svg.node(2)) != styles.MARKS["error"].fill
    s = step_after(trace, lambda e: isinstance(e, ev.Anomaly))
    svg = draw(trace, tmp_path, "after.svg", step=s)
    assert Svg.fill(svg.node(2)) == styles.MARKS["error"].fill
    assert "nan values" in Svg.flat(svg.node(2))


@needs_dot
def test_hooks_and_captured_grads_are_shown(recorded, tmp_path):
    trace = recorded("hooks")
    hooked = {e.node: e.hook for e in trace.events if isinstance(e, ev.Hook) and e.task == 1}
    assert hooked
    svg = draw(trace, tmp_path, "hooks.svg", task=1)
    for node, kind in hooked.items():
        assert kind in Svg.flat(svg.node(node)).split("hooks: ")[1]
    trace = recorded("grad_subset")
    cap = next(e for e in trace.events if isinstance(e, ev.CapturedGrad))
    svg = draw(trace, tmp_path, "cap.svg", task=cap.task)
    assert f"grad() output {cap.index} captured from input {cap.input_nr}" in Svg.flat(svg.node(cap.node))


@needs_dot
def test_hostile_strings_in_any_field_stay_text(tmp_path):
    """Trace(events) takes events from anywhere: even fields that are numbers in a loaded file
    can hold text here, and must still not inject into DOT or SVG."""
    from tests.synth import TraceBuilder

    b = TraceBuilder()
    a = b.leaf("a")
    m = b.op("MulBackward0", [a, None])
    evil = '</TD></TR></TABLE>> shape=none label=<<B>"x'
    b.backward(m, during={m: lambda tb: tb.emit(ev.Hook, task=1, node=m, hook=evil, name=evil)})
    events = [
        e if not isinstance(e, ev.NodeCreated) else ev.NodeCreated(**{**_fields(e), "sequence_nr": evil})
        for e in b.finish()
    ]
    svg = draw(Trace(events), tmp_path)
    assert set(svg.nodes) == {f"node-{a}", f"node-{m}"}
    text = Svg.flat(svg.node(m))
    assert f"hooks: {evil}" in text and f"seq_nr {evil}" in text


def _fields(e: ev.Event) -> dict:
    from dataclasses import fields

    return {f.name: getattr(e, f.name) for f in fields(e)}


@needs_dot
def test_fixed_layout_marks_devices_by_outline(tmp_path):
    svg = draw(tb.two_devices(), tmp_path, layout="fixed")
    assert "outline = device: cpu blue, virtual:0 green" in svg.title_text()
    strokes = {n: Svg.node_stroke(svg.node(n)) for n in range(1, 6)}
    assert strokes[3] == strokes[4] == styles.DEVICE_COLOURS[1]  # the virtual:0 nodes
    assert strokes[1] == strokes[2] == strokes[5] == styles.DEVICE_COLOURS[0]


@needs_dot
@pytest.mark.parametrize("cut", [0, 3, 12, 20, 30, 41, 50])
def test_traces_cut_anywhere_render(tmp_path, cut):
    """A trace cut short (crash, kill) renders what it has: forward graph or unfinished task."""
    full = tb.diamond()
    trace = Trace(full.events[:cut], truncated=True)
    for pic in render(trace, tmp_path / "cut.svg", step=min(cut, 10)):
        svg = Svg(pic.path)
        assert len(svg.nodes) == pic.boxes


@needs_dot
def test_any_text_in_names_renders_valid_svg(tmp_path):
    """Property: whatever text names, leaf names and sources hold, dot accepts the DOT and
    writes SVG that parses, with one node per graph node."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.synth import TraceBuilder

    # Any character, with the ones that mean something to DOT, HTML, XML or escString made common.
    special = st.sampled_from(list("<>&\"'\\{}|[];#%-=\n\r\t\x00\x1b") + ["\\N", "\\G", "&amp;", "]]>", "-->"])
    text = st.lists(st.one_of(special, st.characters()), max_size=20).map("".join)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(names=st.lists(text, min_size=1, max_size=4), leaf=text, source=text)
    def check(names, leaf, source):
        b = TraceBuilder(argv=(source,))
        prev = b.leaf(leaf or None, source=source)
        for name in names:
            prev = b.op(name, [prev], source=source)
        b.backward(prev)
        trace = b.trace()
        for layout in ("dot", "fixed"):  # full HTML-like labels, and one-line compact labels
            svg = draw(trace, tmp_path, f"p-{layout}.svg", layout=layout)
            assert set(svg.nodes) == {f"node-{n}" for n in trace.nodes}

    check()


@needs_dot
def test_cli_step_and_grads(tmp_path):
    path = _save(tb.diamond(), tmp_path, "d.trace.json")
    result = CliRunner().invoke(main, ["render", str(path), "--step", "42", "--grads", "-o", str(tmp_path / "s.svg")])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "(task 1, 5 nodes, dot)" in result.output
    svg = Svg(tmp_path / "s.svg")
    last = load(path).events[41]
    assert f"state after 42 events (the last: #41 {last.kind})" in svg.title_text()
    assert Svg.fill(svg.node(1)) == _fill("parked")
