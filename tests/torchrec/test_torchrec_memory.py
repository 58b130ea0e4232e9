"""The torch recorder holds no user graph: a training loop recorded for many steps frees each
step's graph and activations as it would unrecorded, and the recorder's own tables stay the size
of one step."""

from __future__ import annotations

import gc
import weakref

import torch  # a differential test: fails, never skips, without torch

from gradviz.torchrec import record
from gradviz.trace import events as ev


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, refs: list[weakref.ref]) -> None:
    x = torch.randn(16, 32)
    h = model[0](x)
    refs.append(weakref.ref(h))  # an activation the graph saves (ReLU saves its output's input)
    loss = model[2](model[1](h)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_long_loop_frees_every_step_while_recording() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    refs: list[weakref.ref] = []
    with record() as rec:
        _step(model, opt, refs)
        gc.collect()
        src = rec._source
        after_one = len(rec._nodes), len(src._lines), len(src._leaves), len(src._kept)
        for _ in range(40):
            _step(model, opt, refs)
        gc.collect()
        # every step's activation is gone while the recording goes on
        assert all(r() is None for r in refs)
        # the tables hold the four parameters' nodes and ids, not 41 steps' nodes
        assert (len(rec._nodes), len(src._lines), len(src._leaves), len(src._kept)) == after_one
        assert len(rec._nodes) == 4
    tasks = [e for e in rec.trace.events if type(e) is ev.TaskBegin]
    assert len(tasks) == 41
    # a parameter keeps one node id and one tensor id over all steps
    acc = [e for e in rec.trace.events if type(e) is ev.NodeCreated and e.name == "AccumulateGrad"]
    assert len(acc) == 4
    updates = {(e.node, e.tensor) for e in rec.trace.events if type(e) is ev.AccumulateGradUpdate}
    assert len(updates) == 4


def test_retained_graph_keeps_its_ids() -> None:
    """retain_graph=True: the graph may run again, so the second backward names the same nodes."""
    w = torch.randn(3, requires_grad=True)
    loss = (w * 2).exp().sum()
    with record() as rec:
        loss.backward(retain_graph=True)
        loss.backward()
    begun = [[e.node for e in rec.trace.events if type(e) is ev.NodeBegin and e.task == t] for t in (1, 2)]
    assert begun[0] == begun[1] and len(begun[0]) == 4
    assert sum(type(e) is ev.NodeCreated for e in rec.trace.events) == 4


def test_saved_tensors_keep_torch_inplace_check() -> None:
    """Why the recorder does not watch saved tensors through saved_tensors_hooks: with any such
    hook registered, torch stops checking that a saved tensor was not modified in place (shown
    here on torch itself), so a recorded program that torch would stop with an error would run on
    with wrong gradients. Recording keeps the check: saved tensors are read from the nodes'
    _saved_* attributes (shapes only) and their release is derived."""

    def modified_saved_tensor_raises() -> bool:
        a = torch.randn(5, requires_grad=True)
        b = a * 1
        z = b.sin().sum()  # SinBackward0 saves b
        b.add_(1)
        try:
            z.backward()
        except RuntimeError as e:
            assert "modified by an inplace operation" in str(e)
            return True
        return False

    assert modified_saved_tensor_raises()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert not modified_saved_tensor_raises()  # torch's check is gone under any pack hook
    with record() as rec:
        assert modified_saved_tensor_raises()
    assert [e.type for e in rec.trace.events if type(e) is ev.Error] == ["RuntimeError"]


def test_saved_shapes_observed_release_derived() -> None:
    from gradviz.trace.provenance import derived_seqs

    a = torch.randn(5, requires_grad=True)
    with record() as rec:
        (a * 1).sin().sum().backward()
    t = rec.trace
    made = next(e for e in t.events if type(e) is ev.NodeCreated and e.name == "SinBackward0")
    assert made.saved == ((5,),) and made.seq not in derived_seqs(t)
    released = [e for e in t.events if type(e) is ev.SavedRelease and e.node == made.node]
    assert len(released) == 1 and released[0].seq in derived_seqs(t)


def test_leaf_roots_keep_sequence_numbers() -> None:
    """A leaf as root (v.backward(g), grad(v, v)) or an input grad() cannot reach: the recorder
    takes no sequence number from torch's counter (get_gradient_edge would), and a captured-only
    leaf never shows as run."""

    def seqs(recorded: bool) -> tuple[list[int], list[str]]:
        v = torch.randn(2, requires_grad=True)
        u = torch.randn(2, requires_grad=True)
        out: list[int] = []
        rec = record().start() if recorded else None
        try:
            out.append((v * 1).grad_fn._sequence_nr())
            v.backward(torch.ones(2))
            out.append((v * 1).grad_fn._sequence_nr())
            torch.autograd.grad((v * 2).sum(), [v, u], allow_unused=True)
            torch.autograd.grad(v, v, torch.ones(2))
            out.append((v * 1).grad_fn._sequence_nr())
        finally:
            if rec is not None:
                rec.stop()
        kinds = [] if rec is None else [type(e).__name__ for e in rec.trace.events if type(e) is ev.NodeBegin]
        return [s - out[0] for s in out], kinds

    plain, _ = seqs(False)
    recorded, begun = seqs(True)
    assert recorded == plain
    assert len(begun) == 1 + 2  # v's AccumulateGrad, then SumBackward0 and MulBackward0; not grad(v, v)'s
