"""Turn a d2l-en chapter (markdown with one code block per framework) into a corpus program: the
blocks marked `%%tab pytorch` (or `%%tab all`), in order, each under a `# block N` comment.

    python tests/corpus/d2l2py.py CHAPTER.md [--drop SUBSTRING]... > program.py

`%` lines go (d2lbook magics), and so does any line containing a --drop substring (the d2l
package's plotting calls: d2l is not installed, and a picture is not what the corpus measures).
"""

from __future__ import annotations

import argparse
import re
import sys


def convert(md: str, drop: list[str]) -> str:
    out = []
    for n, m in enumerate(re.finditer(r"```\{\.python \.input[^}]*\}\n(.*?)```", md, re.S)):
        lines = m.group(1).splitlines()
        if not lines or not lines[0].startswith("%%tab"):
            continue
        tabs = {t.strip() for t in lines[0][len("%%tab") :].split(",")}
        if not tabs & {"pytorch", "all"}:
            continue
        body = [ln for ln in lines[1:] if not ln.lstrip().startswith("%") and not any(d in ln for d in drop)]
        if any(ln.strip() for ln in body):
            out.append(f"# block {n}\n" + "\n".join(body).rstrip() + "\n")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chapter")
    ap.add_argument("--drop", action="append", default=[])
    args = ap.parse_args()
    with open(args.chapter) as f:
        sys.stdout.write(convert(f.read(), args.drop))


if __name__ == "__main__":
    main()
