"""torch's remaining constructors against torch 2.13: scalar_tensor, the deprecated range,
empty_strided and empty_permuted (values, dtypes, sizes, strides, warnings, errors) (coverage2)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz


def _describe(T: Any, fn: Callable[[Any], Any]) -> tuple:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t = fn(T)
            out: Any = (str(t.dtype), tuple(t.shape), t.stride(), t.requires_grad, t.is_contiguous())
            if not fn.__name__.startswith("_empty"):
                out += (t.tolist(),)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            out = (type(e).__name__, str(e))
    return out, [(w.category.__name__, str(w.message)) for w in caught]


def _empty(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    fn.__name__ = "_empty"
    return fn


CASES: dict[str, Callable[[Any], Any]] = {
    "scalar_int": lambda T: T.scalar_tensor(3),
    "scalar_bool": lambda T: T.scalar_tensor(True),
    "scalar_float_dtype": lambda T: T.scalar_tensor(2.5, dtype=T.float64),
    "scalar_int_dtype": lambda T: T.scalar_tensor(7, dtype=T.int32),
    "scalar_grad": lambda T: T.scalar_tensor(1.5, requires_grad=True),
    "range": lambda T: T.range(1, 4),
    "range_step": lambda T: T.range(0, 1, 0.3),
    "range_half_step": lambda T: T.range(1, 2.5, 0.5),
    "range_negative": lambda T: T.range(3, -2, -1.5),
    "range_int64": lambda T: T.range(1, 4, dtype=T.int64),
    "range_double": lambda T: T.range(0, 0.9, 0.1, dtype=T.float64),
    "range_zero_step": lambda T: T.range(0, 1, 0),
    "range_sign": lambda T: T.range(0, -1),
    "range_one_arg": lambda T: T.range(5),
    "strided": _empty(lambda T: T.empty_strided((2, 3), (1, 2))),
    "strided_contiguous": _empty(lambda T: T.empty_strided((2, 3, 4), (12, 4, 1), dtype=T.float64)),
    "strided_gaps": _empty(lambda T: T.empty_strided([3, 2], [5, 2], dtype=T.int64, requires_grad=False)),
    "strided_zero_size": _empty(lambda T: T.empty_strided((0, 3), (3, 1))),
    "strided_grad": _empty(lambda T: T.empty_strided((2, 2), (1, 2), requires_grad=True)),
    "strided_mismatch": _empty(lambda T: T.empty_strided((2, 3), (1,))),
    "strided_negative": _empty(lambda T: T.empty_strided((2, -3), (1, 2))),
    "permuted": _empty(lambda T: T.empty_permuted((2, 3, 4), (0, 2, 1))),
    "permuted_channels_last": _empty(lambda T: T.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1), dtype=T.float16)),
    "permuted_identity": _empty(lambda T: T.empty_permuted((2, 3), (0, 1))),
    "permuted_duplicate": _empty(lambda T: T.empty_permuted((2, 3), (0, 0))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_constructor_matches_torch(name: str) -> None:
    ours, theirs = _describe(gradviz, CASES[name]), _describe(torch, CASES[name])
    if ours[0][0] == "TypeError" and theirs[0][0] == "TypeError":
        return  # a missing argument: each binding words it its own way
    assert ours == theirs


def test_empty_strided_writes_land_where_its_strides_say() -> None:
    for T in (torch, gradviz):
        t = T.empty_strided((2, 3), (1, 2))
        t.copy_(T.arange(6.0).reshape(2, 3))
        assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert t.t().is_contiguous()


def _from_file_program(T: Any, path: str) -> list:
    import numpy as np

    with open(path, "wb") as f:
        f.write(np.arange(4, dtype=np.float32).tobytes())
    seen: list = []
    for call in (lambda: T.from_file(path, size=4), lambda: T.from_file(path, size=2, dtype=T.float32),
                 lambda: T.from_file(path), lambda: T.from_file(path, size=8, dtype=T.int16),
                 lambda: T.from_file(path, size=5), lambda: T.from_file(path + ".missing", size=1)):
        try:
            t = call()
            seen.append((str(t.dtype), t.tolist()))
        except RuntimeError as e:
            seen.append(str(e).replace(path, "PATH"))
    shared = T.from_file(path, shared=True, size=4)
    shared[0] = 9.0
    private = T.from_file(path, shared=False, size=4)
    private[1] = 7.0
    seen.append(T.from_file(path, size=4).tolist())
    del shared
    return seen


def test_from_file_matches_torch(tmp_path: Any) -> None:
    ours = _from_file_program(gradviz, str(tmp_path / "g.bin"))
    theirs = _from_file_program(torch, str(tmp_path / "t.bin"))
    assert ours == theirs


def test_grad_scaler_is_amp_grad_scaler() -> None:
    assert gradviz.GradScaler is gradviz.amp.GradScaler
    assert torch.GradScaler is torch.amp.GradScaler
