"""torch.nn.modules.batchnorm: the BatchNorm classes under the module path torch gives them.

gradviz defines them with the other normalizations (normalization.py) and the lazy forms with the
other lazy modules (lazy.py); programs name this path, e.g.
``isinstance(m, torch.nn.modules.batchnorm._BatchNorm)`` in weight initialisers and in
torch.optim.swa_utils.update_bn.
"""

from gradviz.nn.modules.lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, _LazyNormBase
from gradviz.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d", "LazyBatchNorm3d",
           "SyncBatchNorm"]

_private = (_NormBase, _BatchNorm, _LazyNormBase)  # importable names, as torch's module has them
