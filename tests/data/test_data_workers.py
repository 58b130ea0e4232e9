"""DataLoader with num_workers > 0 against torch's worker processes: a dataset that draws from
torch's, Python's and numpy's global generators in __getitem__ (augmentations do) gets torch's
numbers in every batch, worker_init_fn and get_worker_info() see what torch's workers see, an
IterableDataset is iterated once per worker, and the main process's streams afterwards are
torch's (the workers' draws do not move them)."""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from torch.utils.data._utils.worker import WorkerInfo as TorchWorkerInfo

import gradviz
import gradviz.utils.data as gdata
from gradviz.utils.data._workers import WorkerInfo


def _plain(x: Any) -> Any:
    if isinstance(x, (torch.Tensor, gradviz.Tensor)):
        return [round(v, 6) if isinstance(v, float) else v for v in np.asarray(x.tolist()).ravel().tolist()]
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _engine(T: Any) -> tuple[Any, Any]:
    return T, (tdata if T is torch else gdata)


class Draws:
    """A map-style dataset whose items draw from the three global generators, as augmentations do."""

    def __init__(self, T: Any, n: int) -> None:
        self.T, self.D, self.n = T, _engine(T)[1], n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        info = self.D.get_worker_info()
        return {"i": i, "worker": -1 if info is None else info.id, "t": self.T.rand(2),
                "py": random.random(), "np": float(np.random.rand()),
                "seed": -1 if info is None else info.seed % 1000}


class Shards:
    """The torch docs' IterableDataset that splits its range by worker, or not (every worker then
    yields the whole range)."""

    def __init__(self, T: Any, n: int, split: bool) -> None:
        self.T, self.D, self.n, self.split = T, _engine(T)[1], n, split

    def __iter__(self) -> Any:
        info = self.D.get_worker_info()
        lo, hi = 0, self.n
        if self.split and info is not None:
            per = -(-self.n // info.num_workers)
            lo, hi = info.id * per, min(self.n, (info.id + 1) * per)
        for i in range(lo, hi):
            yield [i, float(self.T.rand(()))]


def _iterable_dataset(T: Any, n: int, split: bool) -> Any:
    base = _engine(T)[1].IterableDataset
    cls = type("ShardsDS", (Shards, base), {})
    return cls(T, n, split)


def _seed_numpy_by_worker(worker_id: int) -> None:
    np.random.seed(np.random.get_state()[1][0] + worker_id)


def _run(T: Any, make: Callable[[Any], Any], epochs: int = 1) -> list[Any]:
    T.manual_seed(7)
    random.seed(7)
    np.random.seed(7)
    loader = make(T)
    out = []
    for _ in range(epochs):
        out.append([_plain(b) for b in loader])
    out.append(["after", _plain(T.rand(3)), random.random(), float(np.random.rand())])
    return out


CASES: dict[str, Callable[[Any], Any]] = {
    "2 workers, shuffled": lambda T: _engine(T)[1].DataLoader(Draws(T, 10), batch_size=3, shuffle=True, num_workers=2),
    "3 workers, in order, drop_last": lambda T: _engine(T)[1].DataLoader(Draws(T, 11), batch_size=2, num_workers=3,
                                                                          drop_last=True),
    "1 worker, no batching": lambda T: _engine(T)[1].DataLoader(Draws(T, 4), batch_size=None, num_workers=1),
    "worker_init_fn seeds numpy": lambda T: _engine(T)[1].DataLoader(Draws(T, 8), batch_size=2, shuffle=True,
                                                                      num_workers=2,
                                                                      worker_init_fn=_seed_numpy_by_worker),
    "prefetch_factor 1, own generator": lambda T: _engine(T)[1].DataLoader(
        Draws(T, 9), batch_size=2, shuffle=True, num_workers=2, prefetch_factor=1,
        generator=T.Generator().manual_seed(3)),
    "iterable split by worker": lambda T: _engine(T)[1].DataLoader(_iterable_dataset(T, 7, True), batch_size=2,
                                                                    num_workers=2),
    "iterable not split, drop_last": lambda T: _engine(T)[1].DataLoader(_iterable_dataset(T, 5, False),
                                                                         batch_size=2, num_workers=3, drop_last=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batches_and_streams_equal_torchs(case: str) -> None:
    assert _run(gradviz, CASES[case]) == _run(torch, CASES[case])


@pytest.mark.parametrize("persistent", [False, True])
def test_epochs_equal_torchs(persistent: bool) -> None:
    def make(T: Any) -> Any:
        return _engine(T)[1].DataLoader(Draws(T, 6), batch_size=2, shuffle=True, num_workers=2,
                                        persistent_workers=persistent)

    assert _run(gradviz, make, epochs=2) == _run(torch, make, epochs=2)


def test_worker_info_outside_and_frozen() -> None:
    assert gdata.get_worker_info() is None and tdata.get_worker_info() is None
    g = WorkerInfo(id=1, num_workers=2, seed=5, dataset="d")
    t = TorchWorkerInfo(id=1, num_workers=2, seed=5, dataset="d")
    assert repr(g) == repr(t)
    assert g == WorkerInfo(id=1, num_workers=2, seed=5, dataset="d")
    for info in (g, t):
        with pytest.raises(AttributeError, match="cannot assign to field 'id'"):
            info.id = 3  # type: ignore[misc]


@pytest.mark.parametrize("workers", [1, 64])
def test_too_many_workers_warns_as_torch(workers: int) -> None:
    def warned(D: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            D.DataLoader(list(range(4)), batch_size=2, num_workers=workers)
        return [str(x.message) for x in w]

    assert warned(gdata) == warned(tdata)
