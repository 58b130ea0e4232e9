"""The samplers, random_split and the DataLoader draw exactly what torch's draw, call for call:
with a stand-in for gradviz's torch-identical generator (the rng work, not on this branch), which
answers each call (randperm, randint, multinomial, random_, Generator) from torch's own generator,
every shuffle equals torch's. Once gradviz's own generator lands, tests/data/test_data.py's
test_shuffles_equal_torchs checks the same without the stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from test_data import plain  # noqa: I001 - the shared batch-to-plain-data helper

import gradviz
import gradviz.utils.data as gdata


class StandInGenerator:
    """gradviz.Generator as the rng work makes it: here, a torch generator inside."""

    def __init__(self) -> None:
        self.g = torch.Generator()

    def manual_seed(self, seed: int) -> StandInGenerator:
        self.g.manual_seed(seed)
        return self


def _g(generator: Any) -> Any:
    return torch.default_generator if generator is None else generator.g


def _back(t: torch.Tensor) -> Any:
    return gradviz.tensor(t.numpy())


@pytest.fixture
def torch_rng(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(gradviz, "Generator", StandInGenerator, raising=False)
    monkeypatch.setattr(gradviz, "randperm", lambda n, generator=None: _back(
        torch.randperm(n, generator=_g(generator))), raising=False)
    monkeypatch.setattr(gradviz, "randint", lambda high, size, dtype=None, generator=None: _back(
        torch.randint(high=high, size=size, dtype=torch.int64, generator=_g(generator))))
    monkeypatch.setattr(gradviz, "multinomial", lambda w, n, r, generator=None: _back(
        torch.multinomial(torch.from_numpy(np.asarray(w._data)), n, r, generator=_g(generator))), raising=False)
    monkeypatch.setattr(gradviz.Tensor, "random_", lambda self, generator=None: _back(
        torch.empty((), dtype=torch.int64).random_(generator=_g(generator))), raising=False)
    yield


def _gen(T: Any, seed: int) -> Any:
    return (torch.Generator() if T is torch else StandInGenerator()).manual_seed(seed)


PROGRAMS = {
    "shuffled loader, global rng": lambda T, D: [list(D.DataLoader(range(20), batch_size=6, shuffle=True))
                                                 for _ in range(3)],
    "shuffled loader, generator": lambda T, D: [list(D.DataLoader(range(20), batch_size=6, shuffle=True,
                                                                  generator=_gen(T, 5))) for _ in range(2)],
    "shuffled tensor dataset": lambda T, D: list(D.DataLoader(
        D.TensorDataset(T.tensor(np.arange(24.0).reshape(12, 2)), T.tensor(np.arange(12))), batch_size=5,
        shuffle=True, drop_last=True)),
    "random sampler, more samples": lambda T, D: list(D.RandomSampler(range(7), num_samples=23)),
    "random sampler, replacement": lambda T, D: list(D.RandomSampler(range(9), replacement=True, num_samples=75,
                                                                     generator=_gen(T, 3))),
    "subset random": lambda T, D: list(D.SubsetRandomSampler([10, 20, 30, 40, 50], generator=_gen(T, 1))),
    "weighted": lambda T, D: list(D.WeightedRandomSampler([0.1, 0.5, 0.2, 0.2], 12, generator=_gen(T, 4))),
    "weighted, no replacement": lambda T, D: list(D.WeightedRandomSampler([0.1, 0.5, 0.2, 0.2], 3,
                                                                          replacement=False)),
    "random_split": lambda T, D: [list(s) for s in D.random_split(range(17), [0.3, 0.3, 0.4],
                                                                  generator=_gen(T, 42))],
    "random_split, global rng": lambda T, D: [list(s) for s in D.random_split(range(10), [4, 6])],
}


@pytest.mark.parametrize("case", list(PROGRAMS))
def test_draws_equal_torchs(case: str, torch_rng: None) -> None:
    torch.manual_seed(1234)
    want = plain(PROGRAMS[case](torch, tdata))
    torch.manual_seed(1234)  # the stand-in's global generator is torch's
    got = plain(PROGRAMS[case](gradviz, gdata))
    assert got == want
