"""Trace file speed: write and load rates in events/s, and the peak memory of a streamed recording.

Goals: write >= 2,000,000 events/s, load >= 1,000,000 events/s, recording 1,000,000
events under 200 MB peak. What recording costs a backward (W1 and W3) is
bench_recording.py's, with the shared harness; this script measures the trace layer alone.

- write: ``TraceWriter.write`` for each event, then ``close``: the file on disk, closed.
- load: ``gradviz.load`` of that file: every event decoded, validated and typed.
- events: synthetic, shaped like a real recording (an MLP backward from tests.synth,
  repeated with seq renumbered), so the rates do not depend on engine speed.
- time: process CPU time by default, as the harness (a busy neighbour on a shared 2-core machine
  does not count), with the garbage collector off while timing, as the harness does; median and
  min over the rounds. Wall-clock time beside it.
- peak: a fresh process records N events of real backward passes to a file; its peak RSS is the
  kernel's high-water mark of that process (VmHWM: ``ru_maxrss`` would report the benchmark's
  own memory, which a child inherits through fork and exec).

    python benchmarks/bench_trace.py [--quick] [--events N] [--rounds R] [--stdlib]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

WRITE_GOAL = 2_000_000
LOAD_GOAL = 1_000_000
PEAK_GOAL_MB = 200


def synthetic_events(n: int) -> list:
    """n events shaped like a real recording: an MLP backward's events repeated, seq renumbered."""
    from gradviz.trace import events as ev
    from tests.synth import backward_graph

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


def measure(fn: Callable[[], object], rounds: int) -> tuple[list[float], list[float]]:
    """(cpu seconds, wall seconds) of each round; the collector off while the clock runs."""
    cpu, wall = [], []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        c1, w1 = time.process_time(), time.perf_counter()
        gc.enable()
        del result  # freeing what a load returned is not the load's time
        cpu.append(c1 - c0)
        wall.append(w1 - w0)
    return cpu, wall


def _verdict(ok: bool) -> str:
    return "holds" if ok else "DOES NOT HOLD"


def bench_write_load(n: int, rounds: int, tmp: Path) -> None:
    from gradviz.trace import codec
    from gradviz.trace.file import TraceWriter, load

    events = synthetic_events(n)
    path = tmp / "bench.trace.json"

    def write() -> None:
        w = TraceWriter(path)
        put = w.write
        for e in events[:-1]:
            put(e)
        w.close(events[-1])

    def read() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a whole trace: no TraceWarning
            t = load(path)
        assert len(t.events) == n
        return t

    w_cpu, w_wall = measure(write, rounds)
    size = path.stat().st_size
    l_cpu, l_wall = measure(read, rounds)
    print(f"json backend: {codec.JSON_BACKEND}; {rounds} rounds; rates from median CPU time (from min in brackets)")
    print(f"events: {n:,}   file: {size / 1e6:.1f} MB ({size / n:.0f} bytes/event)")
    for name, cpu, wall, goal in (("write", w_cpu, w_wall, WRITE_GOAL), ("load", l_cpu, l_wall, LOAD_GOAL)):
        med = statistics.median(cpu)
        rate = n / med
        print(
            f"{name + ':':6s} {rate:>11,.0f} events/s ({n / min(cpu):,.0f})  {med:.3f} s CPU, "
            f"{statistics.median(wall):.3f} s wall   goal >= {goal:,}: {_verdict(rate >= goal)}"
        )


_PEAK_SCRIPT = r"""
import sys
import gradviz as torch
from gradviz.trace import trace

def hwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

n = int(sys.argv[1])
x = torch.tensor([1.0, 2.0], requires_grad=True)
(x * 2.0).sum().backward()  # everything imported and warm before the baseline
before = hwm_kb()
with trace(sys.argv[2]) as rec:
    while rec.count < n:
        (x * 2.0).sum().backward()
print(rec.count, before, hwm_kb())
"""


def bench_peak(n: int, tmp: Path) -> None:
    """Peak RSS of a fresh process recording n events of real backward passes to a file."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(n), str(tmp / "peak.trace.json")],
        capture_output=True, text=True, check=True, cwd=BENCH_DIR.parent,
    )
    count, before, after = (int(v) for v in out.stdout.split())
    peak = after / 1024
    print(
        f"recording {count:,} events: peak RSS {peak:.0f} MB ({before / 1024:.0f} MB before recording)"
        f"   goal < {PEAK_GOAL_MB} MB: {_verdict(peak < PEAK_GOAL_MB)}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, one round: a smoke run")
    p.add_argument("--events", type=int, default=None, help="events for the write/load rates (default 1,000,000)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds (default 5; quick 1)")
    p.add_argument("--stdlib", action="store_true", help="without msgspec and orjson: the stdlib json fallback's rates")
    args = p.parse_args()
    if args.stdlib:
        for name in ("msgspec", "orjson"):
            sys.modules[name] = None  # type: ignore[assignment]  # the import fails: codec falls back
    import _harness as h

    h.pin_threads([])
    n = args.events or (20_000 if args.quick else 1_000_000)
    rounds = args.rounds or (1 if args.quick else 5)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        # first, while this process is small: its memory is not the recording's
        bench_peak(20_000 if args.quick else 1_000_000, tmp)
        bench_write_load(n, rounds, tmp)
    print("what recording costs a backward (W1, W3): benchmarks/bench_recording.py")


if __name__ == "__main__":
    main()
