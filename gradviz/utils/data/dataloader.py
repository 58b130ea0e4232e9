"""torch.utils.data.DataLoader, loading in the calling process.

The iterator draws what torch's draws, in torch's order: a base seed from the loader's generator
when each pass starts (torch draws it even with no workers), then the sampler's own draws on the
first batch. ``num_workers > 0`` loads in-process too (gradviz has no worker processes) and says
so once on stderr; but each batch is fetched as torch's worker would fetch it (``_workers.py``):
batch k by worker k % num_workers, with that worker's own seeded random states, so a dataset that
draws (augmentations) gives torch's batches and leaves the main streams where torch leaves them.
As torch does with workers, the sampler's first indices are drawn when the pass starts
(prefetch_factor * num_workers of them), and persistent workers keep their states across passes.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gradviz.utils.data import _random, _workers
from gradviz.utils.data.collate import default_collate, default_convert
from gradviz.utils.data.dataset import Dataset, IterableDataset
from gradviz.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

_said_in_process = False


def get_worker_info() -> _workers.WorkerInfo | None:
    """Inside a worker's fetch, that worker's WorkerInfo (id, num_workers, seed, dataset); None in
    the main process, as torch's."""
    return _workers.current_info()


def _say_in_process(num_workers: int) -> None:
    global _said_in_process
    if not _said_in_process:
        _said_in_process = True
        print(f"gradviz: DataLoader(num_workers={num_workers}) loads in the main process (gradviz has no worker "
              "processes), each worker's fetches with its own random state; batches and their order are the same",
              file=sys.stderr)


class _InfiniteConstantSampler(Sampler[None]):
    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    _initialized = False

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                                 f"batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called: int | None = None
        self._iterator: _LoaderIter | None = None
        self._initialized = True
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self) -> None:
        """torch's warning when num_workers exceeds the CPUs this process may run on."""
        if not self.num_workers:
            return
        suggest = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            why = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            unchecked = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            why = (f"Our suggested max number of worker in current system is {suggest}{unchecked}, which is smaller "
                   "than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {why} Please be "
                      "aware that excessive worker creation might get DataLoader running slow or even freeze, lower "
                      "the worker number to avoid potential slowness/freeze if necessary.", stacklevel=2)

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers > 0:
            _say_in_process(self.num_workers)
            if self.persistent_workers:  # torch keeps one iterator, and its workers, for every pass
                if self._iterator is None:
                    self.check_worker_number_rationality()
                    self._iterator = _LoaderIter(self)
                else:
                    self._iterator._reset(self)
                return self._iterator
            self.check_worker_number_rationality()
        return _LoaderIter(self)

    def __len__(self) -> int:
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _Fetcher:
    """One worker's (or the main process's) fetches: for an iterable dataset, its own iterator
    over the dataset, made where torch makes it (in the worker, when the worker starts)."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._iterable = loader._iterable
        self._dataset_iter = iter(self._dataset) if self._iterable else None  # type: ignore[call-overload]
        self._ended = False

    def fetch(self, index: Any) -> Any:
        return self._fetch_iterable(index) if self._iterable else self._fetch_map(index)

    def _fetch_map(self, index: Any) -> Any:
        if self._auto_collation:
            getitems = getattr(self._dataset, "__getitems__", None)
            data = getitems(index) if getitems else [self._dataset[i] for i in index]
        else:
            data = self._dataset[index]
        return self._collate_fn(data)

    def _fetch_iterable(self, index: Any) -> Any:
        if self._ended:
            raise StopIteration
        if self._auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self._dataset_iter))  # type: ignore[call-overload]
                except StopIteration:
                    self._ended = True
                    break
            if len(data) == 0 or (self._drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self._dataset_iter)  # type: ignore[call-overload]
        return self._collate_fn(data)


class _LoaderIter:
    """One pass over a DataLoader (torch's _SingleProcessDataLoaderIter), or, with workers, the
    passes of torch's _MultiProcessingDataLoaderIter with each worker's fetches run here."""

    def __init__(self, loader: DataLoader) -> None:
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:  # gradviz has no pinned memory: torch's words for a machine without an accelerator
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._sampler_iter = iter(self._index_sampler)
        # torch draws this seed for worker processes on every pass, workers or not: drawing it
        # keeps the generator's stream where torch's is
        self._base_seed = _random.random_int64(loader.generator)
        self._num_yielded = 0
        if self._num_workers == 0:
            self._fetcher = _Fetcher(loader)
            return
        self._workers = [_workers.Worker(w, self._num_workers, self._base_seed, loader.dataset, loader.worker_init_fn)
                         for w in range(self._num_workers)]
        self._reset(loader, first=True)

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        """A pass starts: the workers' fetchers (made in each worker), the round-robin back at
        worker 0, and the first prefetch_factor * num_workers indices drawn, as torch primes them."""
        if not first:
            self._sampler_iter = iter(self._index_sampler)
            self._num_yielded = 0
        self._fetchers = []
        for w in self._workers:
            with w.active():
                self._fetchers.append(_Fetcher(loader))
        self._active = [True] * self._num_workers
        self._next_worker = 0
        self._queued: deque[Any] = deque()
        for _ in range(loader.prefetch_factor * self._num_workers):  # type: ignore[operator]
            if not self._queue_index():
                break

    def _queue_index(self) -> bool:
        try:
            self._queued.append(next(self._sampler_iter))
        except StopIteration:
            return False
        return True

    def __iter__(self) -> _LoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __next__(self) -> Any:
        if self._num_workers == 0:
            data = self._fetcher.fetch(next(self._sampler_iter))
        else:
            data = self._next_from_workers()
        self._num_yielded += 1
        return data

    def _next_from_workers(self) -> Any:
        while self._queued and any(self._active):
            index = self._queued.popleft()
            self._queue_index()
            while not self._active[self._next_worker]:
                self._next_worker = (self._next_worker + 1) % self._num_workers
            w = self._next_worker
            self._next_worker = (w + 1) % self._num_workers
            try:
                with self._workers[w].active():
                    return self._fetchers[w].fetch(index)
            except StopIteration:  # this worker's copy of an iterable dataset is done; the others go on
                self._active[w] = False
        raise StopIteration
