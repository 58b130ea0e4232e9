"""Replay benchmark: the state at random steps of a 1,000,000-event trace.

    python benchmarks/bench_replay.py [--events N] [--samples K] [--keep FILE]

Writes a synthetic trace (training steps over a layered graph, see
``tests.synth.synthetic_trace``) to a file, loads it the way the CLI does, builds the
replayer (one fold over every event, keeping checkpoints), then asks for the state at K random
steps. Prints each phase's time and fails (exit 1) if any random step takes a second or more.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout: tests.synth

from gradviz.replay.state import Replayer  # noqa: E402
from gradviz.trace.file import load, save  # noqa: E402
from tests.synth import synthetic_trace  # noqa: E402

LIMIT_S = 1.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="trace length (default 1,000,000)")
    ap.add_argument("--samples", type=int, default=200, help="random steps to time (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="random seed for the steps")
    ap.add_argument("--keep", metavar="FILE", help="write the trace here and keep it")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    trace = synthetic_trace(args.events)
    gen_s = time.perf_counter() - t
    path = args.keep or os.path.join(tempfile.mkdtemp(prefix="gradviz-bench-"), "synthetic.trace.json")
    t = time.perf_counter()
    save(trace.events, path)
    save_s = time.perf_counter() - t
    size_mb = os.path.getsize(path) / 1e6
    del trace

    t = time.perf_counter()
    trace = load(path)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    replayer = Replayer(trace)
    index_s = time.perf_counter() - t

    rng = random.Random(args.seed)
    steps = [rng.randrange(len(trace) + 1) for _ in range(args.samples)]
    times = []
    for n in steps:
        t = time.perf_counter()
        s = replayer.state_at(n)
        times.append(time.perf_counter() - t)
        assert s.step == n
    # Stepping backward one event at a time from a random point: as cheap as forward.
    back = []
    n = rng.randrange(len(trace) // 2, len(trace))
    for k in range(50):
        t = time.perf_counter()
        replayer.state_at(n - k)
        back.append(time.perf_counter() - t)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"trace: {len(trace):,} events, {len(trace.nodes):,} nodes, {len(trace.tasks):,} tasks, "
          f"{size_mb:.0f} MB on disk ({path})")
    print(f"generate {gen_s:.2f}s  save {save_s:.2f}s")
    print(f"load (gradviz.trace.file.load): {load_s:.2f}s")
    print(f"replayer build (one fold, a checkpoint every {replayer.every} events, "
          f"{len(replayer._checkpoints)} checkpoints): {index_s:.2f}s")
    print(f"state at {args.samples} random steps: median {statistics.median(times) * 1e3:.1f} ms, "
          f"p99 {sorted(times)[int(len(times) * 0.99) - 1] * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms")
    print(f"stepping backward one event at a time: max {max(back) * 1e3:.1f} ms")
    print(f"peak RSS {rss_mb:.0f} MB")
    if max(times) >= LIMIT_S:
        print(f"FAIL: a random step took {max(times):.2f}s (limit {LIMIT_S}s)", file=sys.stderr)
        return 1
    print(f"OK: every random step under {LIMIT_S:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
