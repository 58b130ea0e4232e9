"""torch.set_printoptions changes gradviz's tensor printing as it changes torch's: each setting
prints a few tensors on both and the text must be identical (coverage2, issue 34)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import gradviz


@pytest.fixture(autouse=True)
def _default_options() -> Iterator[None]:
    yield
    for T in (torch, gradviz):
        T.set_printoptions(profile="default", sci_mode=None)


def _tensors(T: Any) -> list:
    rng = np.random.default_rng(1)
    return [
        T.tensor(rng.standard_normal(5), dtype=T.float32),
        T.tensor([1.0, 2.0, 3.0]),
        T.tensor([1e-5, 1.0, 300.0], dtype=T.float64),
        T.arange(2000.0).reshape(40, 50) / 7,
        T.arange(30).reshape(5, 6),
        T.tensor(rng.standard_normal((3, 12)), requires_grad=True),
        T.tensor([0.0, 0.0]),
        T.tensor(3.14159265),
        T.arange(12.0) * 1e9,
    ]


SETTINGS = [
    {"precision": 2},
    {"precision": 8},
    {"threshold": 10},
    {"threshold": 10, "edgeitems": 1},
    {"edgeitems": 5, "threshold": 20},
    {"linewidth": 40},
    {"linewidth": 200},
    {"sci_mode": True},
    {"sci_mode": False},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "precision": 6},
    {"profile": "nonsense"},
]


@pytest.mark.parametrize("options", SETTINGS, ids=[str(s) for s in SETTINGS])
def test_printing_follows_the_options_as_torch(options: dict) -> None:
    torch.set_printoptions(**options)
    gradviz.set_printoptions(**options)
    for ours, theirs in zip(_tensors(gradviz), _tensors(torch), strict=True):
        assert str(ours) == str(theirs)


def test_a_later_call_keeps_what_it_does_not_name_and_resets_sci_mode() -> None:
    for T in (torch, gradviz):
        T.set_printoptions(precision=2, sci_mode=True)
        T.set_printoptions(linewidth=60)
    for ours, theirs in zip(_tensors(gradviz), _tensors(torch), strict=True):
        assert str(ours) == str(theirs)
