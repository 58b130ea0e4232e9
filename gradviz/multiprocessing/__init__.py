"""torch.multiprocessing: Python's multiprocessing, plus torch's sharing-strategy calls and
``spawn``/``start_processes``. gradviz tensors are numpy arrays: they travel between processes
pickled (copied), not through shared memory as torch's do; the sharing strategy is only kept."""

from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports it
from typing import Any

__all__ = [  # noqa: PLE0604
    "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn", "start_processes",
    "ProcessContext", "ProcessRaisedException", "ProcessExitedException", *multiprocessing.__all__,
]

_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy: str) -> None:
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"{new_strategy!r} is not a sharing strategy: {sorted(_all_sharing_strategies)}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    return set(_all_sharing_strategies)


class ProcessRaisedException(Exception):  # noqa: N818 - torch's name
    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(Exception):  # noqa: N818 - torch's name
    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int) -> None:
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code = error_index, error_pid, exit_code


def _wrap(fn: Any, i: int, args: tuple, error_queue: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - sent to the parent, which raises it as torch does
        error_queue.put(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    def __init__(self, processes: list, error_queues: list) -> None:
        self.processes, self.error_queues = processes, error_queues

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Waits for every process; raises as torch's does for the first that failed."""
        for p in self.processes:
            p.join(timeout)
        for i, (p, q) in enumerate(zip(self.processes, self.error_queues, strict=True)):
            if not q.empty():
                msg = f"\n\n-- Process {i} terminated with the following error:\n" + q.get()
                raise ProcessRaisedException(msg, i, p.pid)
            if p.exitcode not in (0, None):
                raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                                             p.exitcode)
        return all(p.exitcode is not None for p in self.processes)


def start_processes(fn: Any, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    context.join()
    return None


def spawn(fn: Any, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """torch.multiprocessing.spawn: ``fn(i, *args)`` in ``nprocs`` new processes."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
