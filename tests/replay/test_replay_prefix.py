"""replay --step N reads a finished trace only up to step N (``load(prefix=True)``): the same
output as reading all of it, the file's own event count in the header, and nothing after N
read at all (a line damaged there is not seen; one before N is, as always)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradviz as torch
from gradviz.cli import main
from gradviz.trace import fastload
from gradviz.trace.file import load


def _record(path: Path) -> Path:
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    with torch.trace(path):
        for _ in range(3):  # three backward passes: tasks begun after a step are not read
            y = x
            for _ in range(15):
                y = y * 1.5 + 0.25
            (y.tanh() * y).sum().backward()
        x.to("virtual:0").sum().backward()
    return path


@pytest.fixture()
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastload, "CHUNK_BYTES", 600)  # many chunks: a prefix stops well short


def _replay(path: Path, step: int) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["replay", str(path), "--step", str(step), "--width", "100"])
    return r.exit_code, r.output


def _whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every load reads all of the file, as before prefixes."""
    scan = fastload.scan

    def whole(data: bytes, keep_events: bool, records_to: int = 0, prefix_to: int = 0, **kw: object) -> object:
        return scan(data, keep_events, records_to, **kw)

    monkeypatch.setattr(fastload, "scan", whole)


def test_a_prefix_is_the_steps_before_n_and_the_total_is_the_files(tmp_path, small_chunks) -> None:
    path = _record(tmp_path / "t.json")
    full = load(path, lazy=True)
    n = len(full)
    for step in (1, 40, n // 2, n - 3):
        t = load(path, lazy=True, fold_to=step, prefix=True)
        assert step <= len(t) < n and t.total_events == n
        assert list(t.iter_events(0, step)) == list(full.iter_events(0, step))
    whole = load(path, lazy=True, fold_to=n, prefix=True)
    assert len(whole) == whole.total_events == n


def test_replay_step_prints_what_reading_all_of_it_prints(tmp_path, small_chunks, monkeypatch) -> None:
    path = _record(tmp_path / "t.json")
    n = len(load(path, lazy=True))
    steps = [1, 2, 17, 40, n // 3, n // 2, n - 1, n, n + 1]
    got = [_replay(path, s) for s in steps]
    _whole(monkeypatch)
    want = [_replay(path, s) for s in steps]
    assert got == want
    assert got[0][0] == 0 and f"step 1 of {n}" in got[0][1]
    assert got[-1][0] != 0 and "out of range" in got[-1][1]


def _damage_line(path: Path, out: Path, at: float) -> int:
    """A copy with the queue_pop line at fraction ``at`` of the file naming a node that never
    existed; returns the seq of its event."""
    head, *lines = path.read_bytes().split(b"\n")
    pops = [i for i, line in enumerate(lines) if line.startswith(b'["queue_pop"')]
    i = pops[int(len(pops) * at)]
    row = json.loads(lines[i].rstrip(b","))
    row[6] = 10**9  # the node
    lines[i] = json.dumps(row, separators=(",", ":")).encode() + b","
    out.write_bytes(b"\n".join([head, *lines]))
    seq = 0
    t = load(path, lazy=True)
    for seq, e in enumerate(t.iter_events()):
        if e.kind == "queue_pop" and e.ts == row[1] and e.tid == row[2]:
            return seq
    raise AssertionError("no such pop")


def test_a_line_damaged_after_step_n_is_not_read_one_before_is(tmp_path, small_chunks) -> None:
    path = _record(tmp_path / "t.json")
    bad = tmp_path / "bad.json"
    seq = _damage_line(path, bad, 0.9)
    code, out = _replay(bad, seq // 2)
    assert code == 0 and f"step {seq // 2} of" in out
    assert _replay(path, seq // 2) == (code, out)  # the same state as the undamaged file's
    for args in (["info", str(bad)], ["replay", str(bad), "--step", str(seq + 1)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 1 and r.output.startswith("Error: ") and r.output.count("\n") == 1, r.output
