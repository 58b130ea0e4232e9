"""What handing events to the OS before user code costs (issue 18, item 3).

The recorder writes what it holds before the engine runs a node with user code (a custom
Function's backward, a hooked node) and when a graph task ends. Two chains, each recorded as
built (the recording starts before the forward, as ``gradviz run``'s), against the same
backward unrecorded (the performance floor: recording at most 2.5x):

- ``builtin``: W1's chain (mul and add nodes): no node runs user code, one hand-off a backward.
- ``custom``: a chain of custom Functions: a hand-off before every node, the worst case.

CPU time (process_time), garbage collector off while timing, runs interleaved, median.

    python benchmarks/bench_handoff.py [--n 10000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gradviz  # noqa: E402


class Twice(gradviz.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 1.0001

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g * 1.0001


def builtin_chain(n: int) -> Any:
    x = gradviz.ones(1, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001 + 0.5
    return y.sum()


def custom_chain(n: int) -> Any:
    x = gradviz.ones(1, requires_grad=True)
    y = x
    for _ in range(n):
        y = Twice.apply(y)
    return y.sum()


def timed(build: Any, n: int, path: str | None) -> float:
    rec = gradviz.trace(path).start() if path is not None else None
    loss = build(n)
    gc.collect()
    gc.disable()
    t = time.process_time()
    loss.backward()
    if rec is not None:
        rec.stop()
    d = time.process_time() - t
    gc.enable()
    return d


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        for name, build in (("builtin", builtin_chain), ("custom", custom_chain)):
            timed(build, args.n, None), timed(build, args.n, path)  # warm up
            plain, rec = [], []
            for _ in range(args.rounds):
                plain.append(timed(build, args.n, None))
                rec.append(timed(build, args.n, path))
            p, r = statistics.median(plain), statistics.median(rec)
            out[name] = {"untraced_ms": p * 1e3, "recorded_ms": r * 1e3, "ratio": r / p}
            print(f"{name:8s} untraced {p * 1e3:8.1f} ms   recorded as built {r * 1e3:8.1f} ms   ratio {r / p:.2f}")
    return out


if __name__ == "__main__":
    main()
