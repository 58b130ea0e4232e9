"""Render synthetic backward-shaped graphs of 1,000, 5,000 and 20,000 nodes; report the times.

    python benchmarks/bench_render.py            # 1k, 5k, 20k nodes; default and --expand
    python benchmarks/bench_render.py --quick    # 1k nodes only

Goals: a 5,000-node graph renders in under 10 s, a 20,000-node graph in under 60 s.
"render" is what `gradviz render TRACE -o out.svg` does after loading the trace: build the
graph model, collapse it to at most --max-nodes boxes, write DOT, run graphviz to SVG; "load +
render" adds reading the trace file, and is what the goals are checked against. The
traces come from tests.synth.backward_graph: "mlp" (repeated layers), "chain" (long
runs of unary ops with scale parameters and residual adds), "wide" (many identical branches
summed). The --expand rows draw every node (compact labels, then gradviz's fixed layout).
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradviz.render import render  # noqa: E402
from gradviz.trace.file import load, save  # noqa: E402
from gradviz.trace.model import Trace  # noqa: E402
from tests.synth import backward_graph  # noqa: E402

GOALS = {1000: None, 5000: 10.0, 20000: 60.0}  # seconds


def run(kind: str, nodes: int, out: Path, *, expand: bool) -> tuple[float, float, object]:
    """(seconds to render, seconds to load the trace file and render, the picture)."""
    events = backward_graph(kind, nodes).finish()
    path = out / f"{kind}-{nodes}.trace.json"
    if not path.exists():
        save(events, path)
    svg = out / f"{kind}-{nodes}{'-x' if expand else ''}.svg"
    trace = Trace(events)
    t = time.perf_counter()
    pics = render(trace, svg, expand=expand)
    alone = time.perf_counter() - t
    t = time.perf_counter()
    render(load(path), svg, expand=expand)  # what `gradviz render TRACE` does
    return alone, time.perf_counter() - t, pics[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 nodes only")
    ap.add_argument("--no-expand", action="store_true", help="skip the --expand rows")
    args = ap.parse_args()
    if shutil.which("dot") is None:
        sys.exit("bench_render: graphviz 'dot' is not installed (apt-get install graphviz)")
    dot_version = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    sizes = [1000] if args.quick else [1000, 5000, 20000]
    print(f"render benchmark: {platform.python_version()}, {dot_version}, {platform.machine()}")
    print()
    print("| graph | nodes | mode | boxes drawn | layout | render s | load + render s | goal |")
    print("|---|---:|---|---:|---|---:|---:|---|")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for nodes in sizes:
            for kind in ("mlp", "chain", "wide"):
                for expand in (False,) if args.no_expand else (False, True):
                    secs, total, pic = run(kind, nodes, out, expand=expand)
                    goal = GOALS[nodes]
                    ok = goal is None or total < goal
                    failed |= not ok
                    verdict = "" if goal is None else f"< {goal:.0f} s {'ok' if ok else 'MISSED'}"
                    mode = "--expand" if expand else "default"
                    print(
                        f"| {kind} | {pic.nodes:,} | {mode} | {pic.boxes:,} | {pic.layout} | {secs:.2f} "
                        f"| {total:.2f} | {verdict} |",
                        flush=True,
                    )
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
