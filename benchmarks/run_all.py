"""Run every benchmarks/bench_*.py, each in its own process, and write the README's results.

    python benchmarks/run_all.py            # full run: results/*.json and benchmarks/README.md
    python benchmarks/run_all.py --quick    # smoke run: quick JSON, tables printed, README untouched
    python benchmarks/run_all.py --only engine --only recording

A bench that uses the harness (imports ``_harness``) is run with ``--json``, ``--threads`` and,
when asked, ``--quick``, and its JSON becomes tables. Any other bench_*.py is run as it is (with
``--quick`` only if it accepts it; without, a quick run skips it) and the end of its output goes
into the README verbatim.

The results go between the markers below in benchmarks/README.md, and in the repository's
README.md too if it carries the same markers (its performance section).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

import _harness as h  # noqa: E402

BEGIN = "<!-- benchmarks:results:begin -->"
END = "<!-- benchmarks:results:end -->"
FIRST = ("engine", "recording")  # the headline figures lead; the rest follow by name
OUTPUT_TAIL = 40  # lines of a non-harness bench's output kept in the README


def discover() -> list[Path]:
    found = {p.stem.removeprefix("bench_"): p for p in BENCH_DIR.glob("bench_*.py")}
    order = [n for n in FIRST if n in found] + sorted(n for n in found if n not in FIRST)
    return [found[n] for n in order]


def uses_harness(path: Path) -> bool:
    """A harness bench imports _harness at module level and takes --json/--threads/--clock; a
    bench that only borrows a helper from it inside a function is run as it is."""
    return re.search(r"^import _harness", path.read_text(), re.MULTILINE) is not None


def run_one(path: Path, args: argparse.Namespace) -> dict:
    name = path.stem.removeprefix("bench_")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    source = path.read_text()
    if uses_harness(path):
        out = h.default_json_path(name, args.quick)
        cmd = [sys.executable, str(path), "--json", str(out), "--threads", str(args.threads), "--clock", args.clock]
        cmd += ["--quick"] if args.quick else []
    else:
        if args.quick and "--quick" not in source:
            return {"name": name, "kind": "skipped", "why": "no --quick mode; runs in full runs only"}
        out = None
        cmd = [sys.executable, str(path)] + (["--quick"] if args.quick else [])
    print(f"== {name}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"name": name, "kind": "failed", "why": f"timed out after {args.timeout} s"}
    wall = time.perf_counter() - t0
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-OUTPUT_TAIL:])
        return {"name": name, "kind": "failed", "why": f"exit {proc.returncode}", "output": tail, "wall_s": wall}
    if out is not None:
        return {"name": name, "kind": "harness", "result": json.loads(out.read_text()), "wall_s": wall}
    tail = "\n".join(proc.stdout.splitlines()[-OUTPUT_TAIL:])
    return {"name": name, "kind": "output", "output": tail, "wall_s": wall, "command": " ".join(cmd[1:])}


def section(runs: list[dict], args: argparse.Namespace) -> str:
    env = next((r["result"]["environment"] for r in runs if r["kind"] == "harness"), h.environment())
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {env['cpus']} CPUs "
        f"({env['system']} {env['machine']}), Python {env['python']}; {versions}; "
        f"BLAS/OpenMP threads: {args.threads or 'library defaults'}; clock: {args.clock}.",
        f"Reproduce: `python benchmarks/run_all.py{' --quick' if args.quick else ''}` "
        "(or one bench: `python benchmarks/bench_engine.py`).",
        "",
    ]
    for r in runs:
        lines.append(f"### {r['name']}")
        lines.append("")
        if r["kind"] == "harness":
            lines.append(h.markdown(r["result"]))
        elif r["kind"] == "output":
            lines += [f"`python benchmarks/bench_{r['name']}.py` (its own output):", "", "```", r["output"], "```", ""]
        elif r["kind"] == "skipped":
            lines += [f"Not run: {r['why']}.", ""]
        else:
            lines += [f"**Failed** ({r['why']}):", "", "```", r.get("output", ""), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def splice(path: Path, body: str) -> bool:
    """Replace what lies between the markers in ``path``; False when it has none."""
    if not path.exists():
        return False
    text = path.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return False
    path.write_text(text[: start + len(BEGIN)] + "\n" + body + text[end:])
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="each bench's quick mode; the README is left alone")
    ap.add_argument("--only", action="append", default=[], help="only these benches (engine, recording, ...)")
    ap.add_argument("--threads", type=int, default=h.DEFAULT_THREADS, help="passed to harness benches")
    ap.add_argument("--clock", choices=h.CLOCKS, default=h.DEFAULT_CLOCK, help="passed to harness benches")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per bench")
    ap.add_argument("--readme", action="store_true", help="write the README even for a quick run")
    args = ap.parse_args(argv)

    benches = [p for p in discover() if not args.only or p.stem.removeprefix("bench_") in args.only]
    runs = [run_one(p, args) for p in benches]
    body = section(runs, args)
    print(body)
    if not args.quick or args.readme:
        for readme in (BENCH_DIR / "README.md", REPO / "README.md"):
            if splice(readme, body):
                print(f"updated {readme.relative_to(REPO)}", file=sys.stderr)
    return 1 if any(r["kind"] == "failed" for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
