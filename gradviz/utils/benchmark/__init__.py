"""torch.utils.benchmark: ``Timer`` and ``Measurement`` over Python's timeit, as torch's
measure (per-run times, median, IQR), and ``Compare`` printing a table of them. gradviz runs on
one thread whatever ``num_threads`` says; there is no Valgrind (``collect_callgrind``)."""

from __future__ import annotations

import statistics
import timeit as _timeit
from collections.abc import Iterable
from typing import Any

__all__ = ["Compare", "Measurement", "Timer"]


class Measurement:
    """The times of ``number_per_run`` runs each: ``times`` per run, ``median``, ``mean``, ``iqr``."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: Any = None, metadata: Any = None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def iqr(self) -> float:
        t = sorted(self.times)
        if len(t) < 2:
            return 0.0
        q = statistics.quantiles(t, n=4)
        return q[2] - q[0]

    def __getattr__(self, name: str) -> Any:  # label, sub_label, description, stmt, num_threads
        spec = self.__dict__.get("task_spec")
        if spec is not None and name in spec:
            return spec[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        spec = self.task_spec or {}
        head = "\n".join(str(spec[k]) for k in ("label", "sub_label", "description") if spec.get(k))
        return (f"<gradviz.utils.benchmark.Measurement object at {id(self):#x}>\n{head + chr(10) if head else ''}"
                f"{spec.get('stmt', '')}\n  Median: {self.median * 1e6:.2f} us\n  IQR: {self.iqr * 1e6:.2f} us "
                f"({len(self.times)} measurements, {self.number_per_run} runs per measurement, "
                f"{spec.get('num_threads', 1)} thread)")


class Timer:
    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer: Any = None,
                 globals: dict | None = None, label: str | None = None, sub_label: str | None = None,  # noqa: A002
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: str = "python") -> None:
        if language != "python":
            raise ValueError("gradviz's Timer runs Python statements only (language='python')")
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer or _timeit.default_timer,
                                    globals=globals)
        self._spec = {"stmt": stmt, "setup": setup, "label": label, "sub_label": sub_label,
                      "description": description, "env": env, "num_threads": num_threads}

    def timeit(self, number: int = 1000000) -> Measurement:
        self._timer.timeit(number=max(1, number // 100))  # warm up, as torch's does
        return Measurement(number, [self._timer.timeit(number=number)], dict(self._spec))

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("torch.utils.benchmark.Timer.repeat is not implemented in torch either")

    def _autorange(self, min_run_time: float, max_runs: int | None = None) -> Measurement:
        number = 1
        while True:  # a block size that takes at least 0.1 ms, as torch picks
            t = self._timer.timeit(number=number)
            if t >= 1e-4 or number >= 1 << 20:
                break
            number *= 10
        times, total = [], 0.0
        while total < min_run_time or len(times) < 3:
            t = self._timer.timeit(number=number)
            times.append(t)
            total += t
            if max_runs is not None and len(times) >= max_runs:
                break
        return Measurement(number, times, dict(self._spec))

    def blocked_autorange(self, callback: Any = None, min_run_time: float = 0.2) -> Measurement:
        return self._autorange(min_run_time)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Any = None) -> Measurement:
        m = self._autorange(min_run_time)
        while sum(m.raw_times) < max_run_time and m.median and m.iqr / m.median > threshold:
            more = self._autorange(min_run_time)
            m = Measurement(m.number_per_run if m.number_per_run == more.number_per_run else 1,
                            m.raw_times + more.raw_times if m.number_per_run == more.number_per_run
                            else m.times + more.times, m.task_spec)
        return m


class Compare:
    """Measurements as a table: rows by sub_label (or stmt), columns by description."""

    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results = list(results)

    def __str__(self) -> str:
        rows: dict[str, dict[str, float]] = {}
        cols: list[str] = []
        for m in self._results:
            spec = m.task_spec or {}
            row = spec.get("sub_label") or spec.get("stmt") or ""
            col = spec.get("description") or ""
            if col not in cols:
                cols.append(col)
            rows.setdefault(row, {})[col] = m.median * 1e6
        width = max([len(r) for r in rows] + [4])
        lines = ["  ".join([" " * width, *(f"{c:>12}" for c in cols)])]
        for r, vals in rows.items():
            lines.append("  ".join([f"{r:<{width}}", *(f"{vals[c]:>12.1f}" if c in vals else " " * 12 for c in cols)]))
        return "\n".join(lines) + "\n\nTimes are in microseconds (us)."

    def print(self) -> None:
        print(str(self))
