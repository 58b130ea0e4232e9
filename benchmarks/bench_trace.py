"""Trace file speed: write and load rates in events/s, peak memory of a streamed recording, and
what recording costs a backward (chain and MLP, forward built off the clock and before the
recording; bench_recording.py has the full comparison with the shared harness).

Synthetic events (an MLP-shaped backward from gradviz.trace.synth, renumbered to the size
asked for) so the rates measure the trace layer alone. Issue 7's goals: write >= 2,000,000
events/s, load >= 1,000,000 events/s, recording 1M events under 200 MB peak.

    python benchmarks/bench_trace.py [--quick] [--events N]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradviz.trace import codec  # noqa: E402
from gradviz.trace import events as ev  # noqa: E402
from gradviz.trace.file import TraceWriter, load  # noqa: E402
from gradviz.trace.synth import backward_graph  # noqa: E402


def synthetic_events(n: int) -> list[ev.Event]:
    """n events shaped like a real recording: an MLP backward's events repeated, seq renumbered."""
    base = backward_graph("mlp", 2000).finish()[1:-1]  # without the trace's own begin/end
    head = backward_graph("mlp", 10).finish()[0]
    out: list[ev.Event] = [head]
    fields = {t: ev.field_names(t) for t in ev.EVENT_TYPES}
    while len(out) < n - 1:
        for e in base:
            if len(out) >= n - 1:
                break
            vals = [getattr(e, f) for f in fields[type(e)]]
            vals[0] = len(out)
            out.append(type(e)(*vals))
    out.append(ev.TraceEnd(len(out), 0, 1, "ok", len(out)))
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        gc.enable()
    return min(times)


def bench_write_load(n: int, repeat: int, tmp: Path) -> None:
    events = synthetic_events(n)
    path = tmp / "bench.trace.json"

    def write() -> None:
        w = TraceWriter(path)
        put = w.write
        for e in events[:-1]:
            put(e)
        w.close(events[-1])  # type: ignore[arg-type]

    t_write = best(write, repeat)
    size = path.stat().st_size

    def read() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = load(path)
        assert len(t.events) == n

    t_load = best(read, repeat)
    print(f"json backend: {codec.JSON_BACKEND}")
    print(f"events: {n:,}   file: {size / 1e6:.1f} MB ({size / n:.0f} bytes/event)")
    print(f"write: {n / t_write:>12,.0f} events/s  ({t_write:.3f} s)   goal >= 2,000,000")
    print(f"load:  {n / t_load:>12,.0f} events/s  ({t_load:.3f} s)   goal >= 1,000,000")


_PEAK_SCRIPT = r"""
import resource, sys, numpy
import gradviz as torch
from gradviz.trace import trace
n = int(sys.argv[1])
x = torch.tensor([1.0, 2.0], requires_grad=True)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with trace(sys.argv[2]) as rec:
    while rec.count < n:
        (x * 2.0).sum().backward()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(rec.count, before, after)
"""


def bench_peak(n: int, tmp: Path) -> None:
    """Peak RSS of a process recording n events of real backward passes to a file."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(n), str(tmp / "peak.trace.json")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    count, before, after = (int(v) for v in out.stdout.split())
    print(
        f"recording {count:,} events: peak RSS {after / 1024:.0f} MB "
        f"({before / 1024:.0f} MB before recording)   goal < 200 MB"
    )


def bench_overhead(repeat: int, tmp: Path, quick: bool) -> None:
    try:
        import gradviz as torch
        from gradviz.trace import record, trace
    except ImportError as e:  # the engine is not there yet
        print(f"recording overhead: skipped ({e})")
        return
    depth = 200 if quick else 2000

    def chain():
        x = torch.tensor([1.0], requires_grad=True)
        y = x
        for _ in range(depth):
            y = y * 1.0001 + 0.0001
        return y.sum()

    def mlp():
        torch.manual_seed(0)
        x = torch.randn(64, 128)
        ws = [torch.randn(128, 128, requires_grad=True) for _ in range(4 if quick else 8)]
        h = x
        for w in ws:
            h = (h @ w).tanh()
        return h.sum()

    for name, build in (("chain", chain), ("mlp", mlp)):
        path = str(tmp / f"{name}.trace.json")
        base = _time_backward(build, repeat, lambda: contextlib.nullcontext())
        to_file = _time_backward(build, repeat, lambda p=path: trace(p))
        in_mem = _time_backward(build, repeat, record)
        print(
            f"overhead {name:5s}: backward {base * 1e3:8.2f} ms, recorded to a file x{to_file / base:.2f}, "
            f"in memory x{in_mem / base:.2f}"
        )


def _time_backward(build, repeat: int, recording) -> float:
    """Best time of loss.backward() inside ``recording()``; the forward is built off the clock."""
    times = []
    for _ in range(repeat):
        loss = build()
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        with recording():
            loss.backward()
        times.append(time.perf_counter() - t0)
        gc.enable()
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, one repeat: a smoke run")
    p.add_argument("--events", type=int, default=None, help="events for the write/load rates")
    args = p.parse_args()
    n = args.events or (20_000 if args.quick else 1_000_000)
    repeat = 1 if args.quick else 3
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_write_load(n, repeat, tmp)
        bench_peak(20_000 if args.quick else 1_000_000, tmp)
        bench_overhead(repeat, tmp, args.quick)


if __name__ == "__main__":
    main()
