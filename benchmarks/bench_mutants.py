"""Mutated traces x every trace-reading command (issue 18's and issue 33's must-show item): no
traceback, no hang, memory bounded.

Each mutant changes one value of one event of a small trace (tests/mutants.py): every integer
field, and every integer inside a tuple field, of every event kind, set to -1, 0, 10**9, 2**62,
10**400 or an unknown id; every string set to rich markup, a lone surrogate, a terminal control
sequence or an emoji code; every float of a gradient's statistics set to an integer too large
for a float. ``--count`` of them, drawn at random from all 11,340 (``--all``: every one), each
run through info, info --json, diff (the mutant first, then second, against the unchanged
trace), render, render --step, replay, replay --step and export (a mutant the loader refuses:
through info and diff, as every command loads the same way). The commands run in one
subprocess capped at 2 GB of address space (RLIMIT_AS), each run at 20 s. The suite runs one
mutant per (kind, field, value): tests/trace/test_trace_validate.py.

    python benchmarks/bench_mutants.py [--count 1000] [--seed 18] [--all]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import mutants  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--all", action="store_true", help="every mutant (11,340), not a random --count")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "result.json"
        pick = ["--all"] if args.all else ["--seed", str(args.seed), "--limit", str(args.count)]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        t = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "tests" / "mutants.py"), str(out), *pick], env=env,
                       preexec_fn=mutants.capped, check=True)
        result = json.loads(out.read_text())
    result["seconds"] = time.perf_counter() - t
    print(f"{result['mutants']} mutants, {result['runs']} command runs ({result['refused']} mutants refused by "
          f"the loader with a one-line error), {len(result['failures'])} failures, {result['seconds']:.0f} s")
    for f in result["failures"][:20]:
        print("  " + f[:400])
    return result


if __name__ == "__main__":
    main()
