"""torch.backends for gradviz: the flags real scripts set or read, answering truthfully for an
engine that runs on numpy (no cuDNN, no MPS, no oneDNN, no MKL of its own).

Flags can be set, as torch's can; gradviz's kernels do not change with them.
"""

from __future__ import annotations

from gradviz.backends import (
    cpu,
    cuda,
    cudnn,
    cusparselt,
    kleidiai,
    mha,
    mkl,
    mkldnn,
    mps,
    nnpack,
    openmp,
    opt_einsum,
    quantized,
    xnnpack,
)

__all__ = [
    "cpu", "cuda", "cudnn", "cusparselt", "kleidiai", "mha", "mkl", "mkldnn", "mps", "nnpack", "openmp",
    "opt_einsum", "quantized", "xnnpack",
]
