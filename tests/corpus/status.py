"""The corpus's status against the gradviz in this tree: one line per program (match, or the first
missing API, error or difference), and, with --write, tests/corpus/expected.py regenerated from it.

    .venv/bin/python tests/corpus/status.py [--write] [--jobs N] [NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402


def reason(status: str, detail: str) -> str:
    if status == "missing":
        return f"gradviz has no {detail}"
    return f"{status}: {detail}"[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="programs to run (default: all)")
    ap.add_argument("--write", action="store_true", help="rewrite tests/corpus/expected.py from this run")
    ap.add_argument("--jobs", type=int, default=1, help="programs at once (each runs torch and gradviz side by side)")
    args = ap.parse_args()
    names = args.names or harness.programs()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = dict(zip(names, pool.map(lambda n: harness.outcome(*harness.run_both(n)), names)))
    width = max(len(n) for n in names)
    print(f"| {'program':<{width}} | status | first missing API / first difference |")
    print(f"|{'-' * (width + 2)}|--------|---|")
    for n in names:
        status, detail = results[n]
        print(f"| {n:<{width}} | {status} | {detail.replace('|', '/')} |")
    counts = {s: sum(1 for v in results.values() if v[0] == s) for s in sorted({v[0] for v in results.values()})}
    print(f"\n{len(names)} programs: " + ", ".join(f"{c} {s}" for s, c in counts.items()))
    if args.write:
        if args.names:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import expected

            xfail = dict(expected.XFAIL)
        else:
            xfail = {}
        for n, (status, detail) in results.items():
            xfail.pop(n, None)
            if status != "match":
                xfail[n] = reason(status, detail)
        path = Path(__file__).resolve().parent / "expected.py"
        head = path.read_text().split("XFAIL: dict[str, str] = {")[0]
        body = "".join(f"    {n!r}: {xfail[n]!r},\n" for n in sorted(xfail))
        path.write_text(head + "XFAIL: dict[str, str] = {\n" + body + "}\n")
        print(f"wrote {path} ({len(xfail)} xfail)")
    return 1 if any(s == "torch-error" for s, _ in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
