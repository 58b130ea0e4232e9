"""torch.backends for gradviz: the flags real scripts set or read, answering truthfully for an
engine that runs on numpy (no cuDNN, no MPS, no oneDNN, no MKL of its own).

Flags can be set, as torch's can; gradviz's kernels do not change with them.
"""

from __future__ import annotations

from types import SimpleNamespace

from gradviz.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]

opt_einsum = SimpleNamespace(enabled=True, strategy="auto", is_available=lambda: False)
