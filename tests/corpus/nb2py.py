"""Turn a Jupyter notebook's code cells into a corpus program (used to make the makemore programs).

    python tests/corpus/nb2py.py NOTEBOOK.ipynb --skip 11,17 [--replace OLD NEW]... > program.py

Cells are kept in order, each under a `# cell N` comment; `%` magics and matplotlib lines are
dropped (there is no display); --skip names cells that cannot run as a script (plots, cells that
refer to later ones); --replace makes the size reductions, each one checked to apply.
"""

from __future__ import annotations

import argparse
import json
import sys


def convert(nb: dict, skip: set[int], replace: list[tuple[str, str]]) -> str:
    out = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or i in skip:
            continue
        lines = [
            ln for ln in "".join(cell["source"]).splitlines()
            if not ln.lstrip().startswith("%") and "plt." not in ln and "matplotlib" not in ln
        ]
        out.append(f"# cell {i}\n" + "\n".join(lines).rstrip() + "\n")
    text = "\n".join(out)
    for old, new in replace:
        if old not in text:
            raise SystemExit(f"--replace: {old!r} is not in the notebook's code")
        text = text.replace(old, new)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebook")
    ap.add_argument("--skip", default="", help="comma-separated cell numbers to leave out")
    ap.add_argument("--replace", nargs=2, action="append", default=[], metavar=("OLD", "NEW"))
    args = ap.parse_args()
    with open(args.notebook) as f:
        nb = json.load(f)
    skip = {int(s) for s in args.skip.split(",") if s}
    sys.stdout.write(convert(nb, skip, [tuple(r) for r in args.replace]))


if __name__ == "__main__":
    main()
