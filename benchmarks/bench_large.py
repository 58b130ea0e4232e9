"""Large traces (issue 18, item 9): each command's time and peak memory on a recording of a
million events, each in a fresh process as a user runs it.

Traces, recorded by gradviz itself (``gradviz.trace``), so their lines are what a recording
writes (group lines included):

- ``1M``: W1's chain (y = y * 1.0001 + 0.0001, repeated) with enough steps for >= 1,000,000
  events; one graph task.
- ``200k``: the same chain with 100,000 steps: a 200,002-node graph task (about 1.8M events).

Commands and goals (time / peak memory):

- ``info 1M``: < 3 s / < 500 MB
- ``export 1M``: < 10 s / < 500 MB
- ``render --step N 200k`` (collapsed, --max-nodes default, DOT output: the layout program is
  Graphviz's, not ours): < 10 s / < 1 GB
- ``replay --step N 1M``: < 2 s / < 500 MB
- ``diff 200k 200k`` (the 1.8M-event trace with itself, issue 33): < 10 s / < 1 GB

Time is wall-clock of the whole process (start-up and imports included); peak memory is the
process's maximum resident set (``wait4``'s ru_maxrss). The commands run with their bytecode
cached, as an installed gradviz runs (pip compiles it at install): the children write and read
it under a folder of this run's (``PYTHONPYCACHEPREFIX``), whatever ``PYTHONDONTWRITEBYTECODE``
says, and one untimed run of each command comes first. Without the cache every command would
compile some 150 modules from source, 0.3-0.5 s that no installed copy pays. The machine is shared: each figure is
the median of ``--rounds`` runs, and the spread is printed beside it.

    python benchmarks/bench_large.py [--rounds 3] [--events 1000000] [--keep DIR] [--only diff] [--json FILE]

Beside each wall time: the CPU time of the process (``wait4``'s ru_utime + ru_stime) and the
machine's 1-minute load average before and after the command's rounds: on a shared machine a
busy neighbour stretches the wall clock several times over, much less the CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOALS = {  # name -> (seconds, MB)
    "info": (3.0, 500), "export": (10.0, 500), "render --step": (10.0, 1000), "replay --step": (2.0, 500),
    "diff": (10.0, 1000),
}

RECORD = """
import sys
import gradviz
steps, path = int(sys.argv[1]), sys.argv[2]
x = gradviz.ones(1, requires_grad=True)
with gradviz.trace(path) as rec:
    y = x
    for _ in range(steps):
        y = y * 1.0001 + 0.0001
    y.sum().backward()
print(rec.count)
"""


def record(steps: int, path: Path) -> int:
    out = subprocess.run([sys.executable, "-c", RECORD, str(steps), str(path)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return int(out.stdout.split()[-1])


_ENV = dict(os.environ)  # the children's: bytecode cached, as installed (see the module doc)
_ENV.pop("PYTHONDONTWRITEBYTECODE", None)


def measure(args: list[str]) -> tuple[float, float, int, float]:
    """(seconds, peak MB, exit status, CPU seconds) of ``python -m gradviz *args`` in a fresh
    process. CPU time beside wall time: on a shared machine a busy neighbour stretches the
    wall clock, not the CPU time."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "gradviz", *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, cwd=ROOT, env=_ENV)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode != 0:
        print(f"  gradviz {' '.join(args)} exited {p.returncode}: {err.strip()[-500:]}", file=sys.stderr)
    return time.perf_counter() - t, usage.ru_maxrss / 1024, p.returncode, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keep", help="a folder to keep (and reuse) the recorded traces in")
    ap.add_argument("--only", help="comma-separated command names to run "
                    "(info,export,render --step,replay --step,diff)")
    ap.add_argument("--json", help="also write the results here (with the machine's load average)")
    args = ap.parse_args(argv)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gradviz-large-"))
    tmp.mkdir(parents=True, exist_ok=True)
    big, task200k = tmp / "1M.trace.json", tmp / "200k.trace.json"
    steps = max(1, args.events * 100_000 // 1_800_000 + 1000)  # W1: about 18 events a step
    if not big.exists():
        n = record(steps, big)
        print(f"recorded {big.name}: {n:,} events, {big.stat().st_size / 1e6:.0f} MB")
    if not task200k.exists():
        n = record(100_000, task200k)
        print(f"recorded {task200k.name}: {n:,} events, {task200k.stat().st_size / 1e6:.0f} MB")
    _ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    mid = str(args.events // 2)
    runs = {
        "info": ["info", str(big)],
        "export": ["export", str(big), "-o", str(tmp / "out.perfetto.json")],
        "render --step": ["render", str(task200k), "--step", "900000", "--format", "dot", "-o", str(tmp / "g.dot")],
        "replay --step": ["replay", str(big), "--step", mid, "--width", "120"],
        "diff": ["diff", str(task200k), str(task200k)],
    }
    only = set(args.only.split(",")) if args.only else set(runs)
    results: dict[str, Any] = {}
    for name, cmd in runs.items():
        if name not in only:
            continue
        measure(cmd)  # untimed: the bytecode cache filled, the file in the page cache
        load_before = os.getloadavg()[0]
        got = [measure(cmd) for _ in range(args.rounds)]
        load = [round(load_before, 2), round(os.getloadavg()[0], 2)]  # the 1-minute load, before and after
        secs = [g[0] for g in got]
        mbs = [g[1] for g in got]
        t, mb = statistics.median(secs), statistics.median(mbs)
        cpus = [g[3] for g in got]
        cpu = statistics.median(cpus)
        goal_s, goal_mb = GOALS[name]
        ok = t < goal_s and mb < goal_mb and all(g[2] == 0 for g in got)
        results[name] = {"seconds": t, "seconds_range": [min(secs), max(secs)], "cpu_seconds": cpu,
                         "cpu_seconds_range": [min(cpus), max(cpus)], "peak_mb": mb,
                         "peak_mb_range": [min(mbs), max(mbs)], "load_average": load,
                         "goal_seconds": goal_s, "goal_mb": goal_mb, "ok": ok}
        print(f"{name:15s} {t:6.2f} s ({min(secs):.2f}-{max(secs):.2f}), "
              f"CPU {cpu:6.2f} s ({min(cpus):.2f}-{max(cpus):.2f})  {mb:6.0f} MB  load {load[0]:.1f}-{load[1]:.1f}  "
              f"goal < {goal_s:.0f} s / < {goal_mb} MB  "
              f"{'ok' if ok else 'MISSED'}")
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(results))
    if args.json:
        doc = {"bench": "large", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rounds": args.rounds,
               "cpus": os.cpu_count(), "results": results}
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
