"""The benchmark harness: every implementation of a workload timed as its users run it.

A bench script builds ``Workload``s (one ``Impl`` per engine) and ``Claim``s (the ratios the
speed goals ask for), then calls ``main(...)``, which parses the shared command line, measures,
prints a table, and writes JSON (``benchmarks/results/<bench>.json``) that ``run_all.py`` turns
into the README table.

How it measures, and why (README.md says the same for readers of the tables):
- Each implementation runs in its own process (the bench script again, with ``--worker``), so
  one engine's imports never weigh on another's: torch's 170,000 objects in a process make
  every cyclic collection there slower, and an engine measured beside them is not measured as
  its users run it. The parent builds nothing it times.
- The garbage collector stays on and nothing is frozen, as in a user's program; no collection
  is forced between runs.
- Processes alternate: the timed runs of each implementation are split into blocks, one process
  per block, and the order of implementations rotates from block to block, so a slow phase of a
  shared 2-core machine hits every engine alike.
- Only ``run`` is timed; ``setup`` (building the input, or the forward graph a backward needs)
  is not, and what ``run`` returns is dropped after the clock stops. ``Workload.rewarm`` runs the
  step once, untimed, right before each timed run, as a training loop runs its step back to back.
- Two clocks are read around every run: process CPU time (reported by default: time spent
  descheduled by a neighbour is not in it) and wall-clock time (kept beside it).
- Medians, with min and max; the ratio subject/peer of medians from one run (``ratio``, what
  claims are judged on), of minima (``ratio_min``), and the median of per-run ratios
  (``ratio_paired``, runs paired by position).
- BLAS/OpenMP pools are the same size for every engine (one thread by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
SCHEMA = 1
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
DEFAULT_THREADS = 1
# "cpu" is the process's CPU time (every thread of it, user and system): time the process spent
# descheduled by a busy neighbour is not in it, so on a shared machine its ratios hold still
# where wall-clock ones swing. With one BLAS/OpenMP thread (the default) and no waiting on I/O,
# it is the wall time of a quiet machine. Both are always recorded; --clock picks the reported.
CLOCKS = ("wall", "cpu")
DEFAULT_CLOCK = "cpu"

# Packages whose versions go into every result file: what the numbers were measured against.
VERSIONED = ("numpy", "torch", "autograd", "mygrad", "micrograd", "orjson", "msgspec")


@dataclass
class Impl:
    """One implementation of a workload. ``run(setup())`` is what is timed."""

    name: str
    run: Callable[[Any], Any]
    setup: Callable[[], Any] = lambda: None
    # Run once before timing (untimed): raises if the implementation computes the wrong thing;
    # may return facts about the run (events written, bytes) for the JSON and the README.
    check: Callable[[], dict[str, Any] | None] | None = None


@dataclass
class Workload:
    key: str  # stable id in JSON and on the command line: "w1_backward"
    title: str  # what the README table shows
    impls: list[Impl]
    subject: str = "gradviz"  # ratios are subject/peer
    nodes: int | None = None  # graph nodes per run, for the per-node figure
    note: str = ""
    # Millisecond workloads take more rounds than the 100 ms ones for the same confidence.
    repeats_factor: int = 1
    # Run each implementation once, untimed, right before its timed run: a training loop runs
    # its step back to back, with its weights and buffers in cache, while alternation would
    # leave them evicted by the previous engine (for W3's megabytes, 10-20% on every engine).
    rewarm: bool = False


@dataclass
class Claim:
    """One speed goal: ratio(workload, subject/peer) <= limit."""

    text: str
    workload: str
    peer: str
    limit: float
    # An implementation with no engine at all (hand-written numpy): its own ratio to the peer is
    # reported beside the claim. Where that floor already exceeds the limit, no engine on the
    # floor's library can meet it on this machine, and the report says so.
    floor: str | None = None


@dataclass
class Skip:
    """An implementation that could not run here, and why (printed and kept in the JSON)."""

    name: str
    reason: str


@dataclass
class Config:
    repeats: int
    warmup: int
    quick: bool
    keep_gc: bool = True  # as users run: --no-gc turns it off while the clock runs
    isolate: bool = True  # each implementation in its own process (--in-process: all in this one)
    blocks: int = 3  # processes per implementation, alternating (quick: 1)
    worker: bool = False  # this process times one implementation of one workload for a parent
    only_workloads: Sequence[str] = ()
    only_impls: Sequence[str] = ()
    json_path: Path | None = None
    threads: int = DEFAULT_THREADS
    clock: str = DEFAULT_CLOCK
    extra: dict[str, Any] = field(default_factory=dict)  # bench-specific keys for the JSON
    cleanups: list[Callable[[], None]] = field(default_factory=list)  # run after measuring
    script: Path | None = None  # the bench script, run again as each worker

    def wants(self, name: str) -> bool:
        """Whether implementation ``name`` is built in this process: a worker builds only its
        own, so a peer's imports (torch's) never enter another engine's process."""
        return not self.worker or name in self.only_impls


# -- threads ---------------------------------------------------------------------------------


def pin_threads(argv: Sequence[str] | None = None) -> int:
    """Fix the BLAS/OpenMP pool sizes from ``--threads N`` (default 1; 0 leaves the libraries'
    defaults) before numpy or torch is imported, which is when they read them.

    Why one thread by default: on the 2-core reference machine, numpy's OpenBLAS pool and torch's
    OpenMP pool, woken alternately every millisecond, spin against each other and turn a 1 ms MLP
    step into 10-200 ms at random. With one thread each, every engine runs the same kernels and
    the ratios measure the engines.
    """
    argv = sys.argv[1:] if argv is None else argv
    n = DEFAULT_THREADS
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            n = int(argv[i + 1])
        elif a.startswith("--threads="):
            n = int(a.split("=", 1)[1])
    if n > 0:
        for var in THREAD_VARS:
            os.environ[var] = str(n)
    return n


# -- measuring -------------------------------------------------------------------------------


def _time_once(impl: Impl, keep_gc: bool, rewarm: bool = False) -> tuple[float, float]:
    """(wall ms, process CPU ms) of one run."""
    if rewarm:
        impl.run(impl.setup())
    arg = impl.setup()
    if not keep_gc:
        gc.collect()
        gc.disable()
    try:
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        out = impl.run(arg)
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
    finally:
        gc.enable()
    del out, arg
    return (t1 - t0) / 1e6, (c1 - c0) / 1e6


def measure(
    workload: Workload, repeats: int, warmup: int, keep_gc: bool = False
) -> dict[str, dict[str, list[float]]]:
    """Times (ms) per clock ("wall", "cpu") per implementation: ``warmup`` untimed rounds, then
    ``repeats`` timed ones."""
    impls = workload.impls
    times: dict[str, dict[str, list[float]]] = {clock: {i.name: [] for i in impls} for clock in CLOCKS}
    for r in range(warmup + repeats):
        k = r % len(impls)
        for impl in impls[k:] + impls[:k]:
            wall, cpu = _time_once(impl, keep_gc, workload.rewarm)
            if r >= warmup:
                times["wall"][impl.name].append(wall)
                times["cpu"][impl.name].append(cpu)
    return times


def summarize(times: list[float]) -> dict[str, Any]:
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "runs": len(times),
    }


def ratios(
    workload: Workload, stats: dict[str, dict[str, Any]], times: dict[str, list[float]]
) -> dict[str, dict[str, float]]:
    """subject/peer: of medians, of minima, and the median of per-round ratios ("paired": the
    two runs of a round are seconds apart, so a slow phase of the machine cancels out)."""
    subject = stats.get(workload.subject)
    if subject is None:
        return {}
    mine = times[workload.subject]
    out = {}
    for name, s in stats.items():
        if name == workload.subject:
            continue
        out[name] = {
            "ratio": subject["median_ms"] / s["median_ms"],
            "ratio_min": subject["min_ms"] / s["min_ms"],
            "ratio_paired": statistics.median(a / b for a, b in zip(mine, times[name])),
        }
    return out


def _chosen(workload: Workload, cfg: Config) -> list[Impl]:
    """The implementations --impl asked for, and always the subject (every ratio is against it)."""
    only = cfg.only_impls
    return [i for i in workload.impls if not only or i.name in only or i.name == workload.subject]


WORKER_MARK = "@@gradviz-bench-worker "


def _worker_argv(cfg: Config, key: str, impl: str, repeats: int, warmup: int) -> list[str]:
    argv = [sys.executable, str(cfg.script), "--worker", "--workload", key, "--impl", impl]
    argv += ["--repeats", str(repeats), "--warmup", str(warmup), "--threads", str(cfg.threads)]
    if cfg.quick:
        argv.append("--quick")
    if not cfg.keep_gc:
        argv.append("--no-gc")
    return argv


def _spawn(cfg: Config, key: str, impl: str, repeats: int, warmup: int) -> dict[str, Any]:
    """One worker process: its check's facts and its times, read from its last marked line."""
    proc = subprocess.run(_worker_argv(cfg, key, impl, repeats, warmup), capture_output=True, text=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(WORKER_MARK):
            return json.loads(line[len(WORKER_MARK):])
    raise SystemExit(f"worker {impl} of {key} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def measure_isolated(workload: Workload, cfg: Config) -> tuple[dict[str, dict[str, list[float]]], dict[str, Any]]:
    """Times per clock per implementation, each block of runs in a process of its own."""
    f = workload.repeats_factor
    repeats, warmup = cfg.repeats * f, cfg.warmup * f
    blocks = max(1, min(cfg.blocks, repeats))
    per = [repeats // blocks + (1 if b < repeats % blocks else 0) for b in range(blocks)]
    impls = [i.name for i in workload.impls]
    times: dict[str, dict[str, list[float]]] = {clock: {n: [] for n in impls} for clock in CLOCKS}
    facts: dict[str, Any] = {}
    for b, runs in enumerate(per):
        k = b % len(impls)
        for name in impls[k:] + impls[:k]:
            got = _spawn(cfg, workload.key, name, runs, warmup)
            for clock in CLOCKS:
                times[clock][name] += got["times"][clock]
            if got.get("facts") and name not in facts:
                facts[name] = got["facts"]
    return times, facts


def run_worker(workload: Workload, cfg: Config) -> None:
    """A worker's whole life: check, warm up, time, and hand the times to the parent."""
    (impl,) = [i for i in workload.impls if i.name in cfg.only_impls]
    facts = impl.check() if impl.check is not None else None
    times: dict[str, list[float]] = {clock: [] for clock in CLOCKS}
    for r in range(cfg.warmup + cfg.repeats):
        wall, cpu = _time_once(impl, cfg.keep_gc, workload.rewarm)
        if r >= cfg.warmup:
            times["wall"].append(wall)
            times["cpu"].append(cpu)
    print(WORKER_MARK + json.dumps({"times": times, "facts": facts or None}), flush=True)


def run_workload(workload: Workload, cfg: Config) -> dict[str, Any]:
    impls = _chosen(workload, cfg)
    workload = dataclasses.replace(workload, impls=impls)
    if cfg.isolate:
        both, facts = measure_isolated(workload, cfg)
    else:
        facts = {}
        for impl in impls:
            if impl.check is not None:
                got = impl.check()
                if got:
                    facts[impl.name] = got
        f = workload.repeats_factor
        both = measure(workload, cfg.repeats * f, cfg.warmup * f, cfg.keep_gc)
    times = both[cfg.clock]
    stats = {name: summarize(t) for name, t in times.items()}
    other = next(c for c in CLOCKS if c != cfg.clock)
    for name, s in stats.items():
        s[f"{other}_median_ms"] = statistics.median(both[other][name])
    if workload.nodes:
        for s in stats.values():
            s["us_per_node"] = s["median_ms"] * 1e3 / workload.nodes
    return {
        "key": workload.key,
        "title": workload.title,
        "subject": workload.subject,
        "nodes": workload.nodes,
        "note": workload.note,
        "facts": facts,
        "results": stats,
        "ratios": ratios(workload, stats, times),
        "times_ms": times,
        f"{other}_times_ms": both[other],
    }


def evaluate(claims: Sequence[Claim], workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_key = {w["key"]: w for w in workloads}
    out = []
    for c in claims:
        w = by_key.get(c.workload)
        r = w["ratios"].get(c.peer) if w else None
        entry: dict[str, Any] = {"text": c.text, "workload": c.workload, "peer": c.peer, "limit": c.limit}
        if r is None:
            entry.update(ratio=None, holds=None, why="not measured in this run")
        else:
            entry.update(
                ratio=r["ratio"], ratio_min=r["ratio_min"], ratio_paired=r["ratio_paired"], holds=r["ratio"] <= c.limit
            )
        res = w["results"] if w else {}
        if c.floor and c.floor in res and c.peer in res:
            entry["floor"] = c.floor
            entry["floor_ratio"] = res[c.floor]["median_ms"] / res[c.peer]["median_ms"]
        out.append(entry)
    return out


# -- environment -----------------------------------------------------------------------------


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "system": platform.system(),
        "cpus": os.cpu_count(),
        "versions": versions(),
    }


# -- output ----------------------------------------------------------------------------------


def fmt_ms(ms: float) -> str:
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def fmt_ratio(r: float | None) -> str:
    return "—" if r is None else f"{r:.2f}×"


def impl_order(workloads: list[dict[str, Any]]) -> list[str]:
    """Column order: each workload's subject first, then peers in first-seen order."""
    names: list[str] = []
    for w in workloads:
        for name in [w["subject"], *w["results"]]:
            if name not in names:
                names.append(name)
    return names


def markdown(result: dict[str, Any]) -> str:
    """Two tables (times; ratios subject/peer) and the claims, for README and terminal alike."""
    workloads = result["workloads"]
    if not workloads:
        return "_no workloads measured_\n"
    names = impl_order(workloads)
    clock = {"cpu": "process CPU time", "wall": "wall-clock time"}[result.get("clock", "wall")]
    lines = [
        f"Median ms of {clock} (min–max) over " + _runs_text(workloads) + ":",
        "",
        "| workload | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for w in workloads:
        cells = []
        for name in names:
            s = w["results"].get(name)
            if s is None:
                cells.append("—")
                continue
            cell = f"{fmt_ms(s['median_ms'])} ({fmt_ms(s['min_ms'])}–{fmt_ms(s['max_ms'])})"
            if "us_per_node" in s:
                cell += f"<br>{s['us_per_node']:.1f} µs/node"
            cells.append(cell)
        lines.append(f"| {w['title']} | " + " | ".join(cells) + " |")
    peers = [n for n in names if any(n in w["ratios"] for w in workloads)]
    if peers:
        lines += [
            "",
            "Ratio subject/peer: of medians (of minima; median of per-run ratios); below 1 the subject is faster:",
            "",
            "| workload | subject | " + " | ".join(f"vs {p}" for p in peers) + " |",
            "|---|---|" + "---:|" * len(peers),
        ]
        for w in workloads:
            cells = []
            for p in peers:
                r = w["ratios"].get(p)
                cells.append(
                    "—" if r is None
                    else f"{fmt_ratio(r['ratio'])} ({fmt_ratio(r['ratio_min'])}; {fmt_ratio(r.get('ratio_paired'))})"
                )
            lines.append(f"| {w['title']} | {w['subject']} | " + " | ".join(cells) + " |")
    notes = []
    for w in workloads:
        parts = [w["note"]] if w.get("note") else []
        for name, facts in (w.get("facts") or {}).items():
            parts.append(f"{name}: " + ", ".join(f"{k} {_fmt_fact(v)}" for k, v in facts.items()))
        if parts:
            notes.append(f"- {w['title']}: " + "; ".join(parts) + ".")
    if notes:
        lines += ["", *notes]
    claims = result.get("claims") or []
    if claims:
        lines += ["", "Speed goals measured in this run:", ""]
        for c in claims:
            mark = {True: "holds", False: "**does not hold**", None: "not measured"}[c["holds"]]
            got = "" if c["ratio"] is None else f": {c['ratio']:.2f}× (limit {c['limit']:.2f}×)"
            lines.append(f"- {c['text']}{got} — {mark}")
            if c.get("floor_ratio") is not None:
                f = c["floor_ratio"]
                above = ": above the limit, so no engine on its library meets it here" if f > c["limit"] else ""
                lines.append(f"  - the floor ({c['floor']}, no engine at all): {f:.2f}× {c['peer']}{above}")
    skipped = result.get("skipped") or {}
    if skipped:
        lines += ["", "Not run: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()) + "."]
    return "\n".join(lines) + "\n"


def _fmt_fact(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def _runs_text(workloads: list[dict[str, Any]]) -> str:
    runs = sorted({s["runs"] for w in workloads for s in w["results"].values()})
    each = f"{runs[0]} runs" if len(runs) == 1 else f"{runs[0]}–{runs[-1]} runs"
    return each + " each, every engine in processes of its own"


def default_json_path(bench: str, quick: bool) -> Path:
    # Quick runs go to their own file so a CI smoke run never overwrites the figures of record.
    return RESULTS_DIR / (f"{bench}-quick.json" if quick else f"{bench}.json")


def write_json(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


# -- command line ----------------------------------------------------------------------------


def parser(description: str, repeats: int, warmup: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="smaller sizes and few repeats: a CI smoke run")
    p.add_argument("--repeats", type=int, default=None, help=f"timed rounds (default {repeats}; quick 3)")
    p.add_argument("--warmup", type=int, default=None, help=f"untimed rounds first (default {warmup}; quick 1)")
    p.add_argument("--workload", action="append", default=[], help="only these workload keys (repeatable)")
    p.add_argument("--impl", action="append", default=[], help="only these implementations (repeatable)")
    p.add_argument("--json", type=Path, default=None, help="where to write the results (default results/)")
    p.add_argument("--no-gc", action="store_true", help="turn the garbage collector off while the clock runs")
    p.add_argument(
        "--in-process", action="store_true",
        help="time every implementation in this one process, alternating (default: one process each)",
    )
    p.add_argument("--blocks", type=int, default=None, help="processes per implementation (default 3; quick 1)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--check", action="store_true", help="exit 1 if a must-show claim does not hold")
    p.add_argument("--list", action="store_true", help="list workloads and implementations, then exit")
    p.add_argument(
        "--threads", type=int, default=DEFAULT_THREADS,
        help=f"BLAS/OpenMP threads for every engine (default {DEFAULT_THREADS}; 0: the libraries' own)",
    )
    p.add_argument(
        "--clock", choices=CLOCKS, default=DEFAULT_CLOCK,
        help=f"what medians and ratios are of (default {DEFAULT_CLOCK}: process CPU time; wall for --threads > 1)",
    )
    p.set_defaults(_repeats=repeats, _warmup=warmup)
    return p


def config(args: argparse.Namespace) -> Config:
    return Config(
        repeats=args.repeats if args.repeats is not None else (3 if args.quick else args._repeats),
        warmup=args.warmup if args.warmup is not None else (1 if args.quick else args._warmup),
        quick=args.quick,
        keep_gc=not args.no_gc,
        isolate=not args.in_process,
        blocks=args.blocks if args.blocks is not None else (1 if args.quick else 3),
        worker=args.worker,
        only_workloads=args.workload,
        only_impls=args.impl,
        json_path=args.json,
        threads=args.threads,
        clock=args.clock,
    )


def run_bench(
    bench: str,
    workloads: list[Workload],
    claims: Sequence[Claim],
    skipped: Sequence[Skip],
    cfg: Config,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    selected = [w for w in workloads if not cfg.only_workloads or w.key in cfg.only_workloads]
    unknown = set(cfg.only_workloads) - {w.key for w in workloads}
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(sorted(unknown))}; known: {[w.key for w in workloads]}")
    for s in skipped:
        log(f"skip {s.name}: {s.reason}")
    measured = []
    for w in selected:
        f = w.repeats_factor
        log(f"{w.key}: {', '.join(i.name for i in _chosen(w, cfg))} x {cfg.repeats * f} (+{cfg.warmup * f} warmup)")
        measured.append(run_workload(w, cfg))
    return {
        "schema": SCHEMA,
        "bench": bench,
        "quick": cfg.quick,
        "repeats": cfg.repeats,
        "warmup": cfg.warmup,
        "gc_during_timing": cfg.keep_gc,
        "one_process_per_impl": cfg.isolate,
        "blocks": cfg.blocks if cfg.isolate else None,
        "threads": cfg.threads,
        "clock": cfg.clock,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": environment(),
        "skipped": {s.name: s.reason for s in skipped},
        "workloads": measured,
        "claims": evaluate(claims, measured),
        **cfg.extra,
    }


def main(
    bench: str,
    description: str,
    build: Callable[[Config], tuple[list[Workload], list[Claim], list[Skip]]],
    repeats: int = 15,
    warmup: int = 2,
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The whole command line of a bench script: parse, build workloads for the mode, measure,
    print the tables, write the JSON; with ``--check``, exit 1 when a claim does not hold."""
    args = parser(description, repeats, warmup).parse_args(argv)
    cfg = config(args)
    cfg.script = Path(sys.modules[build.__module__].__file__ or sys.argv[0]).resolve()
    if cfg.worker:
        if len(cfg.only_workloads) != 1 or len(cfg.only_impls) != 1:
            raise SystemExit("--worker takes one --workload and one --impl")
        workloads, _, _ = build(cfg)
        try:
            run_worker(next(w for w in workloads if w.key == cfg.only_workloads[0]), cfg)
        finally:
            for cleanup in cfg.cleanups:
                cleanup()
        return {}
    workloads, claims, skipped = build(cfg)
    try:
        if args.list:
            for w in workloads:
                print(f"{w.key:16} {w.title}: {', '.join(i.name for i in w.impls)}")
            for s in skipped:
                print(f"(skipped) {s.name}: {s.reason}")
            return {}
        result = run_bench(bench, workloads, claims, skipped, cfg, log=lambda m: print(m, file=sys.stderr))
    finally:
        for cleanup in cfg.cleanups:
            cleanup()
    print(markdown(result))
    path = cfg.json_path or default_json_path(bench, cfg.quick)
    write_json(path, result)
    print(f"wrote {path}", file=sys.stderr)
    if args.check and any(c["holds"] is False for c in result["claims"]):
        raise SystemExit(1)
    return result
