"""torch.func's module helpers: replace_all_batch_norm_modules_ (batch norm without running
statistics, so vmap over a batch-norm model needs no in-place update of shared buffers) and
debug_unwrap (a tensor as seen outside the transforms: gradviz's vmap runs per slice on plain
tensors, so there is nothing wrapped to take off)."""

from __future__ import annotations

from gradviz.nn.modules.module import Module
from gradviz.tensor import Tensor

__all__ = ["debug_unwrap", "replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """In place: every batch-norm module under root keeps no running statistics (torch's)."""
    for module in root.modules():
        if type(module).__name__.startswith(("BatchNorm", "LazyBatchNorm", "SyncBatchNorm")):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """The tensor under the transforms' wrappers: gradviz's are plain tensors already."""
    return tensor


