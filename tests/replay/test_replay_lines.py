"""A lazily loaded trace folds its line records (gradviz.replay.lines) to the state that its
events fold to, at every step.

The oracle is the eager path: the general reader's events, folded one by one (``Replayer``).
The recordings run every line kind the fold takes as a record (``fastload.FOLD_RAW``): plain,
multi-device (worker threads), reentrant and grad() passes, an error, hooks, and chunks cut at
odd places.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gradviz as torch
from gradviz.replay import lines
from gradviz.replay.state import EngineState, Replayer, fold
from gradviz.trace import fastload
from gradviz.trace.codec_typed import LINES
from gradviz.trace.file import _load_general, load


class Nested(torch.autograd.Function):
    """Its backward runs a backward of its own (reentrant)."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 2.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        with torch.enable_grad():
            y = torch.tensor([1.0], requires_grad=True)
            (y * 3.0).backward(torch.ones(1))
        return g * 2.0


class Fails(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x + 1.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        raise ValueError("no gradient here")


def _scenarios() -> None:
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    w = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    y = x
    for _ in range(12):  # a chain: the engine's chain steps
        y = y * 1.5 + 0.25
    ((w @ y).tanh() * y).sum().backward()
    # across devices: worker threads, their queues, wake-ups
    x.to("virtual:0").to("virtual:1").sum().backward()
    Nested.apply(x.to("virtual:0")).sum().backward()  # reentrant, from a device worker
    Nested.apply(x).sum().backward()  # reentrant on the caller's thread
    # grad() of a part of the graph: exec_info prunes, captures
    a = x * 2.0
    b = (a * a).sum() + (x * 3.0).sum()
    torch.autograd.grad(b, [a], create_graph=True)
    # hooks, a fan-in, accumulation into a leaf from two paths
    h = x * 1.0
    h.register_hook(lambda g: g * 2.0)
    (h.sum() + (x * x).sum() + x.sum()).backward()
    u, v = (x * 2.0).unbind()  # a node of two inputs: its buffer fills slot by slot
    (u * v + u).backward()
    _, w2 = (x * 3.0).unbind()
    (w2 * 2.0).backward()  # its one gradient, into slot 1 of two: ready at once
    _, w3 = (x * 3.0).unbind()  # made first: the lowest sequence_nr, it runs last of the queued
    y2 = x * 5.0
    ((w3 * 2.0) + y2.sum()).backward()  # unbind's buffer (slot 1) waits in the queue while y2's runs
    try:
        Fails.apply(x).sum().backward()
    except ValueError:
        pass


def _grouped(path: Path, out: Path) -> Path:
    """The recording with format 3's other group lines in it, which today's recorder does not
    write (an older gradviz did): each queue_pop and node_begin of a node as one node_pop line,
    each node's end, its gradient handed on to a node that then runs at once, as one chain_step
    line. The same events at the same seqs; a group's members share its first line's ts."""
    head, body = _head_and_body(path)
    text = body.decode()
    end = text.rindex("]}")
    rows = [json.loads(line.rstrip().rstrip(",")) for line in text[:end].splitlines() if line.strip()]
    merged: list[list[Any]] = []
    i = 0
    while i < len(rows):
        r = rows[i]
        nxt = rows[i + 1 : i + 4]
        kinds = [x[0] for x in nxt]
        if r[0] == "node_end" and r[5] == "ok" and kinds == ["gradient_in", "queue_pop", "node_begin"]:
            gi, pop, nb = nxt
            same = {x[2] for x in (r, gi, pop, nb)} == {r[2]} and {r[3], gi[3], pop[5], nb[3]} == {r[3]}
            if (same and gi[5] == r[4] and gi[6] == 0 and pop[6] == nb[4] == gi[4] and pop[7] == "node"
                    and pop[3:5] == gi[14:16] and pop[8] == gi[16]):
                merged.append(["chain_step", r[1], r[2], r[3], r[4], gi[4], *gi[7:14], gi[14], gi[15], gi[16],
                               gi[17], pop[9], nb[5]])
                i += 4
                continue
        if r[0] == "queue_pop" and r[7] == "node" and kinds[:1] == ["node_begin"]:
            nb = nxt[0]
            if nb[2] == r[2] and nb[3] == r[5] and nb[4] == r[6]:
                merged.append(["node_pop", r[1], r[2], r[3], r[4], r[5], r[6], r[8], r[9], nb[5]])
                i += 2
                continue
        merged.append(r)
        i += 1
    lines = ",\n".join(json.dumps(r, separators=(",", ":")) for r in merged)
    out.write_bytes(head + lines.encode() + b"\n]}\n")
    return out


@pytest.fixture(scope="module", params=["recorded", "grouped"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("lines") / "t.trace.json"
    with torch.trace(path):
        _scenarios()
    if request.param == "grouped":
        path = _grouped(path, path.with_name("grouped.trace.json"))
        lazy = load(path, lazy=True)
        kinds = {type(r).__struct_config__.tag for r in lazy.fold_events(len(lazy))
                 if hasattr(r, "__struct_config__")}
        assert lazy._lazy is not None and {"node_pop", "chain_step"} <= kinds
    return path


def _state(s: EngineState) -> tuple:
    queues = {q: (st.device, st.owner, st.name, st.entries, st.pushes, st.pops, st.max_size)
              for q, st in s.queues.items()}
    tasks = {t: {k: getattr(st, k) for k in type(st).__slots__ if k != "_gen"} for t, st in s.tasks.items()}
    return (s.step, s.last, list(s.nodes.items()), s.threads, queues, tasks, s.errors, s.status)


def test_every_kind_the_fold_takes_as_a_line_has_a_fold() -> None:
    assert set(lines.BY_KIND) == set(fastload.FOLD_RAW)
    types = LINES["types"]
    assert all(kind in types for kind in fastload.FOLD_RAW)


@pytest.mark.parametrize("chunk", [1 << 20, 700, 90])
def test_lines_fold_to_the_events_state_at_every_step(recording, monkeypatch, chunk) -> None:
    monkeypatch.setattr(fastload, "CHUNK_BYTES", chunk)
    eager = _load_general(str(recording), *_head_and_body(recording))
    lazy = load(recording, lazy=True)
    assert lazy._lazy is not None
    kinds = {type(r).__struct_config__.tag for r in lazy.fold_events(len(lazy)) if hasattr(r, "__struct_config__")}
    assert {"gradient_in", "node_edges", "node_end"} <= kinds  # records, not events, reached the fold
    want = Replayer(eager, every=7)
    for step in range(len(eager) + 1):
        got = fold(lazy.fold_events(step))
        assert _state(got) == _state(want.state_at(step)), f"step {step}"


def test_the_lines_kept_from_the_check_fold_the_same(recording) -> None:
    eager = _load_general(str(recording), *_head_and_body(recording))
    want = Replayer(eager)
    n = len(eager)
    for step in (1, n // 3, n // 2, n - 1, n):
        kept = load(recording, lazy=True, fold_to=step)
        assert _state(fold(kept.fold_events(step))) == _state(want.state_at(step))


def _head_and_body(path: Any) -> tuple[bytes, bytes]:
    with open(path, "rb") as f:
        return f.readline(), f.read()
