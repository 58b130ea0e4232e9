"""Run corpus programs under torch and under gradviz, compare the two records, and say where they
first differ. Shared by tests/corpus/test_corpus.py and tests/corpus/status.py."""

from __future__ import annotations

import atexit
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
RUNNER = HERE / "run_program.py"
TIMEOUT_S = 120

# float32 programs: the two engines may sum in different orders; losses drift a little over steps
RTOL = 2e-4
ATOL = 1e-5


def programs() -> list[str]:
    """Program names: programs/NAME.py, or programs/NAME/main.py for a program of several files."""
    return sorted([p.stem for p in PROGRAMS.glob("*.py")] + [p.parent.name for p in PROGRAMS.glob("*/main.py")])


def uses_transforms(name: str) -> bool:
    """Whether the program calls torch.func's transforms. Their engine work is not comparable task
    by task: torch runs one batched backward where gradviz runs one per sample (gradviz/func), so
    such programs are compared on the transforms' results (observer.py), not on traces."""
    text = path_of(name).read_text()
    return "torch.func" in text or "from torch import vmap" in text or "torch.vmap" in text


def path_of(name: str) -> Path:
    single = PROGRAMS / f"{name}.py"
    return single if single.exists() else PROGRAMS / name / "main.py"


class _Server:
    """One `run_program.py --serve ENGINE` process: the engine imported once, each program in a fork."""

    def __init__(self, engine: str):
        self.proc = subprocess.Popen(
            [sys.executable, str(RUNNER), "--serve", engine],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_env(),
            text=True,
        )

    def run(self, program: Path, out: str, cwd: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{program}\t{out}\t{cwd}\t{TIMEOUT_S}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip() or "server died"


    def close(self) -> None:
        """End of stdin ends the server's loop; its pipes are closed here, not left to the collector."""
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_idle: dict[str, list[_Server]] = {"torch": [], "gradviz": []}  # servers not running a program now
_idle_lock = threading.Lock()


@atexit.register
def _close_servers() -> None:
    with _idle_lock:
        servers = [s for group in _idle.values() for s in group]
        for group in _idle.values():
            group.clear()
    for srv in servers:
        srv.close()


def _env() -> dict[str, str]:
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")


def _run_on_server(engine: str, program: Path, out: str, cwd: str) -> str:
    """Run on an idle server of this engine (a new one when all are busy: run_both and status --jobs
    run several at once), and put it back for the next program."""
    with _idle_lock:
        live = [s for s in _idle[engine] if s.proc.poll() is None]
        srv = live.pop() if live else None
        _idle[engine] = live
    if srv is None:
        srv = _Server(engine)
    status = srv.run(program, out, cwd)
    with _idle_lock:
        _idle[engine].append(srv)
    return status


def run(name: str, engine: str) -> dict[str, Any]:
    """One program under one engine, in a fresh forked process, in a scratch working directory."""
    with tempfile.TemporaryDirectory(prefix=f"corpus-{name}-") as tmp:
        out = os.path.join(tmp, "result.json")
        t0 = time.perf_counter()
        status = _run_on_server(engine, path_of(name), out, tmp)
        if status == "timeout":
            return {"status": "error", "message": f"timed out after {TIMEOUT_S} s", "records": []}
        if not os.path.exists(out):
            return {"status": "error", "message": f"runner died ({status})", "records": []}
        with open(out) as f:
            result = json.load(f)
        result["seconds"] = round(time.perf_counter() - t0, 2)
        return result


def run_both(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(torch's record, gradviz's record), the two processes run side by side."""
    with ThreadPoolExecutor(2) as pool:
        t = pool.submit(run, name, "torch")
        g = pool.submit(run, name, "gradviz")
        return t.result(), g.result()


def _close(a: float, b: float, scale: float, terms: float = 0.0) -> bool:
    """terms: for a sum, the sum of its terms' magnitudes (abssum): a sum that cancels is only as
    precise as its terms, so its rounding is relative to them, not to the small result."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL * max(1.0, scale) + RTOL * max(abs(a), abs(b), terms)


def _diff_summary(a: dict[str, Any] | None, b: dict[str, Any] | None, what: str, floor: float = 0.0) -> str | None:
    """floor: a magnitude below which differences are float rounding (a gradient that cancels to ~0
    in float32 is compared at the scale of the backward's largest gradient, not its own)."""
    if a is None or b is None:
        return None if a is None and b is None else f"{what}: torch {a and a['shape']} vs gradviz {b and b['shape']}"
    if a["shape"] != b["shape"]:
        return f"{what}: shape {a['shape']} (torch) vs {b['shape']} (gradviz)"
    if a["dtype"] != b["dtype"]:
        return f"{what}: dtype {a['dtype']} (torch) vs {b['dtype']} (gradviz)"
    scale = max(a.get("norm", 0.0), floor, 1e-12)
    for key in ("sum", "abssum", "norm", "min", "max"):
        terms = a.get("abssum", 0.0) if key == "sum" else 0.0
        if key in a and not _close(a[key], b[key], scale, terms):
            return f"{what}: {key} {a[key]!r} (torch) vs {b[key]!r} (gradviz)"
    for i, (x, y) in enumerate(zip(a.get("sample", []), b.get("sample", []))):
        if not _close(x, y, scale):
            return f"{what}: value {i} of the sample {x!r} (torch) vs {y!r} (gradviz)"
    return None


def first_difference(t: dict[str, Any], g: dict[str, Any]) -> str | None:
    """Where gradviz's record first differs from torch's (None: the runs match)."""
    tr, gr = t["records"], g["records"]
    for i, (a, b) in enumerate(zip(tr, gr)):
        at = f"backward {i + 1} ({a['kind']})"
        if a["kind"] != b["kind"]:
            return f"call {i + 1}: {a['kind']} (torch) vs {b['kind']} (gradviz)"
        if a["nodes"] != b["nodes"]:
            j = next((k for k, (x, y) in enumerate(zip(a["nodes"], b["nodes"])) if x != y), None)
            if j is None:
                return f"{at}: {len(a['nodes'])} nodes (torch) vs {len(b['nodes'])} (gradviz)"
            return f"{at}: node {j} is {a['nodes'][j]} (torch) vs {b['nodes'][j]} (gradviz)"
        if a["edges"] != b["edges"]:
            j = next(k for k, (x, y) in enumerate(zip(a["edges"], b["edges"])) if x != y)
            return f"{at}: next_functions of node {j} ({a['nodes'][j]}) {a['edges'][j]} vs {b['edges'][j]}"
        if a["order"] != b["order"]:
            names = a["nodes"]
            j = next((k for k, (x, y) in enumerate(zip(a["order"], b["order"])) if x != y), None)
            if j is None:
                return f"{at}: {len(a['order'])} nodes ran (torch) vs {len(b['order'])} (gradviz)"
            return f"{at}: step {j} of the order ran {names[a['order'][j]]} (torch) vs {names[b['order'][j]]} (gradviz)"
        for k, (x, y) in enumerate(zip(a["roots"], b["roots"])):
            d = _diff_summary(x, y, f"{at}: loss {k}")
            if d:
                return d
        if len(a["grads"]) != len(b["grads"]):
            return f"{at}: {len(a['grads'])} gradients (torch) vs {len(b['grads'])} (gradviz)"
        floor = max((x.get("norm", 0.0) for x in a["grads"] if x), default=0.0)
        for k, (x, y) in enumerate(zip(a["grads"], b["grads"])):
            d = _diff_summary(x, y, f"{at}: gradient of leaf {k}", floor)
            if d:
                return d
    if len(tr) != len(gr):
        return f"{len(tr)} backward calls (torch) vs {len(gr)} (gradviz)"
    return None


def outcome(t: dict[str, Any], g: dict[str, Any]) -> tuple[str, str]:
    """(status, detail) of gradviz's run against torch's: 'match', 'missing' (detail: the first
    missing API), 'error', 'differs' (detail: the first difference), or 'torch-error'."""
    if t["status"] != "ok":
        return "torch-error", t.get("message", "")
    if not t["records"]:
        return "torch-error", "the program ran no backward under torch"
    if g["status"] == "missing":
        return "missing", g["api"]
    if g["status"] == "error":
        d = first_difference(t, g) if g["records"] else None
        return "error", g["message"] + (f" (after: {d})" if d else "")
    d = first_difference(t, g)
    if d and t.get("rng_probe") != g.get("rng_probe"):
        d += " (note: gradviz's random numbers are not torch's yet; if the program draws any, it has other data)"
    return ("differs", d) if d else ("match", "")
