"""An autouse fixture the distributions tests import: each test starts from torch's default
argument validation (on, as under ``python`` without -O), on both libraries. torch._dynamo
turns torch's off process-wide once any test in the same worker compiles, and the differential
tests compare errors and recorded graphs (the checks' own ops take sequence numbers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import gradviz


@pytest.fixture(autouse=True)
def default_validation() -> Iterator[None]:
    saved = (torch.distributions.Distribution._validate_args, gradviz.distributions.Distribution._validate_args)
    torch.distributions.Distribution.set_default_validate_args(__debug__)
    gradviz.distributions.Distribution.set_default_validate_args(__debug__)
    yield
    torch.distributions.Distribution.set_default_validate_args(saved[0])
    gradviz.distributions.Distribution.set_default_validate_args(saved[1])
