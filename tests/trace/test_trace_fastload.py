"""load(lazy=True) and the line scan behind every load of a clean file (gradviz.trace.fastload,
issue 18 item 9): the same outcome as the general reader for every file, good or damaged, and
the same events, counts, graph, folds and pictures for the commands that read lazily."""

from __future__ import annotations

import warnings

import pytest
from click.testing import CliRunner
from mutants import sample_mutants
from trace_builders import diamond, reentrant, two_devices

import gradviz as torch
from gradviz.cli import main
from gradviz.render import model as gm
from gradviz.replay.state import Replayer, fold
from gradviz.trace import TraceError, fastload, load
from gradviz.trace import file as trace_file
from gradviz.trace.file import save


def _general(path):
    """The general reader alone (no line scan)."""
    with open(path, "rb") as f:
        first = f.readline()
        data = f.read()
    return trace_file._load_general(str(path), first, data)


def _outcome(read, path):
    """What a reader makes of a file: its error, or what a lazy Trace answers before its events are
    made (then the events), and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t = read(path)
            got = ("ok", len(t), list(t.kinds.items()), list(t.events_by_thread.items()), t.runs_by_task,
                   t.node_names, t.node_tensors, t.truncated, t.header, t.end, t.duration_ns, t.n_edges,
                   list(t.threads), list(t.tasks), list(t.tensors), list(t.queues), t.errors, t.nodes,
                   t.head(3), list(t.iter_events(2, 9)), t.events)
        except TraceError as e:
            got = ("error", str(e))
    return got, [str(w.message) for w in caught]


def test_every_sample_mutant_gets_the_general_readers_outcome(tmp_path):
    """One mutant per event kind, field and value (tests/mutants.py): the lazy load's error or
    warning is the general reader's, and what it counts is what the events say."""
    path = tmp_path / "m.json"
    fast = 0
    for desc, evs in sample_mutants():
        save(evs, path)
        lazy = _outcome(lambda p: load(p, lazy=True), path)
        assert lazy == _outcome(_general, path), desc
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fast += load(path, lazy=True)._lazy is not None
            except TraceError:
                pass
    assert fast > 100  # the clean ones went the fast way


def _recording(path):
    x = torch.tensor([1.5], requires_grad=True)
    w = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    y = x
    for _ in range(30):
        y = y * 1.5 + 0.25
    z = ((w @ torch.tensor([1.0, 2.0])).tanh() * y).sum() + y.sum()
    with torch.trace(path):
        z.backward()
    return path


@pytest.mark.parametrize("chunk", [1 << 20, 300, 90])
def test_a_recording_reads_the_same_lazily_in_any_chunks(tmp_path, monkeypatch, chunk):
    path = _recording(tmp_path / "t.json")
    monkeypatch.setattr(fastload, "CHUNK_BYTES", chunk)
    eager, lazy = _general(path), load(path, lazy=True)
    assert lazy._lazy is not None
    assert _outcome(lambda p: load(p, lazy=True), path) == _outcome(_general, path)
    assert lazy.nodes == eager.nodes and list(lazy.nodes) == list(eager.nodes)
    types = gm._APPLIED
    assert list(lazy.iter_events(7, None, types)) == [e for e in eager.events[7:] if type(e) in types]
    checkpoints = Replayer(eager, every=5)
    for step in range(len(eager) + 1):
        s = fold(lazy.fold_events(step))
        want = checkpoints.state_at(step)
        assert s.step == want.step and s.last == want.last
        assert list(s.nodes.items()) == list(want.nodes.items()) and s.threads == want.threads
        if step % 7 == 0:  # the lines kept decoded from the check fold the same, once or again
            kept = load(path, lazy=True, fold_to=step)
            for _ in range(2):
                k = fold(kept.fold_events(step))
                assert k.step == s.step and k.last == s.last and list(k.nodes.items()) == list(s.nodes.items())


@pytest.mark.parametrize("chunk", [1 << 20, 300, 90])
def test_head_decodes_the_first_lines_alone_and_gives_the_first_events(tmp_path, monkeypatch, chunk):
    """Trace.head(n) of a lazy trace reads its first n lines only (falling back to the chunk's
    events when the first chunk holds fewer): the first n events, as the general reader's."""
    path = _recording(tmp_path / "t.json")
    monkeypatch.setattr(fastload, "CHUNK_BYTES", chunk)
    eager = _general(path)
    for n in range(len(eager) + 3):
        lazy = load(path, lazy=True)
        assert lazy.head(n) == eager.events[:n]
        assert lazy._lazy is not None  # (and the events were not all made for it)


@pytest.mark.parametrize("make", [diamond, reentrant, two_devices])
def test_render_step_folds_from_the_kept_lines_before_building_its_model(tmp_path, monkeypatch, make):
    """render --step loads with fold_to: the fold reads the check's decoded lines (and frees them)
    before the model's boxes are made beside them, and the picture is the general reader's."""
    from gradviz.render import dot_source

    path = tmp_path / "t.json"
    events = make().events
    save(events, path)
    step = len(events) // 2
    kept = load(path, lazy=True, fold_to=step)
    assert kept._lazy.records
    build, held = gm.build, []
    monkeypatch.setattr(gm, "build", lambda *a, **k: (held.append(len(kept._lazy.records)), build(*a, **k))[1])
    got = dot_source(kept, step=step, max_nodes=4)
    assert held == [0]  # read once, by the fold, and let go before the model
    assert got == dot_source(_general(path), step=step, max_nodes=4)


@pytest.mark.parametrize("make", [diamond, reentrant, two_devices])
def test_commands_print_the_same_from_a_lazy_load(tmp_path, monkeypatch, make):
    """info, replay --step and render --step (which load lazily) against the general reader."""
    path = tmp_path / "t.json"
    events = make().events
    save(events, path)
    step = str(len(events) // 2)
    dot = str(tmp_path / "g.dot")
    runs = (["info", str(path), "--json"], ["replay", str(path), "--step", step, "--width", "120"],
            ["render", str(path), "--step", step, "--format", "dot", "-o", dot, "--max-nodes", "4"])
    fast = []
    for args in runs:
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        fast.append(r.output + ((tmp_path / "g.dot").read_text() if args[0] == "render" else ""))
    monkeypatch.setattr(fastload, "available", lambda: False)
    for args, want in zip(runs, fast):
        r = CliRunner().invoke(main, args)
        assert r.output + ((tmp_path / "g.dot").read_text() if args[0] == "render" else "") == want
