"""`gradviz run` for the corpus's run-diff test, without paying the imports each time: a server
process per engine imports what `gradviz run --engine ENGINE` imports (torch, and the
torch._dynamo that torch's optimizers import on first use, for torch's engine; gradviz for its
own), then runs each recording asked for on stdin ("OUT<TAB>CWD<TAB>STDERR<TAB>TIMEOUT<TAB>ARG..."
lines) as the CLI's own ``main`` in a forked child, in CWD, its stderr to the file STDERR,
answering one line each: the child's exit status, or "timeout".

Each child starts from the server's fresh state: nothing of a recording reaches the server.
Importing torch and torch._dynamo costs about 3 s a process, 260 times over without the fork.

    python tests/corpus/run_cli.py --serve torch|gradviz
"""

from __future__ import annotations

import functools
import sys

from run_program import run_forked  # the corpus runner's fork: same child, same timeout


def _cli(args: list[str]) -> int:
    """The CLI's own main, as ``python -m gradviz`` runs it; its exit status."""
    from gradviz.cli import main

    try:
        main(args=args, prog_name="gradviz")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def serve(engine: str) -> int:
    import numpy  # noqa: F401 - imported once, here

    if engine == "torch":
        import torch  # noqa: F401
        import torch._dynamo  # noqa: F401 - what an optimizer's first construction imports

        import gradviz.torchrec  # noqa: F401
    import gradviz.cli  # noqa: F401
    for line in sys.stdin:
        out, cwd, stderr, timeout, *args = line.rstrip("\n").split("\t")
        run = functools.partial(_cli, ["run", "--engine", engine, "-o", out, *args])
        print(run_forked(cwd, float(timeout), run, stderr), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--serve" or sys.argv[2] not in ("torch", "gradviz"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(serve(sys.argv[2]))
