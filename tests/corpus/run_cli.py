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

import os
import select
import signal
import sys
import time


def _child(cwd: str, stderr: str, args: list[str]) -> int:
    os.chdir(cwd)
    out = os.open(os.devnull, os.O_WRONLY)
    err = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    from gradviz.cli import main

    try:
        main(args=args, prog_name="gradviz")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def run_forked(cwd: str, stderr: str, timeout: float, args: list[str]) -> str:
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = _child(cwd, stderr, args)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # nothing of the server's exit code runs in the child
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            return str(os.waitstatus_to_exitcode(st))
        select.select([], [], [], 0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "timeout"


def serve(engine: str) -> int:
    import numpy  # noqa: F401 - imported once, here

    if engine == "torch":
        import torch  # noqa: F401
        import torch._dynamo  # noqa: F401 - what an optimizer's first construction imports

        import gradviz.torchrec  # noqa: F401
    import gradviz.cli  # noqa: F401
    for line in sys.stdin:
        out, cwd, stderr, timeout, *args = line.rstrip("\n").split("\t")
        print(run_forked(cwd, stderr, float(timeout), ["run", "--engine", engine, "-o", out, *args]), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--serve" or sys.argv[2] not in ("torch", "gradviz"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(serve(sys.argv[2]))
