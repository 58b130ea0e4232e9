"""Real public DDP programs (tests/corpus/ddp/, shrunk to CPU and gloo) recorded on two ranks:
each rank's trace holds DDP's buckets and collectives, and the programs print what they print
without recording (their parameters' checksums included)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from gradviz.replay.ranks import mismatches, ranks
from gradviz.trace import events as ev
from gradviz.trace import load
from gradviz.trace.ddp import of_kind
from tests._ddp import free_port, job_env, sh, torchrun

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ddp"
PROGRAMS = {
    "examples_ddp_example.py": [],
    "tutorial_ddp_checkpoint.py": [],
    "examples_multigpu_torchrun.py": ["2", "1", "--batch_size", "8"],
}


def _checksums(out: str) -> list[str]:
    # the ranks share one pipe: a line of one may run into another's, so the value is matched exactly
    return sorted(re.findall(r"rank \d+ (?:\w+ )?checksum -?0x[0-9a-f.]+p[+-]\d+", out))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ddp_corpus_program_recorded_per_rank(name: str, tmp_path: Path) -> None:
    shutil.copy(CORPUS / name, tmp_path / name)
    args = PROGRAMS[name]
    port = free_port()
    plain = sh([*torchrun(2, port), name, *args], tmp_path, job_env(port))
    assert plain.returncode == 0, plain.stderr[-3000:]
    for leftover in ("snapshot.pt", "model.checkpoint"):  # the plain run's files would change the recorded one
        (tmp_path / leftover).unlink(missing_ok=True)
    rec = sh([sys.executable, "-m", "gradviz", "run", "--nproc-per-node", "2", name, *args], tmp_path, job_env())
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert _checksums(rec.stdout) == _checksums(plain.stdout) and _checksums(plain.stdout)
    stem = name.removesuffix(".py")
    traces = [load(tmp_path / f"{stem}.rank{r}.trace.json") for r in (0, 1)]
    for r, t in enumerate(traces):
        assert t.header.rank == r and t.header.world_size == 2
        assert of_kind(t, ev.DistInit)[0].backend == "gloo"
        assert of_kind(t, ev.BucketReady) and of_kind(t, ev.CollectiveBegin) and of_kind(t, ev.CollectiveEnd)
        assert of_kind(t, ev.AccumulateGradUpdate)
    assert mismatches(ranks(traces)) == []
