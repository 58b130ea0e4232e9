"""torch.functional: the module where torch defines einsum, meshgrid, norm, split and unique (each
is the same function as ``gradviz.X``). Programs reach it as ``import torch.functional as F``.
Its other functions (stft, cdist, tensordot, ...) gradviz does not have: asking for one says so."""

from __future__ import annotations

from gradviz import einsum, meshgrid, norm, split, unique

__all__ = ["einsum", "meshgrid", "norm", "split", "unique"]
