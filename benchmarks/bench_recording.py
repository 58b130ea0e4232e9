"""What recording costs: a backward under ``gradviz.trace(path)`` against the same backward
unrecorded, on the W1 chain and the W3 MLP (forward built beforehand, outside the clock and
outside the recording, so the recorder also pays for announcing nodes it did not see made).

- ``untraced``: ``loss.backward()``.
- ``trace``: ``with gradviz.trace(path): loss.backward()``: events streamed to a file on disk
  and the file closed inside the clock (no claim: the stricter measure).
- ``record``: ``with gradviz.record(): loss.backward()``: the same events kept in memory,
  which separates the cost of making events from the cost of writing them.
- ``live`` (workloads ``rec_w1_live``, ``rec_w3_live``; the claims, at most 2.5x): the recording starts before
  the forward, as ``gradviz run`` records a script, so the graph is announced as it is built,
  outside the clock; the clock holds the backward and closing the file. What a backward costs
  a user who records the whole program.

Write and load rates of trace files on their own belong to bench_trace.py.

    python benchmarks/bench_recording.py [--quick]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
for _p in (str(BENCH_DIR), str(BENCH_DIR.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import _harness as h  # noqa: E402

if __name__ == "__main__":
    h.pin_threads()

import bench_engine as eng  # noqa: E402

import gradviz  # noqa: E402


def impls(built: Any, backward: Any, path: str) -> list[h.Impl]:
    """untraced / trace / record implementations of one backward."""

    def traced(arg: Any) -> Any:
        with gradviz.trace(path) as rec:
            backward(arg)
        return rec

    def recorded(arg: Any) -> Any:
        with gradviz.record() as rec:
            backward(arg)
        return rec

    def fresh() -> Any:
        # Each timed recording makes a new file, as a user's run would; truncating the previous
        # run's trace (26 MB for W1) is the benchmark loop's artefact, not recording's cost.
        if os.path.exists(path):
            os.remove(path)
        return built()

    def check() -> dict[str, int]:
        rec = traced(fresh())
        gradviz.load(path)  # the file is a whole, loadable trace
        return {"events": rec.count, "bytes": os.path.getsize(path)}

    return [
        h.Impl("untraced", backward, built),
        h.Impl("trace", traced, fresh, check),
        h.Impl("record", recorded, built),
    ]


def live_impls(built: Any, backward: Any, path: str) -> list[h.Impl]:
    """untraced / live: the graph built inside a recording already under way (setup), the
    backward and the file's close timed."""

    def started() -> Any:
        if os.path.exists(path):
            os.remove(path)
        rec = gradviz.trace(path)
        rec.start()
        try:
            return rec, built()
        except BaseException:
            rec.stop("error")
            raise

    def live(arg: Any) -> Any:
        rec, loss = arg
        try:
            backward(loss)
        finally:
            rec.stop()
        return rec

    def check() -> dict[str, int]:
        rec = live(started())
        gradviz.load(path)
        return {"events": rec.count, "bytes": os.path.getsize(path)}

    return [h.Impl("untraced", backward, built), h.Impl("live", live, started, check)]


def build(cfg: h.Config) -> tuple[list[h.Workload], list[h.Claim], list[h.Skip]]:
    if not callable(getattr(gradviz, "trace", None)):
        return [], [], [h.Skip("trace", "gradviz.trace is not available in this checkout")]
    sizes = eng.QUICK if cfg.quick else eng.FULL
    n = sizes["w1_n"]
    tmp = tempfile.mkdtemp(prefix="gradviz-bench-rec-")
    cfg.cleanups.append(lambda: shutil.rmtree(tmp, ignore_errors=True))

    def w1_built() -> Any:
        return eng.w1_forward(gradviz.ones(1, requires_grad=True), n)

    data = eng.mlp_data()
    params = [gradviz.tensor(a, requires_grad=True) for a in data.params]
    x = gradviz.tensor(data.x)
    cross_entropy, target, _ = eng.cross_entropy_for(gradviz, data)

    def w3_built() -> Any:
        for p in params:
            p.grad = None
        return eng.mlp_loss(params, x, target, cross_entropy)

    def backward(loss: Any) -> None:
        loss.backward()

    w1 = impls(w1_built, backward, os.path.join(tmp, "w1.trace.json"))
    w3 = impls(w3_built, backward, os.path.join(tmp, "w3.trace.json"))
    w1_live = live_impls(w1_built, backward, os.path.join(tmp, "w1.live.json"))
    w3_live = live_impls(w3_built, backward, os.path.join(tmp, "w3.live.json"))
    workloads = [
        h.Workload(
            "rec_w1", f"W1 chain backward ({n:,} steps), recorded", w1, subject="trace", nodes=2 * n + 1,
            note="no claim: the graph was built before the recording, which announces it first",
        ),
        h.Workload(
            "rec_w3", "W3 MLP backward, recorded", w3, subject="trace",
            repeats_factor=sizes["mlp_repeats_factor"], rewarm=True,
        ),
        h.Workload(
            "rec_w1_live", f"W1 chain backward ({n:,} steps), recorded as built", w1_live, subject="live",
            nodes=2 * n + 1, note="the recording began before the forward, as gradviz run's",
        ),
        h.Workload(
            "rec_w3_live", "W3 MLP backward, recorded as built", w3_live, subject="live",
            repeats_factor=sizes["mlp_repeats_factor"], rewarm=True,
            note="the recording began before the forward, as gradviz run's",
        ),
    ]
    claims = [
        h.Claim("Recording the W1 backward as gradviz run does costs at most 2.5×", "rec_w1_live", "untraced", 2.5),
        h.Claim("Recording the W3 backward as gradviz run does costs at most 2.5×", "rec_w3_live", "untraced", 2.5),
    ]
    return workloads, claims, []


def main(argv: list[str] | None = None) -> dict:
    return h.main("recording", __doc__.split("\n\n")[0], build, repeats=15, warmup=2, argv=argv)


if __name__ == "__main__":
    main()
