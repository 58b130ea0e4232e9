"""torch.backends.mkl: whether matrix products go through MKL (gradviz/_blas.py), as torch's CPU
build's do; False where the ``mkl`` package is absent or ``GRADVIZ_BLAS=numpy`` turns it off."""

from __future__ import annotations


def is_available() -> bool:
    from gradviz import _blas

    return _blas.backend() is not None


VERBOSE_OFF = 0
VERBOSE_ON = 1


class verbose:  # noqa: N801 - torch's class name
    """``with torch.backends.mkl.verbose(VERBOSE_ON):`` MKL's call log; gradviz prints none."""

    def __init__(self, enable: int) -> None:
        self.enable = enable

    def __enter__(self) -> verbose:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
