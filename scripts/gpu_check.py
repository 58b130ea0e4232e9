"""gradviz on a real NVIDIA GPU (issue 19's device check), in one run that prints its own log.

    python scripts/gpu_check.py [--device cuda:0] [--quick]

Parts, each printing PASS/FAIL lines and a count at the end:

1. ops: forward and backward of the core ops on the device, gradviz (cupy) against torch on the
   same device: values (float32, rtol 1e-4) and backward node names. torch's version on a GPU
   machine may differ from the oracle's (2.13): a name that differs is printed as a NOTE.
2. mlp: five SGD-with-momentum steps of a Linear-ReLU MLP from the same weights, losses compared.
3. multi_device: samples/multi_device.py with the device in place of virtual:0 and virtual:1.
4. torchrec: real torch's backward on the device, recorded by gradviz's torch recorder: which
   threads ran its nodes (torch runs a CUDA graph's nodes on its device worker thread).
5. timing: the MLP's training step at batch 64, gradviz on the device and on the cpu, torch on the
   device: medians of wall time (device work synchronised), each in a process of its own that
   imports only its engine, with the garbage collector on (``--time ENGINE DEVICE`` is that
   process).

With ``--device cpu`` it runs the same checks on the cpu (a dry run of the script itself).
"""

# ruff: noqa: E501 - the ops table keeps one case per line

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

gradviz: Any = None  # imported in main(): a timing process imports only the engine it times

RESULTS: list[tuple[str, str, str]] = []  # (part, name, PASS/FAIL/NOTE + detail)


def report(part: str, name: str, ok: bool | None, detail: str = "") -> None:
    tag = "PASS" if ok else ("NOTE" if ok is None else "FAIL")
    RESULTS.append((part, name, tag))
    print(f"{tag} {part}/{name}{': ' + detail if detail else ''}", flush=True)


def names(fn) -> list[str]:
    """Backward node names in a DFS from fn (the same walk on both libraries)."""
    out, stack, seen, alive = [], [fn], set(), []
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        alive.append(f)  # torch makes a new Python object per next_functions read: keep ids unique
        out.append(type(f).__name__)
        stack.extend(n for n, _ in reversed(f.next_functions))
    return out


def ops_cases(T, dev):
    """name -> (make inputs, f(inputs) -> output tensor). Inputs from one numpy seed, on dev."""
    F = T.nn.functional

    def arr(*shape, seed=0, pos=False):
        a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        return np.abs(a) + 0.5 if pos else a

    def leaf(a):
        return T.tensor(a, device=dev, requires_grad=True)

    def idx(a):
        return T.tensor(a, device=dev)

    cases = {
        "add_mul_broadcast": (lambda: [leaf(arr(4, 5)), leaf(arr(5, seed=1))], lambda a, b: (a * b + b).sum()),
        "div_pow": (lambda: [leaf(arr(3, 4)), leaf(arr(3, 4, seed=1, pos=True))], lambda a, b: (a / b).pow(2).mean()),
        "matmul": (lambda: [leaf(arr(8, 6)), leaf(arr(6, 3, seed=1))], lambda a, b: (a @ b).tanh().sum()),
        "bmm": (lambda: [leaf(arr(2, 3, 4)), leaf(arr(2, 4, 5, seed=1))], lambda a, b: T.bmm(a, b).sum()),
        "unary": (lambda: [leaf(arr(3, 4, pos=True))], lambda a: (a.exp() + a.log() + a.sqrt() + a.sin()).sum()),
        "activations": (lambda: [leaf(arr(4, 6))], lambda a: (F.relu(a) + a.sigmoid() + F.gelu(a) + F.silu(a)).sum()),
        "softmax": (lambda: [leaf(arr(4, 6))], lambda a: (a.softmax(1) * a.log_softmax(1)).sum()),
        "reductions": (lambda: [leaf(arr(4, 6))], lambda a: a.max(1).values.sum() + a.var(0).sum() + a.amax() + a.norm()),
        "views": (lambda: [leaf(arr(4, 6))], lambda a: a.view(2, 12).t().reshape(3, 8)[1:, ::2].permute(1, 0).sum()),
        "cat_stack": (lambda: [leaf(arr(2, 3)), leaf(arr(2, 3, seed=1))], lambda a, b: (T.cat([a, b]) * T.stack([a, b]).sum(0).repeat(2, 1)).sum()),
        "getitem_tensor": (lambda: [leaf(arr(5, 4))], lambda a: a[idx(np.array([0, 2, 2, 4]))].sum()),
        "setitem_tensor_index_cpu_scalar": (
            lambda: [leaf(arr(5, 4))],
            lambda a: (lambda c: (c.__setitem__(idx(np.array([1, 3])), T.tensor(2.0)), c)[1])(a * 1).pow(2).sum(),
        ),
        "masked_fill_where": (lambda: [leaf(arr(4, 4))], lambda a: (a.masked_fill(a > 0, 0.5) + T.where(a < 0, a, a * 2)).sum()),
        "gather_scatter": (lambda: [leaf(arr(3, 4))], lambda a: a.gather(1, idx(np.array([[0, 1], [2, 3], [1, 1]]))).sum()),
        "linear": (lambda: [leaf(arr(8, 5)), leaf(arr(3, 5, seed=1)), leaf(arr(3, seed=2))], lambda x, w, b: F.linear(x, w, b).sum()),
        "conv2d": (lambda: [leaf(arr(2, 3, 8, 8)), leaf(arr(4, 3, 3, 3, seed=1))], lambda x, w: F.conv2d(x, w, padding=1).pow(2).sum()),
        "max_pool2d": (lambda: [leaf(arr(2, 3, 8, 8))], lambda x: F.max_pool2d(x, 2).sum()),
        "layer_norm": (lambda: [leaf(arr(4, 6)), leaf(arr(6, seed=1)), leaf(arr(6, seed=2))], lambda x, w, b: (F.layer_norm(x, (6,), w, b) ** 2).sum()),
        "batch_norm_train": (lambda: [leaf(arr(8, 4)), leaf(arr(4, seed=1)), leaf(arr(4, seed=2))],
                             lambda x, w, b: (F.batch_norm(x, None, None, w, b, training=True) ** 2).sum()),
        "cross_entropy": (lambda: [leaf(arr(6, 5))], lambda x: F.cross_entropy(x, idx(np.array([0, 1, 4, 2, 3, 0])))),
        "mse_nll": (lambda: [leaf(arr(6, 5)), leaf(arr(6, 5, seed=1))], lambda x, y: F.mse_loss(x, y) + F.nll_loss(x.log_softmax(1), idx(np.array([0, 1, 4, 2, 3, 0])))),
        "embedding": (lambda: [leaf(arr(10, 4))], lambda w: F.embedding(idx(np.array([[1, 2], [4, 1]])), w).pow(2).sum()),
        "cumsum_prod": (lambda: [leaf(arr(3, 4, pos=True))], lambda a: (a.cumsum(1) + a.prod(0)).sum()),
        "einsum": (lambda: [leaf(arr(3, 4)), leaf(arr(4, 5, seed=1))], lambda a, b: T.einsum("ij,jk->ik", a, b).sum()),
        "double_backward": (lambda: [leaf(arr(4))], lambda a: T.autograd.grad((a ** 3).sum(), a, create_graph=True)[0].sum()),
    }
    return cases


def part_ops(torch, dev: str) -> None:
    g_cases, t_cases = ops_cases(gradviz, dev), ops_cases(torch, dev)
    for name in g_cases:
        try:
            outs = {}
            for lib, cases in (("gradviz", g_cases), ("torch", t_cases)):
                make, f = cases[name]
                xs = make()
                y = f(*xs)
                y.backward()
                grads = [x.grad.detach().cpu().numpy() if x.grad is not None else None for x in xs]
                outs[lib] = (float(y.detach().cpu().numpy()), grads, names(y.grad_fn), str(xs[0].grad.device) if xs[0].grad is not None else None)
            (gy, gg, gn, gdev), (ty, tg, tn, tdev) = outs["gradviz"], outs["torch"]
            ok = np.allclose(gy, ty, rtol=1e-4, atol=1e-5) and all(
                (a is None and b is None) or (a is not None and b is not None and np.allclose(a, b, rtol=1e-4, atol=1e-5))
                for a, b in zip(gg, tg))
            where_ok = gdev == tdev
            report("ops", name, ok and where_ok, "" if ok and where_ok else f"value {gy} vs {ty}; grad device {gdev} vs {tdev}")
            if gn != tn:
                report("ops", name + ".names", None, f"gradviz {gn} / torch {torch.__version__} {tn}")
        except Exception as exc:  # noqa: BLE001 - a failing case is a finding, not the end
            report("ops", name, False, f"{type(exc).__name__}: {exc}")
            traceback.print_exc(limit=-3)


def mlp(T, dev: str, seed: int = 0):
    nn = T.nn
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for p in net.parameters():
            p.copy_(T.tensor(rng.uniform(-0.05, 0.05, tuple(p.shape)).astype(np.float32)))
    net = net.to(dev)
    x = T.tensor(rng.standard_normal((64, 784)).astype(np.float32), device=dev)
    y = T.tensor(rng.integers(0, 10, 64), device=dev)
    opt = T.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = crit(net(x), y)
        loss.backward()
        opt.step()
        return loss

    return net, step


def part_mlp(torch, dev: str) -> None:
    try:
        losses = {}
        for lib in (gradviz, torch):
            _, step = mlp(lib, dev)
            losses[lib.__name__] = [float(step().detach().cpu().item()) for _ in range(5)]
        ok = np.allclose(losses["gradviz"], losses["torch"], rtol=1e-3)
        report("mlp", "five_steps", ok, f"gradviz {losses['gradviz']} torch {losses['torch']}")
    except Exception as exc:  # noqa: BLE001
        report("mlp", "five_steps", False, f"{type(exc).__name__}: {exc}")
        traceback.print_exc(limit=-3)


def part_multi_device(dev: str, out: Path) -> None:
    import subprocess

    src = (ROOT / "samples" / "multi_device.py").read_text()
    path = out / "multi_device_on_device.py"
    path.write_text(src.replace('"virtual:0"', repr(dev)).replace('"virtual:1"', repr(dev)))
    py = sys.executable
    for label, cmd in (
        ("sample", [py, str(path), "5"]),
        ("run", [py, "-m", "gradviz", "run", "-o", str(out / "md.trace.json"), str(path), "5"]),
        ("info", [py, "-m", "gradviz", "info", str(out / "md.trace.json")]),
        ("render_dot", [py, "-m", "gradviz", "render", str(out / "md.trace.json"), "--format", "dot", "-o", str(out / "md.dot")]),
        ("export", [py, "-m", "gradviz", "export", str(out / "md.trace.json"), "-o", str(out / "md.chrome.json")]),
    ):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=str(out))
        tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
        report("multi_device", label, r.returncode == 0, " | ".join(tail))


def part_torchrec(torch, dev: str) -> None:
    from gradviz.torchrec import TorchRecorder
    from gradviz.trace import events as ev

    try:
        x = torch.randn(64, 32, device=dev, requires_grad=True)
        w = torch.randn(32, 8, device=dev, requires_grad=True)
        with TorchRecorder() as rec:
            (x @ w).tanh().sum().backward()
        t = rec.trace
        threads = {e.tid: (e.name, e.role, e.device) for e in t.of_kind(ev.ThreadStart)}
        (begin,) = t.of_kind(ev.TaskBegin)
        ran = {threads.get(e.tid, ("?",))[0] for e in t.of_kind(ev.NodeBegin)}
        caller = threads.get(begin.tid, ("?",))[0]
        on_worker = dev.startswith("cuda") and caller not in ran and bool(ran)
        report("torchrec", "device_thread", on_worker or not dev.startswith("cuda"),
               f"caller {caller!r}; nodes ran on {sorted(ran)}; threads {sorted(threads.values(), key=str)}")
        from gradviz.trace.check import invariants

        bad = invariants(t)
        report("torchrec", "invariants", not bad, "; ".join(map(str, bad[:3])))
        order = t.execution_order(1)
        report("torchrec", "order", order == ["SumBackward0", "TanhBackward0", "MmBackward0", "AccumulateGrad",
                                              "AccumulateGrad"] or order[:3] == ["SumBackward0", "TanhBackward0", "MmBackward0"],
               str(order))
    except Exception as exc:  # noqa: BLE001
        report("torchrec", "device_thread", False, f"{type(exc).__name__}: {exc}")
        traceback.print_exc(limit=-3)


def time_step(engine: str, dev: str) -> float:
    """The median of 50 training steps in ms (after 20 untimed), device work synchronised."""
    if engine == "torch":
        import torch as lib

        def sync() -> None:
            if dev.startswith("cuda"):
                lib.cuda.synchronize()
    else:
        import gradviz as lib

        def sync() -> None:
            if dev.startswith("cuda"):
                import cupy

                cupy.cuda.Device(int(dev.split(":")[1]) if ":" in dev else 0).synchronize()

    _, step = mlp(lib, dev)
    for _ in range(20):
        step()
    sync()
    ts = []
    for _ in range(50):
        t = time.perf_counter()
        step()
        sync()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def part_timing(torch, dev: str) -> None:
    runs = [("gradviz", where) for where in dict.fromkeys((dev, "cpu"))] + [("torch", dev)]
    try:
        for engine, where in runs:
            r = subprocess.run([sys.executable, __file__, "--time", engine, where], capture_output=True, text=True,
                               timeout=300, check=True)
            label = f"torch {torch.__version__}" if engine == "torch" else engine
            print(f"TIME mlp training step (batch 64, 784-256-256-10): {label} {where}: {float(r.stdout):.3f} ms "
                  "median of 50, in its own process", flush=True)
        report("timing", "mlp_step", True)
    except Exception as exc:  # noqa: BLE001
        report("timing", "mlp_step", False, f"{type(exc).__name__}: {exc}")


def main() -> int:
    global gradviz
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", default="gpu_check_out")
    ap.add_argument("--time", nargs=2, metavar=("ENGINE", "DEVICE"), help="time one engine's step, alone")
    args = ap.parse_args()
    if args.time:
        print(time_step(*args.time))
        return 0
    import torch

    import gradviz as _gradviz

    gradviz = _gradviz

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"gradviz {gradviz.__version__}, torch {torch.__version__}, numpy {np.__version__}, device {args.device}")
    if args.device.startswith("cuda"):
        import cupy

        print(f"cupy {cupy.__version__}, {cupy.cuda.runtime.getDeviceCount()} GPU(s): "
              f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    part_ops(torch, args.device)
    part_mlp(torch, args.device)
    part_multi_device(args.device, out)
    part_torchrec(torch, args.device)
    part_timing(torch, args.device)
    counts = {t: sum(1 for r in RESULTS if r[2] == t) for t in ("PASS", "FAIL", "NOTE")}
    print(f"SUMMARY {counts['PASS']} passed, {counts['FAIL']} failed, {counts['NOTE']} notes")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
