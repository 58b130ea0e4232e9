"""torch.backends.mkl: whether matrix products go through MKL (gradviz/_blas.py), as torch's CPU
build's do; False where the ``mkl`` package is absent or ``GRADVIZ_BLAS=numpy`` turns it off."""


def is_available() -> bool:
    from gradviz import _blas

    return _blas.backend() is not None
