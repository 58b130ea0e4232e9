"""`gradviz view` on a 200,000-node trace: how long the page takes to open in headless Chromium,
and how much memory the browser uses. Goals: opens in under 5 s, under 500 MB.

    python benchmarks/bench_view.py               # 200k nodes (mlp-shaped), 3 runs
    python benchmarks/bench_view.py --nodes 20000 --runs 5

What is measured:
- "build": `gradviz view TRACE -o page.html` in its own process (load, one fold, render, page), wall.
- "open": Chromium (Debian's `chromium --headless`) loading the page from file:// at a step in the
  middle, running its script to the end (data inflated, states applied, graph coloured) and
  taking a screenshot, minus the same for an empty page (the browser's own start and screenshot),
  medians over runs, wall clock. `--virtual-time-budget` makes Chromium wait for the page's
  promises; it fast-forwards only idle time, so script time is all counted.
- That the page finished: once, the DOM dumped afterwards must carry ``data-ready="1"``.
- "memory": the browser's processes polled every 20 ms during each open; the peak of the largest
  one's RSS (the renderer that holds the page: the goal is judged on it) and of all of them summed
  (PSS: shared pages counted once overall), each beside an empty page's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradviz.trace.file import save  # noqa: E402
from tests.synth import backward_graph  # noqa: E402

GOAL_S = 5.0
GOAL_MB = 500.0


def _tree(pid: int) -> list[int]:
    """pid and its descendants (Linux /proc)."""
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        x = todo.pop()
        out.append(x)
        todo.extend(kids.get(x, []))
    return out


def _mem(pid: int) -> tuple[float, float]:
    """(summed PSS, largest RSS) of a process tree, in MB."""
    pss = rss = 0.0
    for p in _tree(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) / 1024
                elif line.startswith("Rss:"):
                    rss = max(rss, int(line.split()[1]) / 1024)
        except OSError:
            continue
    return pss, rss


def chromium(exe: str, url: str, profile: Path, shot: Path) -> tuple[float, float, float]:
    """(wall seconds, peak summed PSS MB, peak single RSS MB) of one headless load + screenshot."""
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
           f"--user-data-dir={profile}",
           "--virtual-time-budget=60000", "--window-size=1400,1000", f"--screenshot={shot}", url]
    peak = [0.0, 0.0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            pss, rss = _mem(proc.pid)
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)
            time.sleep(0.02)

    th = threading.Thread(target=poll)
    th.start()
    proc.wait()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    if proc.returncode != 0:
        raise SystemExit(f"chromium failed ({proc.returncode}) on {url}")
    return wall, peak[0], peak[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="keep the trace and page in this folder")
    args = ap.parse_args()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("bench_view: chromium is not installed (apt-get install chromium)")
    work = args.keep or Path(tempfile.mkdtemp(prefix="gradviz-bench-view-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / f"mlp{args.nodes}.trace.json"
    page = work / f"mlp{args.nodes}.html"
    if not trace.exists():
        save(backward_graph("mlp", args.nodes).finish(), trace)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gradviz", "view", str(trace), "-o", str(page)], check=True,
                   stdout=subprocess.DEVNULL)
    build = time.perf_counter() - t0
    n_events = sum(1 for _ in trace.open("rb")) - 1
    empty = work / "empty.html"
    empty.write_text("<!DOCTYPE html><html><body>empty</body></html>")
    url = f"{page.resolve().as_uri()}#step={n_events // 2}"
    profile = work / "profile"
    base, runs = [], []
    for _ in range(args.runs):  # alternate, so a slow phase of a shared machine hits both
        base.append(chromium(exe, empty.resolve().as_uri(), profile, work / "empty.png"))
        runs.append(chromium(exe, url, profile, work / "page.png"))
    dump = [exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--virtual-time-budget=60000", "--dump-dom", url]
    dom = subprocess.run(dump, capture_output=True, check=True)
    ready = b'data-ready="1"' in dom.stdout
    opens = [r[0] - b[0] for r, b in zip(runs, base)]
    pss = [r[1] for r in runs]
    rss = [r[2] for r in runs]
    print(f"trace: {args.nodes:,} nodes, {n_events:,} events ({trace.stat().st_size / 1e6:.0f} MB); "
          f"page {page.stat().st_size / 1e6:.1f} MB")
    print(f"build (gradviz view): {build:.1f} s")
    print(f"open in chromium: median {statistics.median(opens):.2f} s (min {min(opens):.2f}, max {max(opens):.2f}; "
          f"empty page {statistics.median(b[0] for b in base):.2f} s subtracted)  goal < {GOAL_S} s")
    print(f"browser memory: peak PSS of all its processes median {statistics.median(pss):.0f} MB "
          f"(max {max(pss):.0f}; an empty page: {statistics.median(b[1] for b in base):.0f}); largest process RSS "
          f"{statistics.median(rss):.0f} MB (empty page: {statistics.median(b[2] for b in base):.0f})  "
          f"goal < {GOAL_MB:.0f} MB")
    print(f"page finished loading its data: {'yes' if ready else 'NO'}")
    print(f"chromium: {subprocess.run([exe, '--version'], capture_output=True, text=True).stdout.strip()}")
    # The memory goal is judged on the page's own process (the renderer: the largest); the sum
    # over all of Chromium's processes is printed beside it, with an empty page's for scale.
    ok = ready and statistics.median(opens) < GOAL_S and statistics.median(rss) < GOAL_MB
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
