"""What recording the forward side costs (issue 28, `gradviz why`'s events: forward_op,
version_bump, grad_mode, grad_reset, detach, backward_call, tensor_at_end): the corpus's training
programs recorded with ``gradviz run`` with the forward side (the default) and without it
(``GRADVIZ_FORWARD=0``), on each engine. Goal: at most 2× the recording without it.

Each run is its own process (each engine, each mode); the time is the recording's own, from the
trace (its trace_end's ts: from the recording's start to its end, the script's work included,
the interpreter's start and imports not). Medians over runs, the range beside them; GC on.

    python benchmarks/bench_forward.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus" / "programs"
# Training programs of the corpus: a model, a loss, an optimizer, a loop of steps.
PROGRAMS = ["examples_regression.py", "tutorial_polynomial_nn.py", "tutorial_polynomial_optim.py",
            "basics_optimization.py", "makemore_part2_mlp.py"]
ENGINES = ["gradviz", "torch"]


def record_ms(prog: Path, engine: str, forward: bool, tmp: Path) -> float | None:
    """The recording's time in ms (None if the program did not record)."""
    out = tmp / f"{prog.stem}.{engine}.{int(forward)}.json"
    env = {**os.environ, "GRADVIZ_FORWARD": "1" if forward else "0", "PYTHONHASHSEED": "0"}
    subprocess.run([sys.executable, "-m", "gradviz", "run", "--engine", engine, "-o", str(out), str(prog)],
                   cwd=tmp, env=env, capture_output=True, timeout=600, check=False)
    if not out.exists():
        return None
    sys.path.insert(0, str(REPO))
    import gradviz

    t = gradviz.load(out)
    if t.end is None or t.status != "ok":
        return None
    return t.end.ts / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="two programs, two runs")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    programs = PROGRAMS[:2] if args.quick else PROGRAMS
    runs = 2 if args.quick else args.runs
    tmp = Path(tempfile.mkdtemp(prefix="gradviz-bench-forward-"))
    print(f"{'program':34} {'engine':8} {'without (ms)':>18} {'with (ms)':>18} {'ratio':>6}")
    worst = 0.0
    try:
        for name in programs:
            prog = CORPUS / name
            for engine in ENGINES:
                times: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(runs):
                    for fwd in (False, True):  # interleaved: drift of the machine hits both alike
                        ms = record_ms(prog, engine, fwd, tmp)
                        if ms is not None:
                            times[fwd].append(ms)
                if not times[False] or not times[True]:
                    print(f"{name:34} {engine:8} {'(did not record)':>18}")
                    continue
                off, on = statistics.median(times[False]), statistics.median(times[True])
                ratio = on / off
                worst = max(worst, ratio)
                rng = lambda xs: f"{min(xs):.0f}-{max(xs):.0f}"  # noqa: E731
                print(f"{name:34} {engine:8} {off:8.0f} ({rng(times[False]):>8}) {on:8.0f} ({rng(times[True]):>8})"
                      f" {ratio:5.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"worst ratio {worst:.2f}x (goal: at most 2x)")


if __name__ == "__main__":
    main()
