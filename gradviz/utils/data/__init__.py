"""gradviz.utils.data: torch.utils.data's datasets, samplers and DataLoader."""

from gradviz.utils.data.collate import default_collate, default_convert
from gradviz.utils.data.dataloader import DataLoader, get_worker_info
from gradviz.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from gradviz.utils.data.distributed import DistributedSampler
from gradviz.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "default_collate", "default_convert",
           "get_worker_info", "DistributedSampler"]


# A torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
