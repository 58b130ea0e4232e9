"""Instructions of one engine step, counted by callgrind: a measure the shared machine's load
does not move (PROFILE.md's per-node figures).

    valgrind --tool=callgrind --toggle-collect=map_next --callgrind-out-file=w1.out \\
        python benchmarks/count_engine.py w1_backward
    GRADVIZ_PURE_PYTHON=1 valgrind ... python benchmarks/count_engine.py w2_backward

The step runs once as ``list(map(step, [graph]))``: ``--toggle-collect=map_next`` then counts
it alone, on the compiled and the pure path alike. The graph is built (and one step run, to
warm caches and imports) before, with the garbage collector collected and then off. Run it
with ``PYTHONHASHSEED=0`` under ``setarch -R``; identical runs still differ by 1-2%.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
for _p in (str(BENCH_DIR), str(BENCH_DIR.parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import _harness as h  # noqa: E402

h.pin_threads()

import bench_engine as eng  # noqa: E402

import gradviz  # noqa: E402

STEPS = ("w1_forward", "w1_backward", "w2_backward")


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in STEPS:
        sys.exit(f"usage: count_engine.py {{{','.join(STEPS)}}}")
    impl = eng.torch_like("gradviz", gradviz, eng.FULL)[sys.argv[1]]
    impl.run(impl.setup())  # warm
    built = impl.setup()
    gc.collect()
    gc.disable()
    list(map(impl.run, [built]))
    print(gradviz._compiled.status()["gradviz.autograd.engine"], file=sys.stderr)


if __name__ == "__main__":
    main()
