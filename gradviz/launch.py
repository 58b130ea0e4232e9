"""``gradviz run --nproc-per-node N``: the ranks of a job launched by torch's own launcher.

Nothing of a launcher is rebuilt here: ``python -m torch.distributed.run`` (torchrun) starts the N
processes, and each one runs ``python -m gradviz run ...`` exactly as
``torchrun --nproc-per-node N -m gradviz run ...`` would. Each rank sees RANK in its environment
and writes its own trace (``output_for_rank``). gradviz exits with torchrun's exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from gradviz.trace.ranks import rank_env, rank_path


def output_for_rank(out: str, env: Mapping[str, str] | None = None) -> str:
    """The trace a process writes: ``out`` itself, or its rank's name inside a distributed job."""
    r = rank_env(env)
    return out if r is None else rank_path(out, r.rank)


def torchrun_argv(nproc: int, run_args: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
    """The torchrun command line that runs ``gradviz run RUN_ARGS`` on ``nproc`` local ranks.

    A rendezvous the caller set up (MASTER_PORT in the environment) is used as given; otherwise
    ``--standalone``: torchrun's own store on a free port of this machine."""
    env = os.environ if env is None else env
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
    port = env.get("MASTER_PORT")
    if port:
        cmd += ["--master-addr", env.get("MASTER_ADDR") or "127.0.0.1", "--master-port", port]
    else:
        cmd += ["--standalone"]
    return [*cmd, "-m", "gradviz", "run", *run_args]


def launch(nproc: int, run_args: Sequence[str]) -> int:
    """Run the ranks; torchrun's exit code (0 when every rank exited 0)."""
    if nproc < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, not {nproc}")
    try:
        return subprocess.call(torchrun_argv(nproc, run_args))
    except KeyboardInterrupt:  # torchrun got the Ctrl-C too and stops its ranks
        return 130
