"""What the fault tests share: the environment their subprocesses run in, the program that
crashes inside a backward, writing a script, loading a damaged trace without its warnings
escaping, a memory cap for a child, and counting what a reader reads."""

from __future__ import annotations

import os
import textwrap
import warnings
from pathlib import Path
from typing import Any

from gradviz.trace import TraceWarning, load

# One BLAS thread, and no faulthandler of the user's: the recorder's crash marker is the one
# under test.
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
ENV.pop("PYTHONFAULTHANDLER", None)

# BEFORE passes complete; then a pass whose custom Function's backward crashes the way CRASH says
# after N MulBackward0 nodes (and a SumBackward0) ran ("kill": it tells the test, which sends
# SIGKILL). ``{module}``: gradviz, or torch for a real-torch recording.
_CRASH_SCRIPT = """
import ctypes, os, sys, time
import {module} as torch

N, BEFORE, CRASH = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

class Crash(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        if CRASH == "segv":
            ctypes.string_at(0)
        if CRASH == "kill":
            print("crash now", flush=True)
            time.sleep(60)
        os._exit(3)

w = torch.tensor([1.0, 2.0], requires_grad=True)
for _ in range(BEFORE):
    (w * 3).sum().backward()
y = Crash.apply(w)
for _ in range(N):
    y = y * 1.5
y.sum().backward()
"""


def crash_script(module: str) -> str:
    """The crashing program on ``module`` ("gradviz" or "torch")."""
    return _CRASH_SCRIPT.format(module=module)


def write_script(tmp_path: Path, text: str) -> Path:
    """``text`` (dedented) as tmp_path/prog.py."""
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent(text))
    return p


def load_quietly(path: Path) -> tuple[Any, list[str]]:
    """(the trace, the TraceWarnings its load gave) of a trace a fault may have cut short."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TraceWarning)
        t = load(path)
    return t, [str(w.message) for w in caught if issubclass(w.category, TraceWarning)]


def capped_memory(limit: int = 1 << 30) -> None:
    """A child's preexec_fn: at most ``limit`` bytes of address space (reading a whole 3 GB
    input would not fit)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def count_reads(monkeypatch: Any, module: Any) -> list[int]:
    """The sizes of the reads ``module`` makes from the files it opens, from now on."""
    sizes: list[int] = []
    real_open = open

    class Counting:
        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *a: Any) -> None:
            self.f.close()

        def read(self, n: int = -1) -> bytes:
            data = self.f.read(n)
            sizes.append(len(data))
            return data

        def __getattr__(self, name: str) -> Any:
            return getattr(self.f, name)

    monkeypatch.setattr(module, "open", lambda *a, **k: Counting(real_open(*a, **k)), raising=False)
    return sizes
