"""torch.fft without complex dtypes (issue 34's coverage): the real-result transforms of real
inputs with torch's graph (FftC2RBackward0 over ToCopyBackward0 / ConjBackward0), frequencies,
shifts; the complex-result transforms refuse in one line."""

from __future__ import annotations

import pytest
from _fns_diff import check

import gradviz

X = [[1.0, 2.0, 3.0, -0.5], [0.5, -1.0, 2.0, 0.25], [0.1, 0.2, -0.3, 0.4]]


def _x(T, data=X):
    return T.tensor(data, dtype=T.float64, requires_grad=True)


CASES = {
    "irfft": lambda T: T.fft.irfft(_x(T)),
    "irfft n odd": lambda T: T.fft.irfft(_x(T), n=5),
    "irfft n short": lambda T: T.fft.irfft(_x(T), n=4),
    "irfft n long dim 0 ortho": lambda T: T.fft.irfft(_x(T), n=8, dim=0, norm="ortho"),
    "irfft forward": lambda T: T.fft.irfft(_x(T), norm="forward"),
    "hfft": lambda T: T.fft.hfft(_x(T)),
    "hfft n ortho": lambda T: T.fft.hfft(_x(T), n=7, norm="ortho"),
    "hfft forward": lambda T: T.fft.hfft(_x(T), dim=0, norm="forward"),
    "irfft2": lambda T: T.fft.irfft2(_x(T)),
    "irfftn": lambda T: T.fft.irfftn(_x(T)),
    "irfftn s dim": lambda T: T.fft.irfftn(_x(T), s=(4, 5), dim=(0, 1), norm="ortho"),
    "irfft float32": lambda T: T.fft.irfft(T.tensor(X)),
    "fftfreq": lambda T: [T.fft.fftfreq(5), T.fft.fftfreq(6, 0.1, dtype=T.float64)],
    "rfftfreq": lambda T: [T.fft.rfftfreq(5), T.fft.rfftfreq(8, d=2.0)],
    "fftshift": lambda T: T.fft.fftshift(_x(T)),
    "fftshift dim": lambda T: T.fft.fftshift(_x(T), dim=1),
    "ifftshift": lambda T: T.fft.ifftshift(_x(T)),
    "ifftshift dims": lambda T: T.fft.ifftshift(_x(T), dim=(0,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    check(CASES[name], rtol=1e-11 if "float32" not in name else 2e-6, atol=1e-12 if "float32" not in name else 1e-6)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "fft2", "ifftn", "ihfft"])
def test_complex_results_refused_in_one_line(name):
    with pytest.raises(RuntimeError, match=f"gradviz has no complex dtypes: torch.fft.{name} returns a complex"):
        getattr(gradviz.fft, name)(gradviz.ones(4))
