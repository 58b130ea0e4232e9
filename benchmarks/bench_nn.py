"""Issue 13's training-step benchmark: gradviz.nn against torch.nn, batch 64.

- mlp: Linear(784, 256)-ReLU-Linear(256, 128)-ReLU-Linear(128, 10), cross-entropy (claim: <= 1.1x).
- conv: Conv2d(1, 8, 3, p=1)-ReLU-MaxPool2d(2)-Conv2d(8, 16, 3, p=1)-ReLU-MaxPool2d(2)-Linear(784, 10)
  on 28x28 images, cross-entropy (claim: <= 3x).

A step is forward, backward and a plain SGD update (``p -= lr * grad`` under no_grad, the same
on both sides, so the optimizer package is not what is measured). Each engine runs in its own
process (``--worker``), with one BLAS thread and the garbage collector on; the processes
alternate round by round and the medians of each step's process CPU time are compared. For the
conv net it also records where gradviz's time goes, by op, with cProfile.

    python benchmarks/bench_nn.py              # both workloads, results/nn.json
    python benchmarks/bench_nn.py --quick      # fewer steps (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
CLAIMS = {"mlp": 1.1, "conv": 3.0}


def _model(T, kind):  # noqa: ANN001 - torch or gradviz
    nn = T.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))  # fmt: skip


def _step_fn(engine: str, kind: str):  # noqa: ANN202
    import numpy as np

    if engine == "torch":
        import torch as T

        T.set_num_threads(1)
    else:
        sys.path.insert(0, str(BENCH_DIR.parent))
        import gradviz as T
    rng = np.random.default_rng(0)
    net = _model(T, kind)
    shape = (64, 784) if kind == "mlp" else (64, 1, 28, 28)
    x = T.tensor(rng.standard_normal(shape).astype(np.float32))
    y = T.tensor(rng.integers(0, 10, 64))
    params = list(net.parameters())
    loss_fn = T.nn.CrossEntropyLoss()

    def step() -> None:
        for p in params:
            p.grad = None
        loss_fn(net(x), y).backward()
        with T.no_grad():
            for p in params:
                p.sub_(p.grad * 0.01)

    return step


def worker(engine: str, kind: str, steps: int, profile: bool) -> None:
    step = _step_fn(engine, kind)
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        t = time.process_time()
        step()
        times.append(time.process_time() - t)
    out: dict = {"times": times}
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(steps):
            step()
        prof.disable()
        stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        rows = sorted(((v[2], f"{Path(k[0]).name}:{k[2]}") for k, v in stats.items()), reverse=True)[:12]
        out["where"] = [{"function": name, "ms_per_step": 1e3 * tt / steps} for tt, name in rows]
    print(json.dumps(out))


def _run_worker(engine: str, kind: str, steps: int, profile: bool = False) -> dict:
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = "1"
    cmd = [sys.executable, __file__, "--worker", engine, kind, str(steps)] + (["--profile"] if profile else [])
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", nargs=3, metavar=("ENGINE", "KIND", "STEPS"))
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.worker:
        engine, kind, steps = args.worker
        worker(engine, kind, int(steps), args.profile)
        return
    rounds, steps = (1, 5) if args.quick else (5, 20)
    results = {}
    for kind in ("mlp", "conv"):
        samples: dict[str, list[float]] = {"torch": [], "gradviz": []}
        for r in range(rounds):
            order = ("torch", "gradviz") if r % 2 == 0 else ("gradviz", "torch")
            for engine in order:
                samples[engine] += _run_worker(engine, kind, steps)["times"]
        med = {e: statistics.median(v) * 1e3 for e, v in samples.items()}
        ratio = med["gradviz"] / med["torch"]
        results[kind] = {"median_ms": med, "ratio": ratio, "claim": CLAIMS[kind], "holds": ratio <= CLAIMS[kind]}
        print(f"{kind}: torch {med['torch']:.2f} ms, gradviz {med['gradviz']:.2f} ms, ratio {ratio:.2f} "
              f"(claim <= {CLAIMS[kind]}: {'holds' if ratio <= CLAIMS[kind] else 'does not hold'})")  # fmt: skip
    where = _run_worker("gradviz", "conv", steps, profile=True)["where"]
    results["conv"]["where_gradviz_time_goes"] = where
    print("conv, where gradviz's time goes (ms per step, own time):")
    for row in where:
        print(f"  {row['ms_per_step']:7.2f}  {row['function']}")
    (BENCH_DIR / "results").mkdir(exist_ok=True)
    (BENCH_DIR / "results" / "nn.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
