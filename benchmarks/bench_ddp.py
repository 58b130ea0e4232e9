"""What recording a DDP job costs: a 2-rank training (gloo, CPU, loopback) launched plainly by
torchrun against the same job under ``gradviz run --nproc-per-node 2`` (each rank recording torch's
engine, DDP's buckets and the collectives).

Each job is a fresh launch. The program times its own training steps (after two warm-up steps,
GC on) and each rank prints its median step time; a job's number is the slower rank's median (DDP
steps in lockstep). Reported per configuration: the median over jobs and the range (min..max),
the job's wall time (launch and imports included), and the overhead ratio's range.

    python benchmarks/bench_ddp.py [--quick] [--runs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROGRAM = '''
import statistics, sys, time
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

steps, width = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
times = []
for i in range(steps + 2):
    x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
    t0 = time.perf_counter()
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    if i >= 2:
        times.append(time.perf_counter() - t0)
print(f"rank {rank} step_ms {statistics.median(times) * 1e3:.4f}", flush=True)
dist.destroy_process_group()
'''


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job(recorded: bool, folder: Path, steps: int, width: int, again: bool = True) -> tuple[float, float]:
    """(slowest rank's median step in ms, the job's wall seconds)."""
    port = _port()
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}
    prog = ["ddp_bench.py", str(steps), str(width)]
    if recorded:
        cmd = [sys.executable, "-m", "gradviz", "run", "--nproc-per-node", "2", "-o", "b.trace.json", *prog]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
               "--master-port", str(port), *prog]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if again and p.returncode != 0 and "terminate called without an active exception" in p.stderr:
        # gloo's teardown aborts a rank now and then, recorded or not (tests/_ddp.py's sh): the
        # job once more, on a fresh port
        return _job(recorded, folder, steps, width, again=False)
    if p.returncode != 0:
        raise SystemExit(f"bench_ddp: the {'recorded' if recorded else 'plain'} job failed:\n{p.stderr[-2000:]}")
    steps_ms = [float(v) for v in re.findall(r"rank \d+ step_ms ([0-9.]+)", p.stdout)]
    if len(steps_ms) != 2:
        raise SystemExit(f"bench_ddp: expected two ranks' step times, got {p.stdout!r}")
    return max(steps_ms), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one job each, few steps (a smoke run)")
    ap.add_argument("--runs", type=int, default=3, help="jobs per configuration (default 3)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = ap.parse_args()
    runs = 1 if a.quick else a.runs
    steps, width = (5, 64) if a.quick else (30, 256)
    results: dict[str, dict[str, list[float]]] = {"plain": {"step_ms": [], "wall_s": []},
                                                  "recorded": {"step_ms": [], "wall_s": []}}
    with tempfile.TemporaryDirectory(prefix="gradviz-bench-ddp-") as d:
        folder = Path(d)
        (folder / "ddp_bench.py").write_text(PROGRAM)
        for _ in range(runs):  # alternate, so that a busy moment of the machine hits both
            for name in ("plain", "recorded"):
                step, wall = _job(name == "recorded", folder, steps, width)
                results[name]["step_ms"].append(step)
                results[name]["wall_s"].append(wall)
    ratios = [r / p for r in results["recorded"]["step_ms"] for p in results["plain"]["step_ms"]]
    print(f"2-rank DDP training, gloo on CPU, {steps} timed steps, width {width}, {runs} job(s) each\n")
    print("| workload | step median (ms) | step range (ms) | job wall median (s) | wall range (s) |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        s, w = r["step_ms"], r["wall_s"]
        print(f"| {name} | {statistics.median(s):.3f} | {min(s):.3f}..{max(s):.3f} | "
              f"{statistics.median(w):.2f} | {min(w):.2f}..{max(w):.2f} |")
    print(f"\nrecording overhead per step: {statistics.median(ratios):.2f}x "
          f"(range {min(ratios):.2f}x..{max(ratios):.2f}x over job pairs)")
    if a.json:
        Path(a.json).write_text(json.dumps({"bench": "ddp", "quick": a.quick, "steps": steps, "width": width,
                                            "results": results, "overhead": {"median": statistics.median(ratios),
                                            "min": min(ratios), "max": max(ratios)}}, indent=2))


if __name__ == "__main__":
    main()
