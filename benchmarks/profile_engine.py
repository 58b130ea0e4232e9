"""Profile gradviz on the engine workloads: where the time of one W1/W2/W3 run goes.

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
import gc
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


# Where a sample's own time goes, by the function it is in: PROFILE.md's per-node breakdown.
# Function names as py-spy prints them; "func@file" where the bare name is ambiguous.
CATEGORIES = {
    "graph building (record, Node, Edge/InputMetadata tuples)": (
        "record", "record.<locals>.<genexpr>", "Node.__init__", "Node.set_next_edges", "collect_next_edges",
        "collect_next_edges.<locals>.<listcomp>", "gradient_edge", "next_sequence_nr", "node_created",
        "grad_accumulator", "AccumulateGrad.__init__", "save", "SavedVariable.__init__", "<lambda>@<string>",
    ),
    "ready queue (push/pop, Condition, NodeTask)": (
        "ReadyQueue.push", "ReadyQueue.pop", "Condition.notify", "Condition._is_owned", "Condition.__enter__",
        "Condition.__exit__", "NodeTask.__init__", "NodeTask.key", "NodeTask.graph_task", "Engine.ready_queue",
    ),
    "engine loop (thread_main, evaluate_function, call_function)": (
        "Engine.thread_main", "Engine.evaluate_function", "Engine.call_function", "GraphTask.completed",
        "_Future.completed", "Event.is_set", "call_tensor_pre_hooks",
    ),
    "InputBuffer": ("InputBuffer.__init__", "InputBuffer.add", "InputBuffer.device", "Node.num_inputs"),
    "validate_outputs": ("validate_outputs", "device.__eq__", "_expandable_to"),
    "node apply + saved-variable unpack": (
        "OpNode.apply", "OpNode.__getitem__", "SavedVariable.unpack", "Tensor._version", "<lambda>@derivatives.py",
    ),
    "release_variables": ("OpNode.release_variables", "SavedVariable.release"),
    "AccumulateGrad (incl. its clone)": ("AccumulateGrad.apply", "clone"),
    "task setup and completion": (
        "compute_dependencies", "Engine.execute", "GraphTask.__init__", "ReadyQueue.__init__", "_make_grads",
        "GraphTask.mark_as_completed_and_run_post_processing", "Engine.execute_with_graph_task", "_run_backward",
        "GraphTask.exec_post_processing", "_Future.mark_completed", "Event.set",
    ),
}
# Files whose remaining samples are tensor ops: the Python around each numpy call and the call.
OP_FILES = ("functions.py", "tensor.py", "_dtype.py", "core.py", "device.py")


def category(func: str, file: str) -> str:
    base = Path(file).name
    if func in ("mm", "bmm", "mv", "dot") and base == "functions.py":
        return "matrix products (the BLAS call, mostly)"
    for name, funcs in CATEGORIES.items():
        if func in funcs or f"{func}@{base}" in funcs:
            return name
    if base in OP_FILES:
        return "tensor ops (Python dispatch, Tensor construction, the numpy call)"
    if "numpy" in file:
        return "numpy's Python wrappers (np.sum, np.broadcast_to, ...)"
    return "other"


_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?):(?P<line>\d+)\)$")


def summarize(raw: Path, under: str | None, top: int) -> None:
    """Self time by function and by line from py-spy's raw (collapsed) output, counting only the
    samples whose stack passes through a function named ``under`` (the timed step, not setup)."""
    funcs: Counter[str] = Counter()
    cats: Counter[str] = Counter()
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
        cats[category(names[-1], leaf.group("file") if leaf else "")] += n
        funcs[f"{names[-1]} ({where.split(':')[0]})"] += n
        lines[f"{names[-1]} {where}"] += n
        for name in set(names):
            inclusive[name] += n
    print(f"{total} samples" + (f" under {under}" if under else ""))
    tables = (
        ("self, by category", cats), ("self, by function", funcs), ("self, by line", lines), ("inclusive", inclusive)
    )
    for title, counter in tables:
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
    ap.add_argument("--gc", action="store_true", help="leave the garbage collector on (the bench turns it off)")
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
        gc.collect()
        if not args.gc:
            # As the bench does: collections would land on whichever line allocates next.
            gc.disable()
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
