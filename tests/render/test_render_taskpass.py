"""render's task pass on a lazily loaded trace (fastload.Index.iter_task_events): the node_begin,
node_end and gradient_in lines handed over as fields give the same model as the events do."""

from __future__ import annotations

import pytest
from trace_builders import diamond, failing, pruned, reentrant, two_devices

import gradviz as torch
from gradviz.render import model as gm
from gradviz.trace import events as ev
from gradviz.trace import fastload, load
from gradviz.trace.file import save


class _Sink:
    """Records what iter_task_events hands over, as the events it stands for would read."""

    def __init__(self, out):
        self.out = out

    def begin(self, seq, tid, task, node):
        self.out.append(("node_begin", seq, tid, task, node))

    def end(self, seq, tid, task, node, status):
        self.out.append(("node_end", seq, tid, task, node, status))

    def add(self, seq, task, node, producer, slot, shape, norm, bad):
        self.out.append(("buffer_add", seq, task, node, producer, slot, shape, norm, bad))


def _as_fields(e):
    if type(e) is ev.NodeBegin:
        return ("node_begin", e.seq, e.tid, e.task, e.node)
    if type(e) is ev.NodeEnd:
        return ("node_end", e.seq, e.tid, e.task, e.node, e.status)
    if type(e) is ev.BufferAdd:
        st = e.stats
        return ("buffer_add", e.seq, e.task, e.node, e.producer, e.slot, e.shape, None if st is None else st.norm,
                st is not None and (st.nan > 0 or st.inf > 0))
    return e


def _nan_recording(path):
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    y = x
    for _ in range(12):
        y = y * 1.5 + 0.25
    z = (y.sqrt() * y).sum() + y.sum()  # sqrt of negatives: NaN gradients
    with torch.trace(path):
        z.backward()
    return path


def _models_match(a, b):
    assert a.status == b.status and a.roots == b.roots
    assert list(a.nodes.items()) == list(b.nodes.items())
    assert a.edges == b.edges


@pytest.mark.parametrize("make", [diamond, reentrant, two_devices, pruned, failing, lambda: failing(nan=True)])
@pytest.mark.parametrize("chunk", [1 << 20, 200])
def test_the_task_pass_from_lines_is_the_pass_from_events(tmp_path, monkeypatch, make, chunk):
    monkeypatch.setattr(fastload, "CHUNK_BYTES", chunk)
    path = tmp_path / "t.json"
    save(make().events, path)
    eager, lazy = load(path), load(path, lazy=True)
    _assert_task_pass_matches(eager, lazy)


def _assert_task_pass_matches(eager, lazy):
    assert lazy._lazy is not None and eager._lazy is None
    n = len(eager)
    for start, stop in [(0, None), (3, n - 2), (n // 2, n // 2 + 5), (1, 2)]:
        got: list = []
        sink = _Sink(got)
        for e in lazy._lazy.iter_task_events(start, stop, gm._APPLIED, sink):
            got.append(_as_fields(e))  # (a buffer_add line of its own stays an event)
        want = [_as_fields(e) for e in eager.events[start:stop] if type(e) in gm._APPLIED]
        assert got == want, (start, stop)
    for task in eager.tasks:
        _models_match(gm.build(lazy, task, grads=True), gm.build(eager, task, grads=True))


def test_a_recordings_gradient_in_lines_hand_over_the_fields_of_their_buffer_add(tmp_path):
    """A recording's gradient_in lines (which saved events are not written as): NaN stats, and
    one-element gradients of either sign (a line's stats are then the value alone)."""
    path = _nan_recording(tmp_path / "nan.json")
    eager, lazy = load(path), load(path, lazy=True)
    assert any(type(e) is ev.BufferAdd and e.stats is not None and e.stats.nan for e in eager.events)
    _assert_task_pass_matches(eager, lazy)
    x = torch.tensor([2.0], requires_grad=True)
    y = x
    for _ in range(6):
        y = y * -1.5
    with torch.trace(tmp_path / "signs.json"):
        y.backward()
    eager, lazy = load(tmp_path / "signs.json"), load(tmp_path / "signs.json", lazy=True)
    assert any(type(e) is ev.BufferAdd and e.stats is not None and e.stats.min < 0 for e in eager.events)
    _assert_task_pass_matches(eager, lazy)


def test_a_recording_with_nan_gradients_draws_the_same_lazily(tmp_path):
    path = _nan_recording(tmp_path / "nan.json")
    eager, lazy = load(path), load(path, lazy=True)
    assert lazy._lazy is not None
    for task in eager.tasks:
        a, b = gm.build(lazy, task, grads=True), gm.build(eager, task, grads=True)
        _models_match(a, b)
        assert any(e.grad is not None for e in a.edges)


@pytest.mark.parametrize("chunk", [1 << 20, 200])
def test_the_nodes_read_from_the_lines_kept_for_a_fold_are_the_nodes(tmp_path, monkeypatch, chunk):
    """render --step reads Trace.nodes before the fold, from the line records the check kept."""
    monkeypatch.setattr(fastload, "CHUNK_BYTES", chunk)
    path = _nan_recording(tmp_path / "nan.json")
    eager = load(path)
    for step in (0, len(eager) // 3, len(eager)):
        kept = load(path, lazy=True, fold_to=step)
        assert kept._lazy is not None and (step == 0 or kept._lazy.records)
        assert kept.nodes == eager.nodes and list(kept.nodes) == list(eager.nodes)
        assert list(kept.fold_events(step)) == list(load(path, lazy=True).fold_events(step))  # left for the fold
