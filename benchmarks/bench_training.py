"""Issue 13, must-show 5: a training step (forward, backward, optimizer step) at batch 64.

    python benchmarks/bench_training.py                 # both engines, full run
    python benchmarks/bench_training.py --quick         # a few steps, for smoke tests
    python benchmarks/bench_training.py --engines torch # one engine (e.g. before gradviz.nn lands)

Two models, written once against the torch.nn API and run as ``import torch`` and as
``import gradviz as torch``:

- **mlp**: Linear(784, 256)-ReLU-Linear(256, 256)-ReLU-Linear(256, 10), cross-entropy, SGD with
  momentum. Goal: gradviz <= 1.1x torch.
- **conv**: Conv2d(1, 8, 3, padding=1)-ReLU-MaxPool2d(2)-Conv2d(8, 16, 3, padding=1)-ReLU-
  MaxPool2d(2)-Flatten-Linear(784, 10) on 1x28x28 images, cross-entropy, SGD with momentum.
  Goal: gradviz <= 3x torch.

How it measures: each engine runs in its own process (imports, allocator and caches not shared),
with one BLAS/OpenMP thread (set in the child's environment before numpy or torch load, and
``torch.set_num_threads(1)``) and the garbage collector on, as a training script runs. The
engines' processes alternate over ``--rounds`` rounds (order rotating) so a slow phase of a shared
machine hits both; each round times ``--steps`` steps after ``--warmup`` untimed ones. The step
is ``zero_grad(); loss = crit(model(x), y); loss.backward(); opt.step()``, and each phase is timed
on its own too, on the process's CPU clock by default (one thread, no I/O: the wall time of a quiet
machine, but blind to the time slices a shared machine's neighbours take; ``--clock wall`` for
elapsed time, which is recorded either way). Reported: the median step per engine and the ratio of medians,
from this one run. Both engines start from the same parameters and data (numpy, seeded): the
first step's loss is compared, so a wrong model cannot look fast.

Where the conv time goes: the gradviz child also profiles a few conv steps (cProfile, after
timing) and reports the phases' shares and the functions with the most own time; the result
JSON keeps them (``--json``, default benchmarks/results/training.json).
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
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
GOALS = {"mlp": 1.1, "conv": 3.0}
BATCH = 64


# -- the child: one engine, one model ------------------------------------------------------------

def build(T: Any, model: str) -> tuple[Any, Any, Any]:
    nn = T.nn
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        shape = (BATCH, 784)
    else:
        net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 7 * 7, 10),
        )
        shape = (BATCH, 1, 28, 28)
    import numpy as np

    rng = np.random.default_rng(0)
    with T.no_grad():  # the same starting point in both engines
        for p in net.parameters():
            bound = 1.0 / np.sqrt(max(1, int(np.prod(p.shape[1:])))) if len(p.shape) > 1 else 0.05
            p.copy_(T.tensor(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    x = T.tensor(rng.standard_normal(shape).astype(np.float32))
    y = T.tensor(rng.integers(0, 10, BATCH))
    return net, x, y


def child(engine: str, model: str, steps: int, warmup: int, profile: int, cpu_clock: bool = True) -> dict[str, Any]:
    import importlib

    T = importlib.import_module(engine)
    if engine == "torch":
        T.set_num_threads(1)
    net, x, y = build(T, model)
    crit = T.nn.CrossEntropyLoss()
    opt = T.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    clock = time.process_time if cpu_clock else time.perf_counter
    phases: dict[str, list[float]] = {"forward": [], "backward": [], "step": [], "total": [], "wall": []}
    first_loss = None
    for i in range(warmup + steps):
        w0 = time.perf_counter()
        t0 = clock()
        opt.zero_grad()
        loss = crit(net(x), y)
        t1 = clock()
        loss.backward()
        t2 = clock()
        opt.step()
        t3 = clock()
        w1 = time.perf_counter()
        if first_loss is None:
            first_loss = float(loss.item())
        if i >= warmup:
            for k, v in (("forward", t1 - t0), ("backward", t2 - t1), ("step", t3 - t2), ("total", t3 - t0),
                         ("wall", w1 - w0)):
                phases[k].append(v * 1e3)
    out: dict[str, Any] = {"engine": engine, "model": model, "ms": phases, "first_loss": first_loss,
                           "blas": blas_name(engine)}
    if model == "mlp":
        out["ms"]["gemm"] = gemm_floor(T, engine, net, x, clock, steps)
    if profile:
        out["profile"] = _profile(lambda: (opt.zero_grad(), crit(net(x), y).backward(), opt.step()), profile)
    return out


def blas_name(engine: str) -> str:
    """The library that made the engine's matrix products: gradviz takes MKL where the ``mkl``
    package is installed (gradviz/_blas.py) and numpy's BLAS otherwise; torch's CPU build has MKL."""
    if engine == "torch":
        import torch

        return "MKL" if torch.backends.mkl.is_available() else "torch's BLAS"
    from gradviz import _blas

    if _blas.backend() is not None:
        return "MKL"
    import numpy as np

    libs = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return f"numpy's {libs.get('name', 'BLAS')} {libs.get('version', '')}".strip()


def gemm_floor(T: Any, engine: str, net: Any, x: Any, clock: Any, n: int) -> list[float]:
    """The step's matrix products alone, each in its engine's own library (gradviz/_blas.py's for
    gradviz: MKL, or numpy's matmul; torch.mm for torch), in the orientation the engine computes them: per Linear,
    ``a @ W.T`` forward, ``a.T @ g`` for the weight's gradient and ``g @ W`` for the input's
    where the input needs one. What no engine on that library can go below: the rest of the step
    is the engine's own work."""
    with T.no_grad():
        acts, weights, h = [], [], x
        for m in net:
            if isinstance(m, T.nn.Linear):
                acts.append(h.detach().clone())
                weights.append(m.weight.detach().clone())
            h = m(h)
    grads = [T.ones(a.shape[0], w.shape[0]) for a, w in zip(acts, weights)]
    if engine == "torch":
        mm, tr = T.mm, (lambda a: a.t())
    else:
        from gradviz import _blas

        acts, weights, grads = ([t.numpy() for t in ts] for ts in (acts, weights, grads))
        mm, tr = _blas.matmul, (lambda a: a.T)

    def products() -> None:
        for i, (a, w, g) in enumerate(zip(acts, weights, grads)):
            mm(a, tr(w))
            mm(tr(a), g)
            if i:  # the first layer's input (the data) needs no gradient
                mm(g, w)

    times = []
    for _ in range(n + 3):
        t0 = clock()
        products()
        times.append((clock() - t0) * 1e3)
    return times[3:]


def _profile(step: Any, n: int) -> list[dict[str, Any]]:
    import cProfile
    import pstats

    prof = cProfile.Profile(time.process_time)  # CPU time, as the timings
    prof.enable()
    for _ in range(n):
        step()
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(file).name}:{line}" if line else file
        rows.append({"function": f"{name} ({where})", "calls_per_step": calls / n, "own_ms_per_step": tottime / n * 1e3,
                     "own_share": tottime / total if total else 0.0, "cum_ms_per_step": cumtime / n * 1e3})
    rows.sort(key=lambda r: -r["own_ms_per_step"])
    return rows[:12]


# -- the parent: processes, medians, ratios ------------------------------------------------------

def run_child(engine: str, model: str, args: argparse.Namespace, profile: int) -> dict[str, Any]:
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    cmd = [sys.executable, __file__, "--child", engine, model, str(args.steps), str(args.warmup), str(profile),
           args.clock]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"engine": engine, "model": model, "error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        engine, model, steps, warmup, profile = argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5])
        print(json.dumps(child(engine, model, steps, warmup, profile, cpu_clock=argv[6] == "cpu")))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 round of 3 steps: checks that it runs")
    ap.add_argument("--engines", default="torch,gradviz")
    ap.add_argument("--models", default="mlp,conv")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu (default): the process's CPU time, blind to time descheduled by neighbours on a "
                         "shared machine; wall: elapsed time (always recorded too, as wall_median_ms)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.steps, args.warmup, args.profile_steps = 1, 3, 1, 1
    engines, models = args.engines.split(","), args.models.split(",")
    result: dict[str, Any] = {"bench": "training", "quick": args.quick, "batch": BATCH, "threads": 1, "gc": "on",
                              "clock": args.clock, "rounds": args.rounds, "steps_per_round": args.steps, "models": {}}
    for model in models:
        per: dict[str, dict[str, Any]] = {e: {"ms": {}, "error": None} for e in engines}
        for r in range(args.rounds):
            order = engines[r % len(engines):] + engines[: r % len(engines)]
            for engine in order:
                if per[engine]["error"]:
                    continue
                prof = args.profile_steps if (engine == "gradviz" and model == "conv" and r == args.rounds - 1) else 0
                out = run_child(engine, model, args, prof)
                if "error" in out:
                    per[engine]["error"] = out["error"]
                    continue
                for k, v in out["ms"].items():
                    per[engine]["ms"].setdefault(k, []).extend(v)
                per[engine]["first_loss"] = out["first_loss"]
                per[engine]["blas"] = out.get("blas", "")
                if "profile" in out:
                    per[engine]["profile"] = out["profile"]
        entry: dict[str, Any] = {"goal": GOALS.get(model), "engines": {}}
        for engine, data in per.items():
            if data["error"]:
                entry["engines"][engine] = {"error": data["error"]}
                continue
            e = {f"{k}_median_ms": statistics.median(v) for k, v in data["ms"].items()}
            e["total_min_ms"] = min(data["ms"]["total"])
            e["steps"] = len(data["ms"]["total"])
            e["first_loss"] = data["first_loss"]
            e["blas"] = data.get("blas", "")
            if "profile" in data:
                e["profile"] = data["profile"]
            entry["engines"][engine] = e
        ok = {k: v for k, v in entry["engines"].items() if "error" not in v}
        if "torch" in ok and "gradviz" in ok:
            entry["ratio"] = ok["gradviz"]["total_median_ms"] / ok["torch"]["total_median_ms"]
            entry["meets_goal"] = entry["ratio"] <= entry["goal"]
            if "gemm_median_ms" in ok["gradviz"] and "gemm_median_ms" in ok["torch"]:
                g, t = ok["gradviz"], ok["torch"]
                entry["gemm_ratio"] = g["gemm_median_ms"] / t["gemm_median_ms"]
                entry["beyond_gemm_ratio"] = ((g["total_median_ms"] - g["gemm_median_ms"])
                                              / (t["total_median_ms"] - t["gemm_median_ms"]))
            entry["first_loss_agrees"] = abs(ok["gradviz"]["first_loss"] - ok["torch"]["first_loss"]) <= 1e-4 * max(
                1.0, abs(ok["torch"]["first_loss"]))
        result["models"][model] = entry
    print(report(result))
    out = args.json or (BENCH_DIR / "results" / ("training-quick.json" if args.quick else "training.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def report(result: dict[str, Any]) -> str:
    lines = [f"training step at batch {result['batch']}: each engine in its own process, 1 BLAS thread, GC on, "
             f"{result['clock']} clock, {result['rounds']} rounds x {result['steps_per_round']} steps", "",
             "| model | engine | products by | step median ms | forward | backward | optimizer step | wall ms "
             "| GEMMs alone | ratio (goal) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    notes: list[str] = []  # after the table, which a line between its rows would end
    for model, entry in result["models"].items():
        for engine, e in entry["engines"].items():
            if "error" in e:
                lines.append(f"| {model} | {engine} | | not run: {e['error']} | | | | | | |")
                continue
            ratio = f"{entry['ratio']:.2f}x (<= {entry['goal']}x)" if engine == "gradviz" and "ratio" in entry else ""
            gemm = f"{e['gemm_median_ms']:.2f}" if "gemm_median_ms" in e else "—"  # the MLP's only
            lines.append(f"| {model} | {engine} | {e.get('blas', '')} | {e['total_median_ms']:.2f} | "
                         f"{e['forward_median_ms']:.2f} | "
                         f"{e['backward_median_ms']:.2f} | {e['step_median_ms']:.2f} | {e['wall_median_ms']:.2f} | "
                         f"{gemm} | {ratio} |")
        if "beyond_gemm_ratio" in entry:
            notes.append(f"{model}: the step less its matrix products (each engine's own BLAS, named in the table): "
                         f"{entry['beyond_gemm_ratio']:.2f}x torch; the products alone: {entry['gemm_ratio']:.2f}x.")
    if notes:
        lines += ["", *notes]
    conv = result["models"].get("conv", {}).get("engines", {}).get("gradviz", {})
    if "profile" in conv:
        lines += ["", "where gradviz's conv step goes (cProfile, own time per step):", ""]
        for r in conv["profile"][:8]:
            lines.append(f"- {r['own_ms_per_step']:.2f} ms ({r['own_share']:.0%}) {r['function']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
