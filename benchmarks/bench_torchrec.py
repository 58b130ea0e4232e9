"""What recording real torch costs: the backward of an MLP training step under the torch
recorder (``gradviz.trace(path, engine="torch")``) against the same backward unrecorded, in one
process (issue 15: at most 3×).

- ``untraced``: ``loss.backward()`` after zero_grad and the forward (both outside the clock).
- ``torchrec``: the recording starts before the forward (setup, untimed), as ``gradviz run``
  records a script, so the forward's source lines are noted; the clock holds the backward with
  its hooks and statistics, and ``stop()`` writing the trace file.

The MLP is a real-size classifier step: batch 256, 784 -> 512 -> 512 -> 10, ReLU, cross entropy.

    python benchmarks/bench_torchrec.py [--quick]

Issue 32's goals for recording real torch (``--goals [ROUNDS]``): a whole MLP training step
recorded vs unrecorded (<= 2x), a 20k-node chain's backward (<= 3x), and memory flat (+-10%)
from step 1,000 to step 20,000 of a recorded training loop. Each figure is measured in its own
process (GC on, one BLAS thread), recorded and unrecorded alternated, medians within a process,
ranges over rounds.

    python benchmarks/bench_torchrec.py --goals 5 [--against OLD_CHECKOUT]

Every figure is process CPU time (the machine is shared: wall time moves with the others' load).
Beside each recorded figure, the floor of any recorder made of torch's public hooks: the same
program under a TorchFunctionMode that only calls the op, with one empty Python pre-hook and one
empty post-hook on every node of each backward (``_Floor``), and the same with the post-hooks
alone (``floor1``: a node's start derived from its end, as the recorder does for most nodes).
``--against`` measures another checkout's recording (the code before a change) in the same
rounds, alternated.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
# GRADVIZ_ROOT: another checkout's gradviz measured by this file (--goals --against: old and new
# code alternated in one run)
for _p in (str(BENCH_DIR), os.environ.get("GRADVIZ_ROOT") or str(BENCH_DIR.parent)):
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)

import _harness as h  # noqa: E402

if __name__ == "__main__":
    h.pin_threads()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gradviz  # noqa: E402


def build(cfg: h.Config) -> tuple[list[h.Workload], list[h.Claim], list[h.Skip]]:
    batch, width = (64, 256) if cfg.quick else (256, 512)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    x, y = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
    tmp = tempfile.mkdtemp(prefix="gradviz-bench-torchrec-")
    cfg.cleanups.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    path = os.path.join(tmp, "mlp.trace.json")

    def forward() -> Any:
        model.zero_grad(set_to_none=True)
        return F.cross_entropy(model(x), y)

    def untraced(loss: Any) -> None:
        loss.backward()

    def started() -> Any:
        rec = gradviz.trace(path, engine="torch")
        rec.start()
        try:
            return rec, forward()
        except BaseException:
            rec.stop("error")
            raise

    def recorded(arg: Any) -> Any:
        rec, loss = arg
        try:
            loss.backward()
        finally:
            rec.stop()
        return rec

    def check() -> dict[str, int]:
        rec = recorded(started())
        t = gradviz.load(path)
        assert t.execution_order(1)[0] == "NllLossBackward0", t.execution_order(1)
        return {"events": rec.count, "bytes": os.path.getsize(path)}

    impls = [h.Impl("untraced", untraced, forward), h.Impl("torchrec", recorded, started, check)]
    workloads = [
        h.Workload("torchrec_mlp", f"MLP training step backward (batch {batch}, width {width}), torch recorded",
                   impls, subject="torchrec", rewarm=True),
    ]
    claims = [h.Claim("Recording torch's MLP backward costs at most 3× the unrecorded one", "torchrec_mlp",
                      "untraced", 3.0)]
    return workloads, claims, []


# --- issue 32's goals: each measurement a process of its own --------------------------------------


def _mlp_step() -> Any:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


class _Floor:
    """The least any recorder made of torch's public hooks pays, with nothing recorded: a
    TorchFunctionMode whose handler only calls the op (what sees the forward's lines and ops),
    and on every node of each backward one empty Python pre-hook and one empty post-hook (what
    sees a node start and end), registered after a walk of the graph and removed after it, the
    way the recorder registers its own (no RemovableHandle a hook). ``pre=False``: the post-hook
    alone (``floor1``), the floor of a recorder that derives a node's start from its end, as
    the torch recorder does for every node but a leaf's, a custom Function's and the first."""

    def __init__(self, pre: bool = True) -> None:
        self.pre = pre

    def __enter__(self) -> _Floor:
        from torch.overrides import TorchFunctionMode

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                return func(*args, **(kwargs or {}))

        self.mode = Mode()
        self.mode.__enter__()
        self.orig = torch.Tensor.backward

        def pre(grad_outputs: Any) -> None:
            return None

        def post(grad_inputs: Any, grad_outputs: Any) -> None:
            return None

        orig = self.orig
        with_pre = self.pre
        fn_cls = torch.autograd.function.Function
        self.register = fn_cls.__dict__.get("_register_hook")  # None: inherited (torch's _HookMixin)
        torch_register = fn_cls._register_hook

        def register(hooks: Any, hook: Any) -> Any:
            # the registration the recorder uses (gradviz.torchrec.hooks): the hook into torch's
            # dict for the node, no RemovableHandle (with one, 2x more objects a node for the GC)
            if hook is pre or hook is post:
                if hooks is None:
                    hooks = OrderedDict()
                hooks[hook] = hook
                return hooks, hooks
            return torch_register(hooks, hook)

        fn_cls._register_hook = staticmethod(register)

        def backward(t: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            seen, todo, dicts = {t.grad_fn}, [t.grad_fn], []
            while todo:
                n = todo.pop()
                if with_pre:
                    dicts.append(n.register_prehook(pre))
                dicts.append(n.register_hook(post))
                for f, _ in n.next_functions:
                    if f is not None and f not in seen:
                        seen.add(f)
                        todo.append(f)
            try:
                return orig(t, *args, **kwargs)
            finally:
                for d in dicts:
                    d.pop(pre, None)
                    d.pop(post, None)

        torch.Tensor.backward = backward  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        torch.Tensor.backward = self.orig  # type: ignore[method-assign]
        if self.register is None:
            del torch.autograd.function.Function._register_hook
        else:
            torch.autograd.function.Function._register_hook = self.register
        self.mode.__exit__(None, None, None)


def _child(what: str, mode: str) -> None:
    import contextlib
    import statistics
    import time

    tmp = tempfile.mkdtemp(prefix="gradviz-bench-torchrec-")
    path = os.path.join(tmp, "t.json")
    ctx = gradviz.trace(path, engine="torch") if mode == "rec" else _Floor() if mode == "floor" \
        else _Floor(pre=False) if mode == "floor1" else contextlib.nullcontext()
    try:
        with ctx:
            if what == "mlp":
                step = _mlp_step()
                for _ in range(30):
                    step()
                times = []
                for _ in range(7):
                    t = time.process_time()
                    for _ in range(50):
                        step()
                    times.append((time.process_time() - t) / 50)
                print(statistics.median(times))
            elif what == "chain":
                times = []
                for _ in range(3):
                    x = torch.ones(1, requires_grad=True)
                    out = x
                    for _ in range(20_000):
                        out = out * 1.0001
                    t = time.process_time()
                    out.backward()
                    times.append(time.process_time() - t)
                print(statistics.median(times))
            else:  # memory: resident set size at step 1,000 and step 20,000 of a recorded loop
                step = _mlp_step()
                page = os.sysconf("SC_PAGE_SIZE")
                rss = {}
                for i in range(1, 20_001):
                    step()
                    if i in (1_000, 20_000):
                        with open("/proc/self/statm") as f:
                            rss[i] = int(f.read().split()[1]) * page / 2**20
                print(rss[1_000], rss[20_000])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def goals(rounds: int, against: str | None = None) -> None:
    """Issue 32's figures; ``against``: the root of another checkout (the code before a change),
    whose recording is measured in the same rounds, alternated with this one's."""
    import statistics
    import subprocess

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("GRADVIZ_ROOT", None)

    def run(*args: str, root: str | None = None) -> list[float]:
        e = env if root is None else {**env, "GRADVIZ_ROOT": root}
        out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                             env=e, check=True).stdout
        return [float(v) for v in out.split()]

    ratios: dict[str, list[float]] = {"mlp": [], "chain": []}
    floors: dict[str, list[float]] = {"mlp": [], "chain": []}
    floors1: dict[str, list[float]] = {"mlp": [], "chain": []}
    olds: dict[str, list[float]] = {"mlp": [], "chain": []}
    modes = ("plain", "rec", "floor", "floor1") + (("old",) if against else ())
    for r in range(rounds):
        for what in ratios:
            pair = {}
            for mode in (modes if r % 2 == 0 else modes[::-1]):
                pair[mode] = run(what, "rec" if mode == "old" else mode, root=against if mode == "old" else None)[0]
            ratios[what].append(pair["rec"] / pair["plain"])
            floors[what].append(pair["floor"] / pair["plain"])
            floors1[what].append(pair["floor1"] / pair["plain"])
            old = ""
            if against:
                olds[what].append(pair["old"] / pair["plain"])
                old = f", before: recorded {pair['old'] * 1e3:.2f} ms ({olds[what][-1]:.2f}x)"
            print(f"round {r + 1}: {what}: unrecorded {pair['plain'] * 1e3:.2f} ms, recorded {pair['rec'] * 1e3:.2f} ms"
                  f" ({ratios[what][-1]:.2f}x), empty hooks and mode {pair['floor'] * 1e3:.2f} ms"
                  f" ({floors[what][-1]:.2f}x), post-hooks only {pair['floor1'] * 1e3:.2f} ms"
                  f" ({floors1[what][-1]:.2f}x){old}", flush=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    for what, goal in (("mlp", 2.0), ("chain", 3.0)):
        lo, hi = min(ratios[what]), max(ratios[what])
        flo, fhi = min(floors[what]), max(floors[what])
        print(f"{what}: recorded/unrecorded {lo:.2f}x-{hi:.2f}x (median {statistics.median(ratios[what]):.2f}x)"
              f" over {rounds} rounds (goal <= {goal}x); floor {flo:.2f}x-{fhi:.2f}x"
              f" (median {statistics.median(floors[what]):.2f}x); post-hooks-only floor"
              f" {min(floors1[what]):.2f}x-{max(floors1[what]):.2f}x (median {statistics.median(floors1[what]):.2f}x)")
        if against:
            print(f"{what}: before: {min(olds[what]):.2f}x-{max(olds[what]):.2f}x"
                  f" (median {statistics.median(olds[what]):.2f}x)")
    print(f"load average at the end: {load}")
    a, b = run("memory", "rec")
    print(f"memory: {a:.0f} MB at step 1,000, {b:.0f} MB at step 20,000 ({(b - a) / a * 100:+.1f}%; goal +-10%)")
    import datetime
    import json

    result = {
        "bench": "torchrec_goals", "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "clock": "process CPU time", "gc": True, "threads": 1, "rounds": rounds, "load_average_at_end": float(load),
        "goals": {"mlp": 2.0, "chain": 3.0, "memory_pct": 10.0},
        "recorded_over_unrecorded": ratios, "floor_over_unrecorded": floors, "floor1_over_unrecorded": floors1,
        "before_over_unrecorded": olds if against else None, "against": against,
        "memory_mb": {"step_1000": a, "step_20000": b},
    }
    out = BENCH_DIR / "results" / "torchrec_goals.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written: {out}")


def main(argv: list[str] | None = None) -> dict:
    return h.main("torchrec", __doc__.split("\n\n")[0], build, repeats=15, warmup=2, argv=argv)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--goals":
        args = sys.argv[2:]
        root = None
        if "--against" in args:
            i = args.index("--against")
            root = args[i + 1]
            del args[i:i + 2]
        goals(int(args[0]) if args else 5, root)
    else:
        main()
