"""torch.fft: the transforms with a real result from a real input (irfft, irfft2, irfftn, hfft),
fftfreq/rfftfreq and fftshift/ifftshift (gradviz/ops/fft_ops.py). gradviz has no complex dtypes:
the transforms whose result is complex say so in one line."""

from __future__ import annotations

from typing import Any

from gradviz.ops.fft_ops import fftfreq, fftshift, hfft, ifftshift, irfft, irfft2, irfftn, rfftfreq
from gradviz.tensor import Tensor

__all__ = ["Tensor", "fftfreq", "fftshift", "hfft", "ifftshift", "irfft", "irfft2", "irfftn", "rfftfreq"]


def _complex_result(name: str) -> Any:
    def op(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"gradviz has no complex dtypes: torch.fft.{name} returns a complex tensor")

    op.__name__ = op.__qualname__ = name
    return op


# torch.fft's transforms whose result is complex: one line saying why gradviz has none
fft, ifft, fft2, ifft2, fftn, ifftn, rfft, rfft2, rfftn, ihfft = (
    _complex_result(n) for n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn", "ihfft"))


# Any other torch name this module lacks: one line naming it (gradviz/_missing.py)
from gradviz._missing import missing_names as _missing_names  # noqa: E402

__getattr__ = _missing_names(__name__)
