"""torch.utils.data.DistributedSampler: each of ``num_replicas`` processes reads its own share of
the dataset (every num_replicas-th index from ``rank``), shuffled per epoch from ``seed + epoch``
with torch's generator, so each rank sees the indices torch's would. gradviz has no process
group: ``num_replicas`` and ``rank`` must be given (else torch's error without one)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from gradviz.utils.data import _random
from gradviz.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            raise RuntimeError("Requires distributed package to be available")  # gradviz.distributed never is
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)  # the remainder is dropped
        else:
            self.num_samples = math.ceil(n / num_replicas)  # padded with the first indices again
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = _random.randperm(n, _random.new_generator(self.seed + self.epoch))
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            missing = self.total_size - len(indices)
            while missing > 0:
                take = indices[: min(missing, n)]
                indices += take
                missing -= len(take)
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

