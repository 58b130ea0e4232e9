"""Launching a job of ranks for the distributed tests: loopback only, a free port each time."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(port: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port or free_port()), OMP_NUM_THREADS="1",
               GLOO_SOCKET_IFNAME="lo", PYTHONPATH=str(ROOT))
    return env


# gloo tearing a rank down while its peer is still closing its side aborts it now and then, with
# or without recording (std::terminate in a gloo thread): such a job is run again, twice at most
_TEARDOWN = "terminate called without an active exception"


def sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    for _ in range(2):  # seen twice in a row on a loaded 2-core CI machine
        if p.returncode == 0 or _TEARDOWN not in p.stderr:
            break
        if "MASTER_PORT" in env and "--master-port" in cmd:  # a fresh port: the old one may linger
            port = str(free_port())
            cmd = [port if a == env["MASTER_PORT"] else a for a in cmd]
            env = {**env, "MASTER_PORT": port}
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    return p


def checksums(out: str) -> dict[str, str]:
    return dict(re.findall(r"rank (\d+) checksum (-?0x[0-9a-f.]+p[+-]\d+)", out))


def torchrun(nproc: int, port: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
            "--master-addr", "127.0.0.1", "--master-port", str(port)]
