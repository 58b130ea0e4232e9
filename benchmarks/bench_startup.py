"""Start-up of the command line (issue 32, must-show 3): ``gradviz --version`` and ``gradviz info`` of
a trace of about 1,000 events, each a fresh process, wall time from spawn to exit; beside them the
bare interpreter and ``import gradviz as torch`` with one use of the namespace (the engine's import,
which the trace-reading commands no longer pay). Medians and ranges over runs.

    python benchmarks/bench_startup.py [--runs 9]

Goal: ``--version`` and ``info`` at most 0.5 s. ``python -X importtime -m gradviz info T`` shows what
is imported (tests/cli/test_cli_import_light.py checks that the engine is not).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHAIN = """
import gradviz as torch
x = torch.ones(3, requires_grad=True)
y = x
for _ in range(110):
    y = y * 1.01
y.sum().backward()
"""
GOAL_S = 0.5


def wall(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    py = sys.executable
    with tempfile.TemporaryDirectory() as where:
        (Path(where) / "chain.py").write_text(CHAIN)
        subprocess.run([py, "-m", "gradviz", "run", "-o", "t.json", "chain.py"], cwd=where, check=True,
                       capture_output=True, env=None)
        sys.path.insert(0, str(REPO))
        from gradviz.trace import load

        events = len(load(Path(where) / "t.json").events)
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "gradviz --version": [py, "-m", "gradviz", "--version"],
            f"gradviz info ({events} events)": [py, "-m", "gradviz", "info", "t.json"],
            "import gradviz as torch; torch.ones": [py, "-c", "import gradviz as torch; torch.ones"],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):  # alternated, so a busy moment of the machine falls on every case alike
            for name, cmd in cases.items():
                times[name].append(wall(cmd, where))
    failed = False
    print(f"{'command':44} {'median':>8} {'range':>15}   ({runs} runs, wall, fresh process each)")
    for name, ts in times.items():
        med = statistics.median(ts)
        goal = ""
        if name.startswith(("gradviz --version", "gradviz info")):
            goal = f"  goal <= {GOAL_S} s: {'holds' if med <= GOAL_S else 'MISSED'}"
            failed |= med > GOAL_S
        print(f"{name:44} {med:7.3f}s {min(ts):6.3f}-{max(ts):.3f}s{goal}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
