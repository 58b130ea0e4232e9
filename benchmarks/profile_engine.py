"""Profile gradviz on issue 7's workloads: where the time of one W1/W2/W3 run goes.

    python benchmarks/profile_engine.py                  # cProfile, top functions by own time
    python benchmarks/profile_engine.py --workload w1_backward --top 40
    python benchmarks/profile_engine.py --pyinstrument   # call tree (pip install pyinstrument)
    py-spy record -r 2000 -f raw -o w1.txt -- python benchmarks/profile_engine.py --workload w1_backward --plain
    python benchmarks/profile_engine.py --summarize w1.txt --under thread_main   # self time by function/line

The workloads are bench_engine's, so a profile and a benchmark speak of the same code. Only the
step a benchmark times is profiled (a backward's forward is built outside the profiler).
Findings: PROFILE.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import re
import sys
from collections import Counter
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
for _p in (str(BENCH_DIR), str(BENCH_DIR.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import _harness as h  # noqa: E402

if __name__ == "__main__":
    h.pin_threads()

import bench_engine as eng  # noqa: E402

import gradviz  # noqa: E402

KEYS = ("w1_forward", "w1_backward", "w2_backward", "w3_mlp")


def gradviz_impls(rounds: int) -> dict[str, tuple[h.Impl, int]]:
    impls = eng.torch_like("gradviz", gradviz, eng.FULL)
    # W3 is a millisecond step: repeat it for a profile with enough samples.
    return {k: (impls[k], rounds * (50 if k == "w3_mlp" else 1)) for k in KEYS}


_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?):(?P<line>\d+)\)$")


def summarize(raw: Path, under: str | None, top: int) -> None:
    """Self time by function and by line from py-spy's raw (collapsed) output, counting only the
    samples whose stack passes through a function named ``under`` (the timed step, not setup)."""
    funcs: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for row in raw.read_text().splitlines():
        stack, _, count = row.rpartition(" ")
        frames = stack.split(";")
        names = [m.group("func") if (m := _FRAME.match(f)) else f for f in frames]
        if under is not None and not any(n == under or n.endswith("." + under) for n in names):
            continue
        n = int(count)
        total += n
        leaf = _FRAME.match(frames[-1])
        where = f"{Path(leaf.group('file')).name}:{leaf.group('line')}" if leaf else frames[-1]
        funcs[f"{names[-1]} ({where.split(':')[0]})"] += n
        lines[f"{names[-1]} {where}"] += n
        for name in set(names):
            inclusive[name] += n
    print(f"{total} samples" + (f" under {under}" if under else ""))
    for title, counter in (("self, by function", funcs), ("self, by line", lines), ("inclusive", inclusive)):
        print(f"\n-- {title}")
        for name, n in counter.most_common(top):
            print(f"{100 * n / max(total, 1):5.1f}%  {name}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", action="append", choices=KEYS, help="default: all four")
    ap.add_argument("--top", type=int, default=25, help="functions to list per workload")
    ap.add_argument("--rounds", type=int, default=3, help="runs profiled per workload")
    ap.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative, ...)")
    ap.add_argument("--pyinstrument", action="store_true", help="a pyinstrument call tree instead")
    ap.add_argument("--plain", action="store_true", help="no profiler: just run (for py-spy)")
    ap.add_argument("--threads", type=int, default=h.DEFAULT_THREADS, help="see _harness.pin_threads")
    ap.add_argument("--summarize", type=Path, metavar="RAW", help="summarize py-spy raw output instead")
    ap.add_argument("--under", help="with --summarize: only samples under this function")
    args = ap.parse_args(argv)
    if args.summarize:
        summarize(args.summarize, args.under, args.top)
        return

    for key, (impl, rounds) in gradviz_impls(args.rounds).items():
        if args.workload and key not in args.workload:
            continue
        impl.run(impl.setup())  # warm up: first-call imports and caches are not the engine
        args_list = [impl.setup() for _ in range(rounds)]
        print(f"\n=== {key}: {rounds} run(s) ===")
        if args.plain:
            for a in args_list:
                impl.run(a)
        elif args.pyinstrument:
            from pyinstrument import Profiler

            with Profiler(interval=0.0002) as prof:
                for a in args_list:
                    impl.run(a)
            print(prof.output_text(unicode=True, color=False, show_all=False))
        else:
            prof = cProfile.Profile()
            prof.enable()
            for a in args_list:
                impl.run(a)
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).strip_dirs().sort_stats(args.sort).print_stats(args.top)
            print(out.getvalue())


if __name__ == "__main__":
    main()
