"""Run one corpus program under real torch or under gradviz standing in for torch, and write what
its backward passes did (tests/corpus/observer.py) as JSON.

    python tests/corpus/run_program.py --engine torch|gradviz PROGRAM OUT.json
    python tests/corpus/run_program.py --serve torch|gradviz     (what the harness runs: see serve())

Always exits 0 once OUT.json is written; the JSON's ``status`` says how the program ended:
``ok``, ``missing`` (gradviz lacks a torch API: ``api`` names it, ``message`` is the one line) or
``error`` (``message`` is the exception type, text and the program's file:line).
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import sys
import traceback
import warnings
from collections.abc import Callable


def _where(tb: object) -> str:
    frames = traceback.extract_tb(tb)  # type: ignore[arg-type]
    for fr in reversed(frames):
        if "/tests/corpus/programs/" in fr.filename.replace(os.sep, "/"):
            return f"{os.path.basename(fr.filename)}:{fr.lineno}"
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"


def run_forked(cwd: str, timeout: float, run: Callable[[], int], stderr: str | None = None) -> str:
    """``run()`` in a forked child, in ``cwd``, its output to /dev/null (its stderr to the file
    ``stderr`` when given); the child's exit status, or "timeout" (the child killed) after
    ``timeout`` seconds. The child leaves by os._exit, so nothing of this process's exit code runs
    there."""
    import select
    import signal
    import time

    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.chdir(cwd)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd if stderr is None else os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            code = run()
        finally:
            sys.stderr.flush()
            os._exit(code)
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
    """Import the engine once, then run each program asked for on stdin ("PROGRAM<TAB>OUT<TAB>DIR<TAB>
    TIMEOUT" lines) in a forked child, in DIR, answering one line each: the child's exit status, or
    "timeout". Importing torch costs about 1.5 s of CPU, 47 times over otherwise: the fork saves it,
    and each program still starts from the same fresh state (nothing of a program reaches this process)."""
    import numpy  # noqa: F401 - imported once, here

    if engine == "torch":
        import torch  # noqa: F401
    else:
        import gradviz  # noqa: F401
    for line in sys.stdin:
        program, out, cwd, timeout = line.rstrip("\n").split("\t")
        status = run_forked(cwd, float(timeout), functools.partial(main, ["--engine", engine, program, out]))
        print(status, flush=True)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--serve" and argv[1] in ("torch", "gradviz"):
        return serve(argv[1])
    if len(argv) != 4 or argv[0] != "--engine" or argv[1] not in ("torch", "gradviz"):
        print(__doc__, file=sys.stderr)
        return 2
    engine, program, out = argv[1], os.path.abspath(argv[2]), argv[3]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if engine == "gradviz":
        import gradviz

        gradviz.install_as_torch()
    import observer

    observer.install()
    # torch seeds its generator from the OS at start-up: a program that does not seed would draw
    # different numbers in each run. Seeded here, as a program's own manual_seed would be.
    import random

    import numpy as np
    import torch

    torch.manual_seed(12345)  # a probe: do this engine's random numbers equal torch's?
    rng_probe = [float(v) for v in torch.rand(3).tolist()]
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    result: dict[str, object] = {
        "engine": engine,
        "program": os.path.basename(program),
        "status": "ok",
        "rng_probe": rng_probe,
    }
    sys.argv = [program]
    sys.path.insert(0, os.path.dirname(program))
    warnings.simplefilter("ignore")
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            result.update(status="error", message=f"SystemExit({e.code!r})")
    except BaseException as e:  # noqa: BLE001 - every ending is a result
        from gradviz._as_torch import missing_api

        found = missing_api(e, loose=True) if engine == "gradviz" else None
        if found:
            result.update(status="missing", api=found[0], message=found[1])
        else:
            text = str(e).splitlines()[0] if str(e) else ""
            result.update(status="error", message=f"{type(e).__name__}: {text} (at {_where(e.__traceback__)})")
            result["traceback"] = "".join(traceback.format_exception(e))[-4000:]
    result["records"] = observer.records
    with open(out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
