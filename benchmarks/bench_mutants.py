"""1,000 mutated traces x every command (issue 18's must-show item): no traceback, no hang,
memory bounded.

Each mutant changes one integer of one event of a small trace (tests/mutants.py: every integer
field, and every integer inside a tuple field, of every event kind, set to -1, 0, 10**9, 2**62
or an unknown id); ``--count`` of them, drawn at random from all 7,540, each run through info,
render, render --step, replay, replay --step and export (a mutant the loader refuses: through
info, as every command loads the same way). The commands run in one subprocess capped at 2 GB
of address space (RLIMIT_AS), each run at 20 s. The suite runs one mutant per (kind, field,
value): tests/trace/test_trace_validate.py.

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
    ap.add_argument("--all", action="store_true", help="every mutant (7,540), not a random --count")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "result.json"
        pick = ["--all"] if args.all else ["--seed", str(args.seed), "--limit", str(args.count)]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        t = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "tests" / "mutants.py"), str(out), *pick], env=env,
                       preexec_fn=mutants.capped, check=True)  # fmt: skip
        result = json.loads(out.read_text())
    result["seconds"] = time.perf_counter() - t
    print(f"{result['mutants']} mutants, {result['runs']} command runs ({result['refused']} mutants refused by "
          f"the loader with a one-line error), {len(result['failures'])} failures, {result['seconds']:.0f} s")
    for f in result["failures"][:20]:
        print("  " + f[:400])
    return result


if __name__ == "__main__":
    main()
